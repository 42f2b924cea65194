"""How the reports show rates: percentages, Wilson intervals, and "above the threshold"."""

from __future__ import annotations

from arena_orchestrator.campaign_models import Interval


def pct(value: float | None) -> str:
    """``0.4444`` as ``44.4%``; None (no trials) as ``n/a``."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def interval(asr: Interval) -> str:
    """The Wilson 95% interval as ``low% to high%``, or ``n/a`` without trials."""
    return "n/a" if asr.trials == 0 else f"{pct(asr.low)} to {pct(asr.high)}"


def above(asr: Interval, threshold: float | None) -> bool:
    """Whether the rate is strictly above ``threshold`` (never without a threshold or trials)."""
    return threshold is not None and asr.rate is not None and asr.rate > threshold


__all__ = ["above", "interval", "pct"]
