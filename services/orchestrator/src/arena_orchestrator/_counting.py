"""The counter increments one match record makes (shared by both stores)."""

from __future__ import annotations

from arena_core.llm.usage import TokenUsage
from arena_orchestrator.campaign_models import MatchRecord


def record_usage(record: MatchRecord) -> TokenUsage:
    """Tokens both sides spent in the match (zero when it was not played)."""
    if record.result is None:
        return TokenUsage()
    return record.result.attacker_usage + record.result.defender_usage


def outcome_key(record: MatchRecord) -> str:
    """The result's outcome, or the disposition (``canceled``/``skipped``) of an unplayed match."""
    summary = record.summary
    if summary.disposition == "played" and summary.outcome is not None:
        return summary.outcome
    return "error" if summary.disposition == "played" else summary.disposition


def count_increments(record: MatchRecord) -> dict[str, int]:
    """``counts`` fields (see CampaignState) and how much each grows by."""
    outcome = outcome_key(record)
    cell = record.summary.cell.id
    usage = record_usage(record)
    increments = {f"o:{outcome}": 1, f"c:{cell}:{outcome}": 1}
    for suffix, value in (("p", usage.prompt_tokens), ("c", usage.completion_tokens), ("n", usage.calls)):
        if value:
            increments[f"t:{suffix}"] = value
            increments[f"c:{cell}:t:{suffix}"] = value
    report = record.result.probe_report if record.result is not None else None
    if report is not None:
        # A protocol-probe run: its findings per severity and its broken checks, for progress.
        for severity, count in report.counts().items():
            if count:
                increments[f"c:{cell}:f:{severity}"] = count
        if report.errored():
            increments[f"c:{cell}:f:errored"] = len(report.errored())
    return increments


__all__ = ["count_increments", "outcome_key", "record_usage"]
