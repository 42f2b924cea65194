"""Building a campaign's progress view from its stored counters."""

from __future__ import annotations

from datetime import UTC, datetime

from arena_core.llm.usage import TokenUsage
from arena_orchestrator.campaign_models import (
    FINAL_STATUSES,
    Campaign,
    CampaignProgress,
    CellProgress,
    DefenderProgress,
    OutcomeCounts,
)
from arena_orchestrator.campaign_store import CampaignState
from arena_orchestrator.expansion import cells_of

_OUTCOMES = ("attacker_won", "defended", "attacker_refused", "error", "canceled", "skipped")


def _counts(counts: dict[str, int], prefix: str) -> OutcomeCounts:
    return OutcomeCounts(**{name: counts.get(f"{prefix}{name}", 0) for name in _OUTCOMES})


def _usage(counts: dict[str, int], prefix: str) -> TokenUsage:
    return TokenUsage(
        prompt_tokens=counts.get(f"{prefix}t:p", 0),
        completion_tokens=counts.get(f"{prefix}t:c", 0),
        calls=counts.get(f"{prefix}t:n", 0),
    )


def build_progress(
    campaign: Campaign, state: CampaignState, *, now: datetime | None = None
) -> CampaignProgress:
    """The progress of ``campaign`` from its stored ``state``."""
    spec = campaign.spec
    repetitions = spec.repetitions
    cells = []
    by_defender: dict[str, OutcomeCounts] = {}
    for cell in cells_of(spec):
        counts = _counts(state.counts, f"c:{cell.id}:")
        cells.append(
            CellProgress(
                cell=cell,
                total=repetitions,
                counts=counts,
                asr=counts.asr,
                tokens=_usage(state.counts, f"c:{cell.id}:"),
            )
        )
        previous = by_defender.get(cell.defender, OutcomeCounts())
        by_defender[cell.defender] = OutcomeCounts(
            **{name: getattr(previous, name) + getattr(counts, name) for name in _OUTCOMES}
        )
    overall = _counts(state.counts, "o:")
    eta: float | None = None
    now = now or datetime.now(UTC)
    if state.status not in FINAL_STATUSES and state.started_at is not None and state.done > 0:
        elapsed = max(0.0, (now - state.started_at).total_seconds())
        eta = elapsed / state.done * (campaign.total - state.done)
    elif state.status in FINAL_STATUSES and state.done >= campaign.total:
        eta = 0.0
    return CampaignProgress(
        id=campaign.id,
        name=spec.name,
        status=state.status,
        created_at=campaign.created_at,
        started_at=state.started_at,
        finished_at=state.finished_at,
        total=campaign.total,
        done=state.done,
        running=state.running,
        counts=overall,
        asr=overall.asr,
        cells=cells,
        defenders=[
            DefenderProgress(defender=name, counts=counts, asr=counts.asr)
            for name, counts in by_defender.items()
        ],
        tokens=_usage(state.counts, ""),
        errors=state.recent_errors,
        eta_s=eta,
    )


__all__ = ["build_progress"]
