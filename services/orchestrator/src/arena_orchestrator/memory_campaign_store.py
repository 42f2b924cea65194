"""Campaigns in one process's memory: ``arena campaign run`` without an orchestrator.

Same contract as the Redis store (see :mod:`arena_orchestrator.campaign_store`);
nothing survives the process, and leases expire by the monotonic clock.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from arena_orchestrator._counting import count_increments
from arena_orchestrator.campaign_models import (
    FINAL_STATUSES,
    Campaign,
    CampaignStatus,
    MatchJob,
    MatchRecord,
    MatchSummary,
)
from arena_orchestrator.campaign_store import MAX_RECENT_ERRORS, CampaignState, SlotGrant, SlotRequest
from arena_orchestrator.leaderboard import LeaderboardEntry

MAX_FINISHED_CAMPAIGNS = 100
"""Finished campaigns kept in memory; older ones are dropped (Redis keeps them by TTL)."""


@dataclass
class _Entry:
    campaign: Campaign
    status: CampaignStatus = "queued"
    done: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    counts: dict[str, int] = field(default_factory=dict)
    records: dict[str, MatchRecord] = field(default_factory=dict)
    running: dict[str, str] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    errors: list[MatchSummary] = field(default_factory=list)
    slots: dict[str, dict[str, float]] = field(default_factory=dict)
    enqueued: int = 0
    lock: tuple[str, float] | None = None


class MemoryCampaignStore:
    """A :class:`~arena_orchestrator.campaign_store.CampaignStore` in a dict.

    Single event loop; every method completes without awaiting, so each is atomic.
    At most :data:`MAX_FINISHED_CAMPAIGNS` finished campaigns are kept.
    """

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._leaderboard: dict[str, LeaderboardEntry] = {}

    async def create(self, campaign: Campaign, *, max_active: int | None = None) -> bool:
        if max_active is not None and await self.active_count() >= max_active:
            return False
        self._entries[campaign.id] = _Entry(campaign)
        return True

    async def active_count(self) -> int:
        return sum(1 for e in self._entries.values() if e.status not in FINAL_STATUSES)

    async def get(self, campaign_id: str) -> Campaign | None:
        entry = self._entries.get(campaign_id)
        return entry.campaign if entry else None

    async def list_ids(self, limit: int) -> list[str]:
        ordered = sorted(self._entries.values(), key=lambda e: e.campaign.created_at, reverse=True)
        return [e.campaign.id for e in ordered[:limit]]

    async def state(self, campaign_id: str) -> CampaignState | None:
        entry = self._entries.get(campaign_id)
        if entry is None:
            return None
        return CampaignState(
            status=entry.status,
            done=entry.done,
            started_at=entry.started_at,
            finished_at=entry.finished_at,
            counts=dict(entry.counts),
            running=len(entry.running),
            recent_errors=list(entry.errors),
        )

    async def unfinished_ids(self) -> list[str]:
        return [i for i, e in self._entries.items() if e.done < e.campaign.total]

    async def status(self, campaign_id: str) -> CampaignStatus | None:
        entry = self._entries.get(campaign_id)
        return entry.status if entry else None

    async def cancel(self, campaign_id: str) -> CampaignStatus | None:
        entry = self._entries.get(campaign_id)
        if entry is None:
            return None
        winding_down = entry.status == "budget_exhausted" and entry.done < entry.campaign.total
        if entry.status not in FINAL_STATUSES or winding_down:
            entry.status = "canceled"
        return entry.status

    async def mark_running(self, job: MatchJob, info: str) -> int:
        entry = self._entries[job.campaign_id]
        entry.running[job.match_id] = info
        entry.attempts[job.match_id] = entry.attempts.get(job.match_id, 0) + 1
        if entry.status == "queued":
            entry.status = "running"
        if entry.started_at is None:
            entry.started_at = datetime.now(UTC)
        return entry.attempts[job.match_id]

    async def record(self, record: MatchRecord, *, max_tokens: int | None) -> bool:
        entry = self._entries.get(record.campaign_id)
        match_id = record.summary.match_id
        if entry is None:
            return False
        if match_id in entry.records:
            entry.running.pop(match_id, None)  # a duplicate attempt is no longer running either
            return False
        entry.records[match_id] = record
        entry.running.pop(match_id, None)
        for key, value in count_increments(record).items():
            entry.counts[key] = entry.counts.get(key, 0) + value
        if record.summary.outcome == "error":
            entry.errors = [record.summary, *entry.errors][:MAX_RECENT_ERRORS]
        entry.done += 1
        now = datetime.now(UTC)
        if entry.started_at is None:
            entry.started_at = now
        if entry.status == "queued":
            entry.status = "running"
        tokens = entry.counts.get("t:p", 0) + entry.counts.get("t:c", 0)
        if max_tokens is not None and tokens >= max_tokens and entry.status == "running":
            entry.status = "budget_exhausted"
        if entry.done >= entry.campaign.total:
            nothing_skipped = not entry.counts.get("o:skipped")
            if entry.status in ("queued", "running") or (
                entry.status == "budget_exhausted" and nothing_skipped
            ):
                entry.status = "completed"
            entry.finished_at = now
            self._forget_old_finished()
        return True

    def _forget_old_finished(self) -> None:
        finished = [e for e in self._entries.values() if e.done >= e.campaign.total]
        finished.sort(key=lambda e: e.finished_at or e.campaign.created_at)
        for entry in finished[: max(0, len(finished) - MAX_FINISHED_CAMPAIGNS)]:
            del self._entries[entry.campaign.id]

    async def has_record(self, campaign_id: str, match_id: str) -> bool:
        entry = self._entries.get(campaign_id)
        return entry is not None and match_id in entry.records

    async def get_record(self, campaign_id: str, match_id: str) -> MatchRecord | None:
        entry = self._entries.get(campaign_id)
        return entry.records.get(match_id) if entry else None

    async def summaries(self, campaign_id: str, offset: int, limit: int) -> tuple[list[MatchSummary], int]:
        entry = self._entries.get(campaign_id)
        if entry is None:
            return [], 0
        ordered = sorted(entry.records.values(), key=lambda r: r.summary.index)
        return [r.summary for r in ordered[offset : offset + limit]], len(ordered)

    async def acquire_slots(self, job: MatchJob, slots: SlotRequest, lease_s: float) -> SlotGrant:
        entry = self._entries[job.campaign_id]
        now = time.monotonic()
        wanted = [("*", slots.campaign_cap)]
        if slots.defender_cap is not None:
            wanted.append((slots.defender, slots.defender_cap))
        for key, _ in wanted:
            leases = entry.slots.setdefault(key, {})
            for member, expiry in list(leases.items()):
                if expiry <= now:
                    del leases[member]
        if job.match_id in entry.slots["*"]:
            return "held"
        if any(len(entry.slots[key]) >= cap for key, cap in wanted):
            return "full"
        for key, _ in wanted:
            entry.slots[key][job.match_id] = now + lease_s
        return "taken"

    async def renew_slots(self, job: MatchJob, lease_s: float) -> None:
        entry = self._entries.get(job.campaign_id)
        if entry is None:
            return
        for leases in entry.slots.values():
            if job.match_id in leases:
                leases[job.match_id] = time.monotonic() + lease_s

    async def release_slots(self, job: MatchJob) -> None:
        entry = self._entries.get(job.campaign_id)
        if entry is None:
            return
        for leases in entry.slots.values():
            leases.pop(job.match_id, None)

    async def enqueue_progress(self, campaign_id: str) -> int | None:
        entry = self._entries.get(campaign_id)
        return entry.enqueued if entry else None

    async def set_enqueue_progress(self, campaign_id: str, queued: int) -> None:
        entry = self._entries.get(campaign_id)
        if entry is not None:
            entry.enqueued = max(entry.enqueued, queued)

    async def lock_enqueue(self, campaign_id: str, owner: str, ttl_s: float) -> bool:
        entry = self._entries.get(campaign_id)
        if entry is None:
            return False
        now = time.monotonic()
        if entry.lock is not None and entry.lock[0] != owner and entry.lock[1] > now:
            return False
        entry.lock = (owner, now + ttl_s)
        return True

    async def unlock_enqueue(self, campaign_id: str, owner: str) -> None:
        entry = self._entries.get(campaign_id)
        if entry is not None and entry.lock is not None and entry.lock[0] == owner:
            entry.lock = None

    async def add_leaderboard_entry(self, entry: LeaderboardEntry) -> bool:
        if entry.campaign_id in self._leaderboard:
            return False
        self._leaderboard[entry.campaign_id] = entry
        return True

    async def has_leaderboard_entry(self, campaign_id: str) -> bool:
        return campaign_id in self._leaderboard

    async def leaderboard_entries(self) -> list[LeaderboardEntry]:
        return list(self._leaderboard.values())

    async def problem(self) -> str | None:
        return None

    async def close(self) -> None:
        return None


__all__ = ["MemoryCampaignStore"]
