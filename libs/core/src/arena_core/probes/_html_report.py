"""The probe report as one self-contained HTML page (:func:`to_html`).

Every value from the report goes through :func:`html.escape` after its control characters are
made visible: the target's name, answers and the details quoting them are hostile text. The page
loads nothing and runs nothing: a Content-Security-Policy ``<meta>`` forbids scripts and every
load, the style sheet is inline, and an empty ``data:`` favicon stops the ``/favicon.ico`` request.
Key numbers carry ``data-testid`` attributes: ``count-<severity>``, ``check-<id>``, ``finding-<id>``.
"""

from __future__ import annotations

import html

from arena_core.probes._report_text import WHOLE_AGENT, run_seconds, utc, visible, worst_first
from arena_core.probes.model import Finding, ProbeReport, Severity

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f4f4f6}td.n{text-align:right}
.badge{display:inline-block;padding:0 .5em;border-radius:.3em;font-weight:600;font-size:.85em;color:#fff}
.critical{background:#7a0010}.high{background:#c62828}.medium{background:#e08a00}.low{background:#1f6fb2}
.info{background:#6b6b73}.passed{color:#1b7f3b}.failed{color:#c62828;font-weight:600}.skipped{color:#6b6b73}
.error{color:#8e24aa;font-weight:600}article{border:1px solid #ddd;border-radius:.4em;padding:.3em 1em;
margin:1em 0}pre{background:#f6f6f8;padding:.6em;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.meta{color:#555}
"""


def _e(text: object) -> str:
    """``text`` escaped for HTML content and quoted attributes."""
    return html.escape(visible(text), quote=True)


def _summary(report: ProbeReport) -> list[str]:
    counts = report.counts()
    rows = "".join(
        f'<tr><td><span class="badge {s.value}">{s.value.upper()}</span></td>'
        f'<td class="n" data-testid="count-{s.value}">{counts[s.value]}</td></tr>'
        for s in reversed(Severity)
    )
    statuses = dict.fromkeys(("passed", "failed", "skipped", "error"), 0)
    for result in report.results:
        statuses[result.status] += 1
    checks = ", ".join(f'<span class="{name}">{count} {name}</span>' for name, count in statuses.items())
    lines = [
        "<h2>Summary</h2>",
        f"<table><tr><th>severity</th><th>findings</th></tr>{rows}</table>",
        f"<p>checks: {checks}</p>",
    ]
    if report.stopped:
        lines.append(f'<p class="failed">the run stopped early: {_e(report.stopped)}</p>')
    return lines


def _interfaces(report: ProbeReport) -> list[str]:
    rows = "".join(
        f"<tr><td>{_e(i.protocol_version)}</td><td>{_e(i.binding)}</td><td>{_e(i.url)}</td></tr>"
        for i in report.interfaces
    )
    table = f"<table><tr><th>version</th><th>binding</th><th>URL</th></tr>{rows}</table>"
    return ["<h2>Interfaces probed</h2>", table if rows else "<p>none</p>"]


def _checks(report: ProbeReport) -> list[str]:
    names = ("check", "category", "severity", "status", "findings", "requests", "reason")
    head = "".join(f"<th>{name}</th>" for name in names)
    rows = [
        f'<tr data-testid="check-{_e(r.check_id)}"><td>{_e(r.check_id)}<br>'
        f'<span class="meta">{_e(r.title)}</span></td><td>{_e(r.category)}</td><td>{r.severity.value}</td>'
        f'<td class="{r.status}">{r.status}</td><td class="n">{len(r.findings)}</td>'
        f'<td class="n">{r.requests}</td><td>{_e(r.reason or "")}</td></tr>'
        for r in report.results
    ]
    return ["<h2>Checks</h2>", f"<table><tr>{head}</tr>", *rows, "</table>"]


def _finding(finding: Finding) -> list[str]:
    severity = finding.severity.value
    lines = [
        f'<article class="finding" data-testid="finding-{_e(finding.check_id)}">',
        f'<h3><span class="badge {severity}">{severity.upper()}</span> {_e(finding.title)}</h3>',
        f'<p class="meta">{_e(finding.check_id)} &middot; {_e(finding.interface or WHOLE_AGENT)}</p>',
        f"<p>{_e(finding.detail)}</p>",
    ]
    for number, evidence in enumerate(finding.evidence, start=1):
        lines += [
            f"<p><b>evidence {number}: request</b></p><pre>{_e(evidence.request)}</pre>",
            f"<p><b>response</b></p><pre>{_e(evidence.response)}</pre>",
        ]
    lines += [f"<p><b>remediation:</b> {_e(finding.remediation)}</p>", "</article>"]
    return lines


def to_html(report: ProbeReport) -> str:
    """The report as one self-contained HTML page: counts per severity, the interfaces probed, the
    checks with their status, then each finding (worst first) with its evidence and remediation."""
    name = report.agent_name or report.target
    started = utc(report.started_at).strftime("%Y-%m-%d %H:%M:%S UTC")
    findings = worst_first(report)
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<link rel="icon" href="data:,">',
        f"<title>arena probe: {_e(name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>A2A protocol probe of {_e(name)}</h1>",
        f'<p class="meta">target {_e(report.target)} &middot; {started} &middot; '
        f"{run_seconds(report):.1f} s &middot; {report.requests} requests &middot; "
        f"{report.identities} caller(s) for the isolation checks</p>",
        *_summary(report),
        *_interfaces(report),
        *_checks(report),
        f"<h2>Findings ({len(findings)})</h2>",
    ]
    for finding in findings:
        lines += _finding(finding)
    if not findings:
        lines.append("<p>No finding.</p>")
    lines.append("</body></html>")
    return "\n".join(lines) + "\n"


__all__ = ["CSP", "to_html"]
