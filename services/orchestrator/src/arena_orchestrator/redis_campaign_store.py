"""Campaigns and results in Redis, shared by every orchestrator replica.

Keys are listed in :mod:`arena_core.redis_state.keys`. Lua
scripts make the contract's atomic steps atomic: ``ADMIT`` (count the active campaigns
and admit a new one only below the limit), ``RECORD`` (write a match record once with
HSETNX, count it, move the campaign's status) and ``ACQUIRE`` (take the
campaign-wide and per-defender concurrency leases together or not at all).

Every script touches one slot (ADR 0022): a campaign's own keys share its hash tag, the
shared sets (``{orch}:campaigns``, ``:unfinished``, ``:active``) share another. Creating a
campaign writes its hash first with a short expiry, then ``ADMIT`` adds it to the shared
sets (or refuses at the limit, and the hash is deleted), then the expiry is removed: a
crash in between leaves nothing that outlives the expiry, and no reader ever sees a listed
campaign without its hash. Active campaigns (status not final) are the members of
``{orch}:active``: ``RECORD`` and ``CANCEL`` report whether they made the status final (or
found it final, for a repeated call) and the caller then removes the campaign from the
shared sets with SREM, which is idempotent, so the count stays right however many replicas
submit, record and cancel at once; a caller that dies in between leaves a final campaign in
the set, which :meth:`RedisCampaignStore.create` prunes when the limit is reached.
Leases are sorted sets of match ids scored by their expiry in Redis's own
clock, so a dead worker's leases lapse without anyone cleaning up.
A campaign's keys expire ``campaign_ttl_s`` after it becomes final.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from arena_core.errors import StateUnavailableError
from arena_core.redis_state import RedisClients
from arena_core.redis_state.connection import arena_errors
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
from arena_orchestrator.legacy_layout import adopt_legacy_layout

logger = logging.getLogger(__name__)

_GRANTS: dict[int, SlotGrant] = {1: "taken", 0: "full", -1: "held"}

# KEYS: 1 meta, 2 results, 3 summaries, 4 order, 5 counts, 6 errors, 7 running, 8 attempts, 9 slots
# ARGV: 1 match id, 2 record JSON, 3 summary JSON, 4 index, 5 now (ISO), 6 is error (0/1),
#       7 max tokens (0: none), 8 max recent errors, 9 ttl seconds, 10 campaign id,
#       11.. increments as field, value pairs
# Returns {written (1, 0 a duplicate, -1 no campaign), every match accounted for (1/0),
#          status final (1/0)}: the caller removes the campaign from the shared sets.
RECORD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, 0} end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
  -- A duplicate attempt (a redelivery) ends here; it is no longer running either.
  redis.call('HDEL', KEYS[7], ARGV[1])
  local meta = redis.call('HMGET', KEYS[1], 'done', 'total', 'status')
  local settled = tonumber(meta[1]) >= tonumber(meta[2]) and 1 or 0
  local final = (meta[3] ~= 'queued' and meta[3] ~= 'running') and 1 or 0
  return {0, settled, final}
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[4], tonumber(ARGV[4]), ARGV[1])
for i = 11, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[5], ARGV[i], tonumber(ARGV[i + 1]))
end
if ARGV[6] == '1' then
  redis.call('LPUSH', KEYS[6], ARGV[3])
  redis.call('LTRIM', KEYS[6], 0, tonumber(ARGV[8]) - 1)
end
redis.call('HDEL', KEYS[7], ARGV[1])
local done = redis.call('HINCRBY', KEYS[1], 'done', 1)
local total = tonumber(redis.call('HGET', KEYS[1], 'total'))
local status = redis.call('HGET', KEYS[1], 'status')
if redis.call('HEXISTS', KEYS[1], 'started') == 0 then redis.call('HSET', KEYS[1], 'started', ARGV[5]) end
if status == 'queued' then status = 'running' end
local max_tokens = tonumber(ARGV[7])
if max_tokens > 0 and status == 'running' then
  local prompt = tonumber(redis.call('HGET', KEYS[5], 't:p') or '0')
  local tokens = prompt + tonumber(redis.call('HGET', KEYS[5], 't:c') or '0')
  if tokens >= max_tokens then status = 'budget_exhausted' end
end
if done >= total then
  local skipped = tonumber(redis.call('HGET', KEYS[5], 'o:skipped') or '0')
  if status == 'running' or (status == 'budget_exhausted' and skipped == 0) then status = 'completed' end
  redis.call('HSET', KEYS[1], 'finished', ARGV[5])
  local ttl = tonumber(ARGV[9])
  for i = 1, 9 do redis.call('EXPIRE', KEYS[i], ttl) end
end
redis.call('HSET', KEYS[1], 'status', status)
return {1, done >= total and 1 or 0, (status ~= 'queued' and status ~= 'running') and 1 or 0}
"""

# KEYS: 1 campaigns index, 2 unfinished campaigns, 3 active campaigns.
# ARGV: 1 campaign id, 2 created (ms), 3 max active (0: none).
# Returns 1 admitted, 0 the active campaigns are at the limit (nothing written).
ADMIT = """
local limit = tonumber(ARGV[3])
if limit > 0 and redis.call('SCARD', KEYS[3]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]), ARGV[1])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 1
"""

# KEYS: 1 meta. ARGV: 1 campaign JSON, 2 total, 3 created (ISO), 4 expiry ms.
# A new campaign's hash, expiring unless ADMIT lists it and the expiry is then removed.
WRITE_PENDING = """
redis.call('HSET', KEYS[1], 'campaign', ARGV[1], 'total', ARGV[2], 'done', 0, 'enqueued', 0,
  'status', 'queued', 'created', ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
"""

# KEYS: 1 meta, 2 counts, 3 running, 4 errors. ARGV: 1 recent errors to read.
# One consistent read of a campaign's progress.
READ_STATE = """
return {
  redis.call('HMGET', KEYS[1], 'status', 'done', 'started', 'finished'),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HLEN', KEYS[3]),
  redis.call('LRANGE', KEYS[4], 0, tonumber(ARGV[1]) - 1),
}
"""

PENDING_MS = 300_000
"""How long a new campaign's hash lives before ``ADMIT`` has listed it (then it is kept)."""

# KEYS: slot zsets, the campaign-wide one first. ARGV: 1 member, 2 lease ms, 3.. one cap per key.
# Returns 1 taken, 0 full, -1 this match already holds a live lease.
ACQUIRE = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for _, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms)
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return -1 end
for i, key in ipairs(KEYS) do
  if redis.call('ZCARD', key) >= tonumber(ARGV[i + 2]) then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now_ms + tonumber(ARGV[2]), ARGV[1])
  redis.call('PEXPIRE', key, tonumber(ARGV[2]) * 2)
end
return 1
"""

# KEYS: slot zsets. ARGV: 1 member, 2 lease ms.
RENEW = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
for _, key in ipairs(KEYS) do
  if redis.call('ZSCORE', key, ARGV[1]) then
    redis.call('ZADD', key, now_ms + tonumber(ARGV[2]), ARGV[1])
    redis.call('PEXPIRE', key, tonumber(ARGV[2]) * 2)
  end
end
return 1
"""

# KEYS: 1 meta, 2 running, 3 attempts. ARGV: 1 match id, 2 info JSON, 3 now (ISO).
MARK_RUNNING = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if redis.call('HGET', KEYS[1], 'status') == 'queued' then redis.call('HSET', KEYS[1], 'status', 'running') end
redis.call('HSETNX', KEYS[1], 'started', ARGV[3])
return redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
"""

# KEYS: 1 lock. ARGV: 1 owner, 2 ttl ms. Take the lock, or extend it when we hold it.
LOCK = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
"""

UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""

# KEYS: 1 meta. ARGV: 1 matches queued so far. Only grows, only for a campaign that exists.
SET_ENQUEUED = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local current = tonumber(redis.call('HGET', KEYS[1], 'enqueued') or '0')
if tonumber(ARGV[1]) > current then redis.call('HSET', KEYS[1], 'enqueued', ARGV[1]) end
return 1
"""

# KEYS: 1 meta. Cancel unless final; returns the status (nil for no campaign).
CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
local winding_down = status == 'budget_exhausted'
  and tonumber(redis.call('HGET', KEYS[1], 'done')) < tonumber(redis.call('HGET', KEYS[1], 'total'))
if status == 'queued' or status == 'running' or winding_down then
  status = 'canceled'
  redis.call('HSET', KEYS[1], 'status', status)
end
return status
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(_text(value))


class RedisCampaignStore:
    """A :class:`~arena_orchestrator.campaign_store.CampaignStore` in Redis."""

    def __init__(self, clients: RedisClients, *, campaign_ttl_s: float) -> None:
        self._clients = clients
        self._keys = clients.keys
        self._ttl_s = max(1, int(campaign_ttl_s))
        self._layout_adopted = False
        redis = clients.commands
        self._admit = redis.register_script(ADMIT)
        self._write_pending = redis.register_script(WRITE_PENDING)
        self._read_state = redis.register_script(READ_STATE)
        self._record = redis.register_script(RECORD)
        self._acquire = redis.register_script(ACQUIRE)
        self._renew = redis.register_script(RENEW)
        self._cancel = redis.register_script(CANCEL)
        self._mark_running = redis.register_script(MARK_RUNNING)
        self._lock = redis.register_script(LOCK)
        self._set_enqueued = redis.register_script(SET_ENQUEUED)
        self._unlock = redis.register_script(UNLOCK)

    def _part(self, campaign_id: str, part: str) -> str:
        return self._keys.campaign_part(campaign_id, part)

    async def create(self, campaign: Campaign, *, max_active: int | None = None) -> bool:
        meta = self._keys.campaign(campaign.id)
        shared = [self._keys.campaigns, self._keys.unfinished_campaigns, self._keys.active_campaigns]
        args: list[str | int | float] = [campaign.id, campaign.created_at.timestamp() * 1000, max_active or 0]
        redis = self._clients.commands
        async with arena_errors("creating a campaign"):
            await self._write_pending(
                keys=[meta],
                args=[
                    campaign.model_dump_json(),
                    campaign.total,
                    campaign.created_at.isoformat(),
                    PENDING_MS,
                ],
            )
            admitted = int(await self._admit(keys=shared, args=args)) == 1
            # At the limit. Members whose campaign is final or gone (deleted by hand, or left
            # by a replica that died before removing them) would hold a place forever: drop
            # them, then try once more. Both are permanent, so dropping them here is safe.
            if not admitted and await self._prune_active() > 0:
                admitted = int(await self._admit(keys=shared, args=args)) == 1
            if not admitted:
                await redis.delete(meta)
                return False
            if not await redis.persist(meta):
                await self._leave_shared_sets(campaign.id, settled=True, final=True)
                raise StateUnavailableError(
                    f"campaign {campaign.id} expired while it was being created; submit it again"
                )
            return True

    async def _leave_shared_sets(self, campaign_id: str, *, settled: bool, final: bool) -> None:
        """Remove a campaign from the unfinished set (``settled``) and the active set (``final``)."""
        if not (settled or final):
            return
        async with self._clients.commands.pipeline(transaction=False) as pipe:
            if settled:
                pipe.srem(self._keys.unfinished_campaigns, campaign_id)
            if final:
                pipe.srem(self._keys.active_campaigns, campaign_id)
            await pipe.execute()

    async def _prune_active(self) -> int:
        """Drop members of the active set whose campaign is final or gone; return how many."""
        redis = self._clients.commands
        ids = [_text(i) for i in await redis.smembers(self._keys.active_campaigns)]
        if not ids:
            return 0
        pipe = redis.pipeline(transaction=False)
        for campaign_id in ids:
            pipe.hget(self._keys.campaign(campaign_id), "status")
        statuses = await pipe.execute()
        stale = [
            i
            for i, status in zip(ids, statuses, strict=True)
            if status is None or _text(status) in FINAL_STATUSES
        ]
        if stale:
            await redis.srem(self._keys.active_campaigns, *stale)
        return len(stale)

    async def active_count(self) -> int:
        async with arena_errors("counting active campaigns"):
            return int(await self._clients.commands.scard(self._keys.active_campaigns))

    async def get(self, campaign_id: str) -> Campaign | None:
        async with arena_errors("reading a campaign"):
            raw = await self._clients.commands.hget(self._keys.campaign(campaign_id), "campaign")
        return Campaign.model_validate_json(raw) if raw else None

    async def list_ids(self, limit: int) -> list[str]:
        async with arena_errors("listing campaigns"):
            redis = self._clients.commands
            ids = [_text(i) for i in await redis.zrevrange(self._keys.campaigns, 0, max(0, limit - 1))]
            return await self._existing(ids, redis.zrem, self._keys.campaigns)

    async def unfinished_ids(self) -> list[str]:
        """The unfinished campaigns. The first call that reaches Redis (the worker's first
        maintenance pass) also adopts the key layout before ADR 0022
        (:mod:`arena_orchestrator.legacy_layout`), so campaigns of an upgraded Redis resume."""
        async with arena_errors("listing unfinished campaigns"):
            if not self._layout_adopted:
                await adopt_legacy_layout(self._clients)
                self._layout_adopted = True
            redis = self._clients.commands
            ids = sorted(_text(i) for i in await redis.smembers(self._keys.unfinished_campaigns))
            return await self._existing(ids, redis.srem, self._keys.unfinished_campaigns)

    async def _existing(self, ids: list[str], remove: Callable[..., Awaitable[Any]], index: str) -> list[str]:
        """``ids`` whose campaign still exists; the others are removed from ``index`` with ``remove``.

        Retention is by TTL: the indexes still list campaigns that expired until they are read here.
        """
        if not ids:
            return []
        pipe = self._clients.commands.pipeline(transaction=False)
        for campaign_id in ids:
            pipe.exists(self._keys.campaign(campaign_id))
        alive = await pipe.execute()
        expired = [i for i, ok in zip(ids, alive, strict=True) if not ok]
        if expired:
            await remove(index, *expired)
        return [i for i in ids if i not in expired]

    async def state(self, campaign_id: str) -> CampaignState | None:
        async with arena_errors("reading a campaign's progress"):
            keys = [
                self._keys.campaign(campaign_id),
                *(self._part(campaign_id, p) for p in ("counts", "running", "errors")),
            ]
            meta, flat_counts, running, errors = await self._read_state(keys=keys, args=[MAX_RECENT_ERRORS])
        counts = dict(zip(flat_counts[::2], flat_counts[1::2], strict=True))
        status, done, started, finished = meta
        if status is None:
            return None
        return CampaignState(
            status=_text(status),  # type: ignore[arg-type]
            done=int(done or 0),
            started_at=_time(started),
            finished_at=_time(finished),
            counts={_text(k): int(v) for k, v in counts.items()},
            running=int(running),
            recent_errors=[MatchSummary.model_validate_json(e) for e in errors],
        )

    async def status(self, campaign_id: str) -> CampaignStatus | None:
        async with arena_errors("reading a campaign's status"):
            raw = await self._clients.commands.hget(self._keys.campaign(campaign_id), "status")
        return _text(raw) if raw else None  # type: ignore[return-value]

    async def cancel(self, campaign_id: str) -> CampaignStatus | None:
        async with arena_errors("canceling a campaign"):
            raw = await self._cancel(keys=[self._keys.campaign(campaign_id)])
            await self._leave_shared_sets(campaign_id, settled=False, final=True)
        return _text(raw) if raw else None  # type: ignore[return-value]

    async def mark_running(self, job: MatchJob, info: str) -> int:
        keys = [
            self._keys.campaign(job.campaign_id),
            self._part(job.campaign_id, "running"),
            self._part(job.campaign_id, "attempts"),
        ]
        async with arena_errors("marking a match as running"):
            attempts = await self._mark_running(
                keys=keys, args=[job.match_id, info, datetime.now(UTC).isoformat()]
            )
        return int(attempts)

    async def record(self, record: MatchRecord, *, max_tokens: int | None) -> bool:
        campaign_id = record.campaign_id
        summary = record.summary
        keys = [
            self._keys.campaign(campaign_id),
            *(
                self._part(campaign_id, part)
                for part in ("results", "summaries", "order", "counts", "errors", "running", "attempts")
            ),
            self._keys.campaign_slots(campaign_id),
        ]
        args: list[str | int] = [
            summary.match_id,
            record.model_dump_json(),
            summary.model_dump_json(),
            summary.index,
            datetime.now(UTC).isoformat(),
            1 if summary.outcome == "error" else 0,
            max_tokens or 0,
            MAX_RECENT_ERRORS,
            self._ttl_s,
            campaign_id,
        ]
        for field, value in count_increments(record).items():
            args += [field, value]
        async with arena_errors("storing a match result"):
            written, settled, final = (int(value) for value in await self._record(keys=keys, args=args))
            await self._leave_shared_sets(campaign_id, settled=settled == 1, final=final == 1)
        return written == 1

    async def has_record(self, campaign_id: str, match_id: str) -> bool:
        async with arena_errors("checking a match result"):
            return bool(await self._clients.commands.hexists(self._part(campaign_id, "results"), match_id))

    async def get_record(self, campaign_id: str, match_id: str) -> MatchRecord | None:
        async with arena_errors("reading a match result"):
            raw = await self._clients.commands.hget(self._part(campaign_id, "results"), match_id)
        return MatchRecord.model_validate_json(raw) if raw else None

    async def summaries(self, campaign_id: str, offset: int, limit: int) -> tuple[list[MatchSummary], int]:
        async with arena_errors("listing a campaign's matches"):
            redis = self._clients.commands
            order = self._part(campaign_id, "order")
            total = int(await redis.zcard(order))
            ids = (
                [_text(i) for i in await redis.zrange(order, offset, offset + limit - 1)] if limit > 0 else []
            )
            raws = await redis.hmget(self._part(campaign_id, "summaries"), ids) if ids else []
        return [MatchSummary.model_validate_json(r) for r in raws if r], total

    def _slot_keys(self, job: MatchJob, slots: SlotRequest | None = None) -> list[str]:
        keys = [self._keys.campaign_slots(job.campaign_id)]
        if slots is None or slots.defender_cap is not None:
            keys.append(self._keys.campaign_slots(job.campaign_id, job.cell.defender))
        return keys

    async def acquire_slots(self, job: MatchJob, slots: SlotRequest, lease_s: float) -> SlotGrant:
        keys = self._slot_keys(job, slots)
        caps = [slots.campaign_cap] + ([slots.defender_cap] if slots.defender_cap is not None else [])
        async with arena_errors("taking a concurrency lease"):
            taken = await self._acquire(keys=keys, args=[job.match_id, int(lease_s * 1000), *caps])
        return _GRANTS[int(taken)]

    async def renew_slots(self, job: MatchJob, lease_s: float) -> None:
        async with arena_errors("renewing a concurrency lease"):
            await self._renew(keys=self._slot_keys(job), args=[job.match_id, int(lease_s * 1000)])

    async def release_slots(self, job: MatchJob) -> None:
        async with arena_errors("releasing a concurrency lease"):
            pipe = self._clients.commands.pipeline(transaction=False)
            for key in self._slot_keys(job):
                pipe.zrem(key, job.match_id)
            await pipe.execute()

    async def enqueue_progress(self, campaign_id: str) -> int | None:
        async with arena_errors("reading a campaign's queue progress"):
            raw = await self._clients.commands.hget(self._keys.campaign(campaign_id), "enqueued")
        return int(raw) if raw is not None else None

    async def set_enqueue_progress(self, campaign_id: str, queued: int) -> None:
        async with arena_errors("recording a campaign's queue progress"):
            await self._set_enqueued(keys=[self._keys.campaign(campaign_id)], args=[queued])

    async def lock_enqueue(self, campaign_id: str, owner: str, ttl_s: float) -> bool:
        key = self._part(campaign_id, "enqueue")
        async with arena_errors("locking a campaign's queueing"):
            taken = await self._lock(keys=[key], args=[owner, int(ttl_s * 1000)])
        return int(taken) == 1

    async def unlock_enqueue(self, campaign_id: str, owner: str) -> None:
        key = self._part(campaign_id, "enqueue")
        async with arena_errors("unlocking a campaign's queueing"):
            await self._unlock(keys=[key], args=[owner])

    async def add_leaderboard_entry(self, entry: LeaderboardEntry) -> bool:
        async with arena_errors("entering a campaign into the leaderboard"):
            added = await self._clients.commands.hsetnx(
                self._keys.leaderboard, entry.campaign_id, entry.model_dump_json()
            )
        return bool(added)

    async def has_leaderboard_entry(self, campaign_id: str) -> bool:
        async with arena_errors("reading the leaderboard"):
            return bool(await self._clients.commands.hexists(self._keys.leaderboard, campaign_id))

    async def leaderboard_entries(self) -> list[LeaderboardEntry]:
        async with arena_errors("reading the leaderboard"):
            raw = await self._clients.commands.hgetall(self._keys.leaderboard)
        entries = []
        for campaign_id, value in raw.items():
            try:
                entries.append(LeaderboardEntry.model_validate_json(value))
            except ValidationError as exc:
                # Not ours (or from a newer version): left out of the table, never fatal.
                logger.warning("leaderboard entry %s is unreadable, left out: %s", _text(campaign_id), exc)
        return entries

    async def problem(self) -> str | None:
        return await self._clients.problem()

    async def close(self) -> None:
        await self._clients.close()


__all__ = ["RedisCampaignStore"]
