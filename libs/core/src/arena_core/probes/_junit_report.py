"""The probe report as JUnit XML (:func:`to_junit`), for CI.

Valid against the Jenkins xunit plugin's ``junit-10.xsd`` (as the campaign report,
:mod:`arena_orchestrator.reports.junit_report`)::

    <testsuites name="arena-probe" tests failures errors time>
      <testsuite name="arena-probe" tests failures errors skipped time timestamp>
        <properties>target, agent, requests, interfaces, findings per severity</properties>
        <testcase classname="probe.<category>" name="<check id>" time>
          <failure type="probe.<worst severity>">every finding</failure> | <skipped message=reason/>
            | <error type="probe.check_error" message=reason/>   (at most one; none for a pass)
          <system-out>title, status, requests, reason</system-out>

A check with any finding fails, whatever its severity: ``--fail-on`` decides the exit code, not
the test cases. ElementTree escapes the markup; characters XML 1.0 cannot hold become ``\\xNN``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from arena_core.probes._report_text import WHOLE_AGENT, run_seconds, utc
from arena_core.probes.model import CheckResult, Finding, ProbeReport

SUITE = "arena-probe"

# Characters XML 1.0 cannot carry at all, even escaped (control characters, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: object) -> str:
    """``text`` as a string XML 1.0 can hold: forbidden characters become ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def _finding_text(finding: Finding) -> str:
    lines = [
        f"[{finding.severity.value.upper()}] {finding.title}",
        f"where: {finding.interface or WHOLE_AGENT}",
        f"detail: {finding.detail}",
    ]
    for number, evidence in enumerate(finding.evidence, start=1):
        lines += [f"evidence {number}, request:", evidence.request, "response:", evidence.response]
    lines.append(f"remediation: {finding.remediation}")
    return "\n".join(lines)


def _case(result: CheckResult, suite: ET.Element) -> None:
    attributes = {
        "classname": _x(f"probe.{result.category}"),
        "name": _x(result.check_id),
        "time": f"{result.duration_s:.3f}",
    }
    case = ET.SubElement(suite, "testcase", attributes)
    if result.status == "failed":
        worst = max((finding.severity for finding in result.findings), default=result.severity)
        message = f"{len(result.findings)} finding(s), worst {worst.value}: {result.title}"
        failure = ET.SubElement(case, "failure", {"type": f"probe.{worst.value}", "message": _x(message)})
        failure.text = _x("\n\n".join(_finding_text(finding) for finding in result.findings))
    elif result.status == "skipped":
        ET.SubElement(case, "skipped", {"message": _x(result.reason or "skipped")})
    elif result.status == "error":
        reason = _x(result.reason or "the check broke")
        error = ET.SubElement(case, "error", {"type": "probe.check_error", "message": reason})
        error.text = reason
    out = ET.SubElement(case, "system-out")
    out.text = _x(
        f"{result.title}\nseverity looked for: {result.severity.value}\nstatus: {result.status}\n"
        f"requests: {result.requests}\n" + (f"reason: {result.reason}\n" if result.reason else "")
    )


def to_junit(report: ProbeReport) -> str:
    """The report as JUnit XML (UTF-8 text with an XML declaration): see the module doc."""
    root = ET.Element("testsuites", {"name": SUITE})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE})
    properties = ET.SubElement(suite, "properties")
    values: list[tuple[str, object]] = [
        ("probe.target", report.target),
        ("probe.agent", report.agent_name or ""),
        ("probe.requests", report.requests),
        ("probe.identities", report.identities),
        ("probe.stopped", report.stopped or ""),
        *(("probe.interface", f"{i.protocol_version} {i.binding} {i.url}") for i in report.interfaces),
        *((f"probe.findings.{name}", count) for name, count in report.counts().items()),
    ]
    for name, value in values:
        ET.SubElement(properties, "property", {"name": name, "value": _x(value)})
    for result in report.results:
        _case(result, suite)
    statuses = [result.status for result in report.results]
    tallies = {
        "tests": str(len(statuses)),
        "failures": str(statuses.count("failed")),
        "errors": str(statuses.count("error")),
        "time": f"{run_seconds(report):.3f}",
    }
    suite.attrib.update(
        {
            **tallies,
            "skipped": str(statuses.count("skipped")),
            "timestamp": utc(report.started_at).strftime("%Y-%m-%dT%H:%M:%S"),
        }
    )
    root.attrib.update(tallies)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["SUITE", "to_junit"]
