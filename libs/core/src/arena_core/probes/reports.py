"""A probe run's report in every form it leaves in: JSON, HTML, JUnit XML, SARIF 2.1.0, the console.

Everything a report holds that came from the target (its name, the excerpts of its answers,
details that quote them) is hostile text, and each form defends against it its own way:

* **JSON** (:func:`to_json`): the :class:`~arena_core.probes.model.ProbeReport` itself;
  ``ProbeReport.model_validate_json`` reads it back.
* **HTML** (:func:`to_html`, in ``_html_report``): one self-contained page; every value
  escaped, control characters shown as ``\\xNN``, a Content-Security-Policy that forbids
  scripts and every load.
* **JUnit XML** (:func:`to_junit`, in ``_junit_report``): one test case per check, valid
  against ``junit-10.xsd``; characters XML 1.0 cannot hold become ``\\xNN``.
* **SARIF 2.1.0** (:func:`to_sarif`, in ``_sarif_report``): every check of the catalogue a
  rule, every finding a result at the interface it was seen on (or the card).
* **Console** (:func:`render_console`): rich, all target text as :class:`rich.text.Text`
  (never markup) with control characters shown as ``\\xNN``, so a target cannot drive the
  terminal.

:func:`write_report` picks the form from a file's suffix (:func:`report_format`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from arena_core.probes._html_report import to_html
from arena_core.probes._junit_report import to_junit
from arena_core.probes._report_text import WHOLE_AGENT, visible, worst_first
from arena_core.probes._sarif_report import SECURITY_SEVERITY, to_sarif
from arena_core.probes.model import ProbeReport, Severity

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

ReportFormat = Literal["json", "html", "junit", "sarif"]

SUFFIXES: tuple[tuple[str, ReportFormat], ...] = (
    (".sarif.json", "sarif"),
    (".sarif", "sarif"),
    (".junit.xml", "junit"),
    (".xml", "junit"),
    (".json", "json"),
    (".html", "html"),
    (".htm", "html"),
)
"""File name endings and the form each gets (the first that matches, case-insensitive)."""

CONSOLE_EXCERPT_CHARS = 400
CONSOLE_EXCERPT_LINES = 8
_SEVERITY_STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}
_STATUS_STYLE = {"passed": "green", "failed": "bold red", "skipped": "dim", "error": "bold magenta"}


def to_json(report: ProbeReport) -> str:
    """The report as indented JSON (``ProbeReport.model_validate_json`` reads it back)."""
    return report.model_dump_json(indent=2) + "\n"


def _excerpt(text: str) -> str:
    """``text`` cut to :data:`CONSOLE_EXCERPT_LINES` lines and :data:`CONSOLE_EXCERPT_CHARS` characters."""
    cut = "\n".join(text.splitlines()[:CONSOLE_EXCERPT_LINES])[:CONSOLE_EXCERPT_CHARS]
    return cut if cut == text.rstrip("\n") else f"{cut} ..."


def _indented(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines())


def _t(text: object, style: str = "") -> Text:
    from rich.text import Text

    return Text(visible(text), style=style)


def render_console(report: ProbeReport, console: Console) -> None:
    """Print the checks as a table with coloured status and severity, then each finding (worst first)
    with its detail, interface, first evidence (trimmed) and remediation, then the counts.

    Every text from the report is :class:`rich.text.Text`, never markup, with its control characters
    shown as ``\\xNN``.
    """
    from rich.table import Table
    from rich.text import Text

    name = report.agent_name or "(unnamed agent)"
    console.print(Text.assemble(("probe of ", "bold"), _t(name, "bold"), " at ", _t(report.target)))
    for interface in report.interfaces:
        console.print(_t(f"  {interface.protocol_version} {interface.binding} {interface.url}", "dim"))
    table = Table()
    for column in ("check", "severity", "status", "findings", "reason"):
        table.add_column(column, no_wrap=column in ("check", "severity", "status"))
    for result in report.results:
        table.add_row(
            _t(result.check_id),
            _t(result.severity.value, _SEVERITY_STYLE[result.severity]),
            _t(result.status, _STATUS_STYLE[result.status]),
            _t(len(result.findings) or ""),
            _t(_excerpt(result.reason or "")),
        )
    console.print(table)
    for finding in worst_first(report):
        console.print()
        badge = _t(f" {finding.severity.value.upper()} ", _SEVERITY_STYLE[finding.severity])
        console.print(Text.assemble(badge, " ", _t(finding.title, "bold"), "  ", _t(finding.check_id, "dim")))
        console.print(Text.assemble(("  where: ", "dim"), _t(finding.interface or WHOLE_AGENT)))
        console.print(Text.assemble("  ", _t(finding.detail)))
        if finding.evidence:
            first = finding.evidence[0]
            for label, text in (("request", first.request), ("response", first.response)):
                console.print(Text(f"  evidence, {label}:", style="dim"))
                console.print(_t(_indented(_excerpt(text)), "dim"))
        console.print(Text.assemble(("  remediation: ", "green"), _t(finding.remediation)))
    counts = report.counts()
    summary = ", ".join(f"{counts[s.value]} {s.value}" for s in reversed(Severity))
    broke = len(report.errored())
    console.print()
    line = f"{len(report.findings)} finding(s): {summary}; {broke} check(s) broke; {report.requests} requests"
    console.print(_t(line, "bold"))
    if report.stopped:
        console.print(Text.assemble(("stopped early: ", "yellow"), _t(report.stopped)))


def report_format(path: Path) -> ReportFormat:
    """The form a report written to ``path`` takes, by its suffix; ValueError for an unknown one."""
    name = path.name.lower()
    for suffix, form in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return form
    known = ", ".join(suffix for suffix, _ in SUFFIXES)
    msg = f"cannot tell the report format of {path.name!r} from its suffix: use one of {known}"
    raise ValueError(msg)


def render(report: ProbeReport, form: ReportFormat) -> str:
    """The report in ``form``."""
    return {"json": to_json, "html": to_html, "junit": to_junit, "sarif": to_sarif}[form](report)


def write_report(report: ProbeReport, path: Path) -> ReportFormat:
    """Write the report to ``path`` (UTF-8, parent folders made) in the form its suffix names.

    Returns the form. Raises ValueError for an unknown suffix (before writing anything), OSError
    when the file cannot be written.
    """
    form = report_format(path)
    text = render(report, form)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return form


__all__ = [
    "SECURITY_SEVERITY",
    "SUFFIXES",
    "ReportFormat",
    "render",
    "render_console",
    "report_format",
    "to_html",
    "to_json",
    "to_junit",
    "to_sarif",
    "write_report",
]
