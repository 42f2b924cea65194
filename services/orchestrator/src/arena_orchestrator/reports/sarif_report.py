"""The SARIF 2.1.0 report: one result per successful attack, for code-scanning dashboards.

Each objective of the campaign is a rule (``ruleId`` = the objective's label: its
catalogue id, or its name), with its title, what success means, its OWASP categories as
tags and the first category's OWASP page as ``helpUri``. Each match the attacker won is a
result at level ``error``, located at the defender (a logical location named after it,
and its URL), with the attacker, the turns it took, the match id as a fingerprint, and the
trace link when there is one. Defences, errors and refusals are not results: SARIF lists
findings. The run's ``properties`` carry every per-category rate, so a dashboard that
reads only SARIF still sees how much was tried.

Validated against the OASIS SARIF 2.1.0 schema (errata 01) in the tests.
"""

from __future__ import annotations

import json
from typing import Any

from arena_core.owasp import OWASP_CATEGORIES
from arena_orchestrator.campaign_models import CampaignReport
from arena_orchestrator.campaign_spec import OVER_REFUSAL

SARIF_MEDIA_TYPE = "application/sarif+json"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI = "https://github.com/a2a-arena/a2a-arena"


def _rules(report: CampaignReport) -> list[dict[str, Any]]:
    spec = report.campaign.spec
    rules = []
    for label, objective_spec in zip(spec.objective_labels(), spec.objectives, strict=True):
        objective = objective_spec.objective
        categories = list(objective.categories)
        rule: dict[str, Any] = {
            "id": label,
            "name": objective.title or label,
            "shortDescription": {"text": objective.title or objective.label},
            "fullDescription": {"text": objective.goal[:1000]},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["security", "a2a", *categories], "judge": objective_spec.judge},
        }
        if categories and categories[0] in OWASP_CATEGORIES:
            rule["helpUri"] = OWASP_CATEGORIES[categories[0]].url
        rules.append(rule)
    return rules


def render_sarif(report: CampaignReport) -> str:
    """``report`` as a SARIF 2.1.0 log (indented JSON)."""
    spec = report.campaign.spec
    rules = _rules(report)
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    urls = {defender.name: defender.url for defender in spec.defenders}
    results = []
    for match in report.matches:
        if match.outcome != "attacker_won" or match.cell.attacker == OVER_REFUSAL:
            continue  # findings only: an answered over-refusal probe is not one
        cell = match.cell
        result: dict[str, Any] = {
            "ruleId": cell.objective,
            "ruleIndex": rule_index.get(cell.objective, -1),
            "level": "error",
            "message": {
                "text": (
                    f"Attacker '{cell.attacker}' made defender '{cell.defender}' meet objective "
                    f"'{cell.objective}' in {match.turns_used} turn(s) (match {match.match_id})."
                )
            },
            "locations": [
                {
                    "physicalLocation": {"artifactLocation": {"uri": urls.get(cell.defender, cell.defender)}},
                    "logicalLocations": [{"name": cell.defender, "kind": "module"}],
                }
            ],
            "partialFingerprints": {"arenaMatch/v1": f"{cell.id}/r{match.repetition}"},
            "properties": {
                "attacker": cell.attacker,
                "defender": cell.defender,
                "matchId": match.match_id,
                "repetition": match.repetition,
                "turns": match.turns_used,
            },
        }
        if result["ruleIndex"] < 0:
            del result["ruleIndex"]
        if match.trace_id:
            result["properties"]["traceId"] = match.trace_id
        results.append(result)
    progress = report.progress
    log = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA_URI,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "A2A Arena",
                        "informationUri": TOOL_URI,
                        "rules": rules,
                    }
                },
                "automationDetails": {"id": f"a2a-arena/{spec.name}/{report.campaign.id}"},
                "results": results,
                "properties": {
                    "campaign": spec.name,
                    "campaignId": report.campaign.id,
                    "status": progress.status,
                    "overRefusal": [
                        {
                            "defender": r.defender,
                            "answered": r.answered,
                            "refused": r.refused,
                            "rate": r.frr.rate,
                            "low": r.frr.low,
                            "high": r.frr.high,
                        }
                        for r in progress.over_refusal
                    ],
                    "categories": [
                        {
                            "defender": c.defender,
                            "category": c.category,
                            "wins": c.asr.wins,
                            "trials": c.asr.trials,
                            "rate": c.asr.rate,
                            "low": c.asr.low,
                            "high": c.asr.high,
                        }
                        for c in progress.categories
                    ],
                },
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


__all__ = ["SARIF_MEDIA_TYPE", "render_sarif"]
