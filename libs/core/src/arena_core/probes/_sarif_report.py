"""The probe report as a SARIF 2.1.0 log (:func:`to_sarif`), for code-scanning dashboards.

Every check of the catalogue is a rule (``id``, its title as ``shortDescription``, its
description as ``fullDescription``, its remediation as ``help``, and
``properties.security-severity``, the score code scanning sorts by). Every finding is a result:
its level follows its severity (``error`` for high and critical, ``warning`` for medium,
``note`` below), located at the interface it was seen on (the card for a finding about the
card) as an artifact URL and a logical location, with a fingerprint that is stable across runs.
The invocation is unsuccessful when a check broke; each broken check and an early stop is a
tool notification. Validated against the OASIS SARIF 2.1.0 schema in the tests.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from arena_core.probes._report_text import WHOLE_AGENT, interface_url, utc
from arena_core.probes.base import CheckDef
from arena_core.probes.model import Finding, ProbeReport, Severity
from arena_core.probes.runner import catalogue

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "arena probe"
TOOL_URI = "https://github.com/a2a-arena/a2a-arena"
SECURITY_SEVERITY: dict[Severity, float] = {
    Severity.CRITICAL: 9.5,
    Severity.HIGH: 8.0,
    Severity.MEDIUM: 5.5,
    Severity.LOW: 3.0,
    Severity.INFO: 0.0,
}
"""A rule's ``properties.security-severity``, by the severity of what its check looks for."""


def level(severity: Severity) -> str:
    """The SARIF level of a finding of ``severity``."""
    if severity >= Severity.HIGH:
        return "error"
    return "warning" if severity == Severity.MEDIUM else "note"


def _rule(
    check_id: str, title: str, severity: Severity, description: str, remediation: str
) -> dict[str, Any]:
    return {
        "id": check_id,
        "name": check_id,
        "shortDescription": {"text": title},
        "fullDescription": {"text": description or title},
        "help": {"text": remediation or title},
        "defaultConfiguration": {"level": level(severity)},
        "properties": {"security-severity": SECURITY_SEVERITY[severity], "tags": ["security"]},
    }


def _rules(report: ProbeReport, checks: list[CheckDef]) -> list[dict[str, Any]]:
    """Every check of the catalogue, then any check of the report the catalogue does not know
    (a report written by another version)."""
    rules = [_rule(d.id, d.title, d.severity, d.description, d.remediation) for d in checks]
    known = {d.id for d in checks}
    for result in report.results:
        if result.check_id not in known:
            known.add(result.check_id)
            remediation = result.findings[0].remediation if result.findings else ""
            rules.append(_rule(result.check_id, result.title, result.severity, "", remediation))
    return rules


def _fingerprint(finding: Finding, seen: dict[str, int]) -> str:
    """The check, where and what, numbered (not the detail: it may quote the run's random ids)."""
    what = f"{finding.check_id}\n{finding.interface or ''}\n{finding.title}"
    key = hashlib.sha256(what.encode()).hexdigest()[:32]
    seen[key] = seen.get(key, 0) + 1
    return f"{key}:{seen[key]}"


def _result(
    report: ProbeReport, finding: Finding, index: dict[str, int], seen: dict[str, int]
) -> dict[str, Any]:
    where = finding.interface or WHOLE_AGENT
    result: dict[str, Any] = {
        "ruleId": finding.check_id,
        "level": level(finding.severity),
        "message": {"text": f"{finding.title} ({where}): {finding.detail}"},
        "locations": [
            {
                "physicalLocation": {"artifactLocation": {"uri": interface_url(report, finding.interface)}},
                "logicalLocations": [{"name": where, "kind": "resource"}],
            }
        ],
        "partialFingerprints": {"arenaProbe/v1": _fingerprint(finding, seen)},
        "properties": {
            "severity": finding.severity.value,
            "remediation": finding.remediation,
            "evidence": [evidence.model_dump() for evidence in finding.evidence],
        },
    }
    if finding.check_id in index:
        result["ruleIndex"] = index[finding.check_id]
    return result


def _invocation(report: ProbeReport) -> dict[str, Any]:
    notifications: list[dict[str, Any]] = [
        {
            "level": "error",
            "message": {"text": f"{r.check_id}: {r.reason or 'the check broke'}"},
            "descriptor": {"id": r.check_id},
        }
        for r in report.errored()
    ]
    if report.stopped:
        notifications.append(
            {"level": "warning", "message": {"text": f"the run stopped early: {report.stopped}"}}
        )
    invocation: dict[str, Any] = {
        "executionSuccessful": not report.errored(),
        "startTimeUtc": utc(report.started_at).isoformat().replace("+00:00", "Z"),
        "endTimeUtc": utc(report.finished_at).isoformat().replace("+00:00", "Z"),
    }
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    return invocation


def to_sarif(report: ProbeReport) -> str:
    """The report as a SARIF 2.1.0 log (indented JSON): see the module doc."""
    rules = _rules(report, catalogue())
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    seen: dict[str, int] = {}
    log = {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA_URI,
        "runs": [
            {
                "tool": {"driver": {"name": TOOL_NAME, "informationUri": TOOL_URI, "rules": rules}},
                "invocations": [_invocation(report)],
                "results": [_result(report, finding, index, seen) for finding in report.findings],
                "properties": {
                    "target": report.target,
                    "agentName": report.agent_name,
                    "requests": report.requests,
                    "stopped": report.stopped,
                    "interfaces": [i.model_dump() for i in report.interfaces],
                    "checks": {r.check_id: r.status for r in report.results},
                },
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


__all__ = ["SARIF_SCHEMA_URI", "SECURITY_SEVERITY", "TOOL_NAME", "level", "to_sarif"]
