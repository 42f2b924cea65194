"""Where campaigns and their results live: the contract both stores keep.

:class:`MemoryCampaignStore` (one process, ``arena campaign run`` without an
orchestrator) and :class:`RedisCampaignStore` (any number of orchestrator
replicas) implement :class:`CampaignStore`; one contract test suite runs
against both.

The guarantees the scheduler builds on:

* ``record`` is idempotent: the first record of a match id wins, later ones
  are ignored and reported as such, so a match reclaimed from a dead worker and
  played twice is still counted once.
* counters (per outcome, per cell, tokens) change only together with the
  record they count, in one atomic step;
* a campaign's status becomes final exactly when every match is accounted for.
* ``add_leaderboard_entry`` is write-once per campaign, like ``record`` per match, and
  leaderboard entries outlive the campaigns' expiry;
* ``create`` with ``max_active`` counts and creates in one atomic step, across every
  replica sharing the state: at most ``max_active`` campaigns are *active* (status not
  final: ``queued`` or ``running``). A campaign leaves that count once, when its status
  becomes final (completed, canceled, budget exhausted), whoever makes it so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from arena_orchestrator.campaign_models import (
    Campaign,
    CampaignStatus,
    MatchJob,
    MatchRecord,
    MatchSummary,
)
from arena_orchestrator.leaderboard import LeaderboardEntry

MAX_RECENT_ERRORS = 20

SlotGrant = Literal["taken", "full", "held"]
"""``taken``: the leases are this match's now; ``full``: no room yet; ``held``: a live lease of
this very match exists (another delivery of it is being played), so it must not start twice."""


@dataclass(slots=True)
class CampaignState:
    """A campaign's mutable facts as stored: status, times and counters.

    ``counts`` keys: ``o:<outcome>`` campaign-wide, ``c:<cell id>:<outcome>``
    per cell (outcome is a MatchResult outcome, ``canceled`` or ``skipped``),
    ``t:p``/``t:c``/``t:n`` prompt tokens, completion tokens and model calls,
    and ``c:<cell id>:t:p``... per cell; a protocol-probe cell also counts its run's findings per
    severity (``c:<cell id>:f:high``...) and its checks that errored (``c:<cell id>:f:errored``).
    """

    status: CampaignStatus
    done: int
    started_at: datetime | None
    finished_at: datetime | None
    counts: dict[str, int] = field(default_factory=dict)
    running: int = 0
    recent_errors: list[MatchSummary] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SlotRequest:
    """Concurrency leases a match needs before it may start: ``(key, cap)`` pairs."""

    campaign_cap: int
    defender: str
    defender_cap: int | None


class CampaignStore(Protocol):
    """Campaigns, results and concurrency leases. Methods raise
    :class:`~arena_core.errors.StateUnavailableError` when the state is unreachable."""

    async def create(self, campaign: Campaign, *, max_active: int | None = None) -> bool:
        """Store a new campaign (status ``queued``) and count it as active.

        With ``max_active``, only if fewer than that many campaigns are active: False (and
        nothing stored) when there are already that many.
        """
        ...

    async def active_count(self) -> int:
        """How many campaigns are active (status not final)."""
        ...

    async def get(self, campaign_id: str) -> Campaign | None:
        """The campaign, or None when unknown (or expired)."""
        ...

    async def list_ids(self, limit: int) -> list[str]:
        """Campaign ids, newest first."""
        ...

    async def unfinished_ids(self) -> list[str]:
        """Ids of campaigns not every match of which is accounted for yet."""
        ...

    async def state(self, campaign_id: str) -> CampaignState | None:
        """Status, counters, running count and recent errors."""
        ...

    async def status(self, campaign_id: str) -> CampaignStatus | None:
        """Just the status (cheap; workers call it before each match)."""
        ...

    async def cancel(self, campaign_id: str) -> CampaignStatus | None:
        """Mark the campaign canceled unless it is finished (``completed``, or every match
        accounted for); a ``budget_exhausted`` campaign still winding down is canceled too.
        Return the status now."""
        ...

    async def mark_running(self, job: MatchJob, info: str) -> int:
        """Note that ``job`` is being played (``info``: JSON saying by whom); return its attempt
        number (from 1), or -1 when the campaign is gone (its state expired or was deleted)."""
        ...

    async def record(self, record: MatchRecord, *, max_tokens: int | None) -> bool:
        """Store a match's record once. False when the match already had one: the record and
        counters stay as they were, and the match is no longer counted as running.

        Updates counters; sets the campaign ``running`` on its first record,
        ``budget_exhausted`` when ``max_tokens`` is reached, and final
        (``completed``, or the cancel/budget status) when every match is accounted for.
        """
        ...

    async def has_record(self, campaign_id: str, match_id: str) -> bool:
        """True when the match is already accounted for."""
        ...

    async def get_record(self, campaign_id: str, match_id: str) -> MatchRecord | None:
        """A match's stored record."""
        ...

    async def summaries(self, campaign_id: str, offset: int, limit: int) -> tuple[list[MatchSummary], int]:
        """Recorded matches by index, and how many are recorded."""
        ...

    async def acquire_slots(self, job: MatchJob, slots: SlotRequest, lease_s: float) -> SlotGrant:
        """Take the concurrency leases for ``job`` (campaign-wide and per defender, both or
        neither), unless they are full or the match already holds a live lease."""
        ...

    async def renew_slots(self, job: MatchJob, lease_s: float) -> None:
        """Extend ``job``'s leases (a live worker calls this well within ``lease_s``)."""
        ...

    async def release_slots(self, job: MatchJob) -> None:
        """Give ``job``'s leases back."""
        ...

    async def enqueue_progress(self, campaign_id: str) -> int | None:
        """How many of the campaign's matches have been queued (None: unknown campaign)."""
        ...

    async def set_enqueue_progress(self, campaign_id: str, queued: int) -> None:
        """Record that matches ``0..queued-1`` are in the queue."""
        ...

    async def lock_enqueue(self, campaign_id: str, owner: str, ttl_s: float) -> bool:
        """Take (or, for the same owner, extend) the right to queue the campaign's matches."""
        ...

    async def unlock_enqueue(self, campaign_id: str, owner: str) -> None:
        """Give that right back."""
        ...

    async def add_leaderboard_entry(self, entry: LeaderboardEntry) -> bool:
        """Enter a settled campaign's contests into the leaderboard, once: False (and nothing
        changed) when the campaign has an entry already. Entries do not expire."""
        ...

    async def has_leaderboard_entry(self, campaign_id: str) -> bool:
        """True when the campaign has been entered into the leaderboard."""
        ...

    async def leaderboard_entries(self) -> list[LeaderboardEntry]:
        """Every leaderboard entry (in no particular order)."""
        ...

    async def problem(self) -> str | None:
        """None when the store is usable, else why not (for /readyz)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


__all__ = ["MAX_RECENT_ERRORS", "CampaignState", "CampaignStore", "SlotGrant", "SlotRequest"]
