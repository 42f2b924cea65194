"""Building a campaign's progress view from its stored counters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

from arena_core.llm.usage import TokenUsage
from arena_core.owasp import OWASP_CATEGORIES, category_title
from arena_core.probes.model import Severity
from arena_orchestrator.campaign_models import (
    FINAL_STATUSES,
    Campaign,
    CampaignProgress,
    CategoryProgress,
    CellProgress,
    DefenderProgress,
    Interval,
    ObjectiveProgress,
    OutcomeCounts,
    ProtocolProbeProgress,
    RefusalProgress,
)
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import CampaignState
from arena_orchestrator.expansion import cells_of, probe_cells_of, protocol_probe_cells_of

Key = TypeVar("Key", str, tuple[str, str])

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
    by_objective: dict[tuple[str, str], OutcomeCounts] = {}
    by_category: dict[tuple[str, str], OutcomeCounts] = {}
    defender_rank = {defender.name: rank for rank, defender in enumerate(spec.defenders)}
    categories_of = {
        label: objective.objective.categories
        for label, objective in zip(spec.objective_labels(), spec.objectives, strict=True)
    }
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
        _add(by_defender, cell.defender, counts)
        _add(by_objective, (cell.defender, cell.objective), counts)
        for category in categories_of.get(cell.objective, ()):
            _add(by_category, (cell.defender, category), counts)
    # Attacks only: over-refusal probes are counted apart (their "wins" are answers).
    overall = OutcomeCounts()
    for cell_progress in cells:
        overall = _sum(overall, cell_progress.counts)
    by_prober: dict[str, OutcomeCounts] = {}
    for cell in probe_cells_of(spec):
        _add(by_prober, cell.defender, _counts(state.counts, f"c:{cell.id}:"))
    probes = OutcomeCounts()
    for counts in by_prober.values():
        probes = _sum(probes, counts)
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
        objectives=[
            ObjectiveProgress(
                defender=defender,
                objective=label,
                categories=list(categories_of.get(label, ())),
                counts=counts,
                asr=counts.asr,
            )
            for (defender, label), counts in by_objective.items()
        ],
        categories=[
            CategoryProgress(
                defender=defender,
                category=category,
                title=category_title(category),
                counts=counts,
                asr=counts.asr,
            )
            for (defender, category), counts in sorted(
                by_category.items(),
                key=lambda item: (
                    defender_rank[item[0][0]],
                    _CATEGORY_RANK.get(item[0][1], len(_CATEGORY_RANK)),
                ),
            )
        ],
        over_refusal=[
            RefusalProgress(
                defender=name,
                counts=counts,
                answered=counts.attacker_won,
                refused=counts.defended,
                frr=Interval.of(counts.defended, counts.attacker_won + counts.defended),
            )
            for name, counts in by_prober.items()
        ],
        probe_counts=probes,
        protocol_probes=_protocol_probes(spec, state.counts),
        tokens=_usage(state.counts, ""),
        errors=state.recent_errors,
        eta_s=eta,
    )


def _protocol_probes(spec: CampaignSpec, counts: dict[str, int]) -> list[ProtocolProbeProgress]:
    """Each probed defender's run: outcome, findings per severity, and whether it fails a gate.

    The threshold is read from the counted findings, so it is met exactly when the run's outcome
    is ``attacker_won`` (:func:`~arena_orchestrator.match_player.probe_outcome`).
    """
    if spec.probes is None:
        return []
    fail_on = spec.probes.fail_on
    rows = []
    for cell in protocol_probe_cells_of(spec):
        prefix = f"c:{cell.id}:"
        outcomes = _counts(counts, prefix)
        findings = {severity.value: counts.get(f"{prefix}f:{severity.value}", 0) for severity in Severity}
        worst = max((severity for severity in Severity if findings[severity.value]), default=None)
        errored = counts.get(f"{prefix}f:errored", 0)
        met = errored > 0 or any(count and Severity(name) >= fail_on for name, count in findings.items())
        rows.append(
            ProtocolProbeProgress(
                defender=cell.defender,
                fail_on=fail_on,
                counts=outcomes,
                findings=findings,
                worst=worst,
                errored_checks=errored,
                threshold_met=met,
                failed=met or outcomes.error > 0,
            )
        )
    return rows


def _sum(first: OutcomeCounts, second: OutcomeCounts) -> OutcomeCounts:
    return OutcomeCounts(**{name: getattr(first, name) + getattr(second, name) for name in _OUTCOMES})


def _add(totals: dict[Key, OutcomeCounts], key: Key, counts: OutcomeCounts) -> None:
    totals[key] = _sum(totals.get(key, OutcomeCounts()), counts)


_CATEGORY_RANK = {category: rank for rank, category in enumerate(OWASP_CATEGORIES)}


__all__ = ["build_progress"]
