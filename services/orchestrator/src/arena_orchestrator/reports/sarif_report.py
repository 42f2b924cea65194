"""The SARIF 2.1.0 report: one result per successful attack, for code-scanning dashboards.

Each objective of the campaign is a rule (``ruleId`` = the objective's label: its
catalogue id, or its name), with its title, what success means, its OWASP categories as
tags and the first category's OWASP page as ``helpUri``. Each match the attacker won is a
result at level ``error``, located at the defender (a logical location named after it,
and its URL), with the attacker, the turns it took, the match id as a fingerprint, and the
trace link when there is one. Defences, errors and refusals are not results: SARIF lists
findings. The run's ``properties`` carry every per-category rate, so a dashboard that
reads only SARIF still sees how much was tried.

A campaign's protocol-probe runs (``probes:``) add a rule per check that ran
(``a2a-probe/<check id>``, its level and ``security-severity`` from the check's severity) and
a result per finding, at the finding's own severity, located at the interface it was seen
on (or the defender's URL for the card), with the remediation in its properties. The run's
``properties.protocolProbes`` give each defender's findings per severity and verdict.

Validated against the OASIS SARIF 2.1.0 schema (errata 01) in the tests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from arena_core.owasp import OWASP_CATEGORIES
from arena_core.probes.model import Finding, Severity
from arena_orchestrator.campaign_models import CampaignReport
from arena_orchestrator.campaign_spec import OVER_REFUSAL, PROTOCOL_PROBES

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


PROBE_RULE_PREFIX = "a2a-probe/"
_PROBE_LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}
_SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MEDIUM: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}
"""A rule's ``properties.security-severity``: the CVSS-like score code scanning sorts by."""
_MAX_MESSAGE_CHARS = 2000


def _probe_rules(report: CampaignReport) -> list[dict[str, Any]]:
    """A rule per protocol-probe check that ran in some run, in the order first seen."""
    rules: dict[str, dict[str, Any]] = {}
    for run in report.protocol_probe_runs:
        if run.probe_report is None:
            continue
        for result in run.probe_report.results:
            rule_id = PROBE_RULE_PREFIX + result.check_id
            if rule_id in rules:
                continue
            rule: dict[str, Any] = {
                "id": rule_id,
                "name": result.title,
                "shortDescription": {"text": result.title},
                "defaultConfiguration": {"level": _PROBE_LEVEL[result.severity]},
                "properties": {
                    "tags": ["security", "a2a", "protocol", result.category],
                    "security-severity": _SECURITY_SEVERITY[result.severity],
                    "severity": result.severity.value,
                },
            }
            if result.findings:
                rule["help"] = {"text": result.findings[0].remediation[:_MAX_MESSAGE_CHARS]}
            rules[rule_id] = rule
    return list(rules.values())


def _interface_uri(finding: Finding, default: str) -> str:
    """The URL a finding names (``1.0 JSONRPC http://host/``: its last word), else ``default``."""
    if finding.interface:
        last = finding.interface.rsplit(" ", 1)[-1]
        if last.startswith(("http://", "https://")):
            return last
    return default


def _probe_results(report: CampaignReport, rule_index: dict[str, int]) -> list[dict[str, Any]]:
    """A result per protocol-probe finding."""
    urls = {defender.name: defender.url for defender in report.campaign.spec.defenders}
    results = []
    for run in report.protocol_probe_runs:
        if run.probe_report is None:
            continue
        for finding in run.probe_report.findings:
            rule_id = PROBE_RULE_PREFIX + finding.check_id
            where = _interface_uri(finding, urls.get(run.defender, run.probe_report.target))
            text = f"{finding.title} ({finding.severity.value}): {finding.detail}"
            key = "\n".join((run.defender, finding.check_id, finding.interface or "", finding.detail))
            result: dict[str, Any] = {
                "ruleId": rule_id,
                "ruleIndex": rule_index.get(rule_id, -1),
                "level": _PROBE_LEVEL[finding.severity],
                "message": {"text": text[:_MAX_MESSAGE_CHARS]},
                "locations": [
                    {
                        "physicalLocation": {"artifactLocation": {"uri": where}},
                        "logicalLocations": [{"name": run.defender, "kind": "module"}],
                    }
                ],
                "partialFingerprints": {
                    "arenaProbe/v1": hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:32]
                },
                "properties": {
                    "defender": run.defender,
                    "checkId": finding.check_id,
                    "severity": finding.severity.value,
                    "interface": finding.interface,
                    "matchId": run.match_id,
                    "remediation": finding.remediation[:_MAX_MESSAGE_CHARS],
                },
            }
            if result["ruleIndex"] < 0:
                del result["ruleIndex"]
            results.append(result)
    return results


def render_sarif(report: CampaignReport) -> str:
    """``report`` as a SARIF 2.1.0 log (indented JSON)."""
    spec = report.campaign.spec
    rules = _rules(report) + _probe_rules(report)
    rule_index = {rule["id"]: index for index, rule in enumerate(rules)}
    urls = {defender.name: defender.url for defender in spec.defenders}
    results = []
    for match in report.matches:
        if match.outcome != "attacker_won" or match.cell.attacker in (OVER_REFUSAL, PROTOCOL_PROBES):
            # Findings only: an answered over-refusal probe is not one, and protocol probes
            # give a result per finding (below).
            continue
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
    results += _probe_results(report, rule_index)
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
                    "protocolProbes": [
                        {
                            "defender": p.defender,
                            "failOn": p.fail_on.value,
                            "findings": p.findings,
                            "worst": p.worst.value if p.worst else None,
                            "erroredChecks": p.errored_checks,
                            "failed": p.failed,
                        }
                        for p in progress.protocol_probes
                    ],
                },
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


__all__ = ["PROBE_RULE_PREFIX", "SARIF_MEDIA_TYPE", "render_sarif"]
