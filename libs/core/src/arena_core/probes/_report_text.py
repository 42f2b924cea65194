"""What every form of a probe report shares (:mod:`arena_core.probes.reports`): making hostile
text visible, the findings' order, and where a finding was seen."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx

from arena_core.probes.model import Finding, ProbeReport
from arena_core.probes.surface import CARD_PATH

WHOLE_AGENT = "the agent (its card, no one interface)"
"""Where a finding with no interface was seen: about the card, or about the agent as a whole."""

# What no report shows as is: C0 controls but tab and newline (carriage return too: it can
# overwrite a terminal line), DEL, C1 controls (a lone 0x9b is a terminal's CSI), the bidi
# overrides and isolates that can reorder what a reader sees, and lone surrogates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def visible(text: object) -> str:
    """``text`` with every control character written as ``\\xNN`` (``\\uNNNN`` above 0xff)."""

    def show(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return _CONTROL.sub(show, str(text))


def utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def run_seconds(report: ProbeReport) -> float:
    return max((report.finished_at - report.started_at).total_seconds(), 0.0)


def worst_first(report: ProbeReport) -> list[Finding]:
    """The findings, worst first (in the run's order within a severity)."""
    return sorted(report.findings, key=lambda finding: -finding.severity.rank)


def card_url(report: ProbeReport) -> str:
    """Where the run read the target's card (the target itself when it names a ``.json`` file)."""
    try:
        target = httpx.URL(report.target)
    except httpx.InvalidURL:
        return report.target
    path = target.path if target.path.endswith(".json") else CARD_PATH
    return str(target.copy_with(path=path, query=None, fragment=None))


def interface_url(report: ProbeReport, label: str | None) -> str:
    """The URL of the interface a finding names by its label (``1.0 JSONRPC http://...``); the
    card's URL for none."""
    if not label:
        return card_url(report)
    for interface in report.interfaces:
        binding = "JSONRPC" if interface.binding == "jsonrpc" else "HTTP+JSON"
        if label == f"{interface.protocol_version} {binding} {interface.url}":
            return interface.url
    parts = label.split(" ", 2)
    return parts[2] if len(parts) == 3 else label
