"""The match queue on a Redis Stream with one consumer group for every replica.

* ``enqueue``: ``XADD`` of a whole batch in one script (all or nothing).
* ``receive``: ``XREADGROUP ... >`` (new entries only), blocking.
* ``keep_alive``: ``XCLAIM ... JUSTID`` of the entries the consumer still owns
  (checked with ``XPENDING`` in one script), which resets their idle time, so a
  long match is never taken from a live worker.
* ``reclaim``: ``XAUTOCLAIM`` of entries idle longer than the visibility
  timeout: their worker stopped sending keep-alives (it died).
* ``ack``: ``XACK`` + ``XDEL`` in one script (acknowledged entries are not kept).

Scripts rather than MULTI transactions: the queue is one key, so each script runs on one
slot of a Redis Cluster as on a single Redis (ADR 0022).
* ``hand_back``: one script per batch that, for each entry the consumer still owns,
  adds a copy (``XADD``, with ``h``, the hand-back count, raised when a try was cut
  short) and acknowledges and deletes the old one (``XACK`` + ``XDEL``): a worker
  blocked in ``XREADGROUP`` gets the copy at once, and no crash in between can lose
  the match or leave two entries of it.

Entry fields: ``c`` campaign id, ``i`` match index, ``t`` trace context (JSON),
``h`` hand-backs (absent: 0).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from redis.exceptions import ResponseError

from arena_core.redis_state import RedisClients
from arena_core.redis_state.connection import arena_errors
from arena_core.redis_state.keys import MATCH_QUEUE_GROUP
from arena_orchestrator.match_queue import Delivery, HandBack, QueuedMatch

_MAX_RECLAIM_SCANS = 100
_ACK_CHUNK = 1000

CONSUMER_IDLE_MS = 3_600_000
"""Consumers holding nothing and idle this long (dead workers' names) are deleted."""

# KEYS: 1 stream. ARGV: triples (campaign id, match index, trace context JSON).
ENQUEUE = """
for i = 1, #ARGV, 3 do
  redis.call('XADD', KEYS[1], '*', 'c', ARGV[i], 'i', ARGV[i + 1], 't', ARGV[i + 2])
end
return #ARGV / 3
"""

# KEYS: 1 stream. ARGV: 1 group, 2.. entry ids. Acknowledge and delete.
ACK = """
local ids = {unpack(ARGV, 2)}
redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
return redis.call('XDEL', KEYS[1], unpack(ids))
"""

# KEYS: 1 stream. ARGV: 1 group, 2 consumer, 3.. entry ids. Renews only the entries this
# consumer still owns: after a takeover, the old owner must not claim them back.
KEEP_ALIVE = """
for i = 3, #ARGV do
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
  if #pending > 0 then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
  end
end
return 1
"""

# KEYS: 1 stream. ARGV: 1 group, 2 consumer, then pairs (entry id, 1 if a try was cut short else 0).
# Re-queues each entry this consumer still owns as a new entry (same fields, ``h`` raised by the
# flag) and acknowledges and deletes the old one, in one step. Returns how many were handed back.
HAND_BACK = """
local handed = 0
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, ARGV[2])
  if #pending > 0 then
    local entries = redis.call('XRANGE', KEYS[1], id, id)
    if #entries > 0 then
      local fields = entries[1][2]
      local copy = {}
      local handbacks = 0
      for j = 1, #fields, 2 do
        if fields[j] == 'h' then
          handbacks = tonumber(fields[j + 1]) or 0
        else
          copy[#copy + 1] = fields[j]
          copy[#copy + 1] = fields[j + 1]
        end
      end
      copy[#copy + 1] = 'h'
      copy[#copy + 1] = tostring(handbacks + tonumber(ARGV[i + 1]))
      redis.call('XADD', KEYS[1], '*', unpack(copy))
      handed = handed + 1
    end
    redis.call('XACK', KEYS[1], ARGV[1], id)
    redis.call('XDEL', KEYS[1], id)
  end
end
return handed
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _delivery(entry_id: Any, fields: dict[Any, Any]) -> Delivery | None:
    values = {_text(k): _text(v) for k, v in fields.items()}
    try:
        context = json.loads(values.get("t", "{}"))
        match = QueuedMatch(
            campaign_id=values["c"],
            index=int(values["i"]),
            trace_context={str(k): str(v) for k, v in context.items()} if isinstance(context, dict) else {},
            handbacks=max(0, int(values.get("h", "0"))),
        )
    except (KeyError, ValueError):
        return None
    return Delivery(_text(entry_id), match)


class RedisMatchQueue:
    """A :class:`~arena_orchestrator.match_queue.MatchQueue` shared through Redis."""

    def __init__(self, clients: RedisClients) -> None:
        self._clients = clients
        self._stream = clients.keys.match_queue
        self._group_ready = False
        self._keep_alive = clients.commands.register_script(KEEP_ALIVE)
        self._hand_back = clients.commands.register_script(HAND_BACK)
        self._enqueue = clients.commands.register_script(ENQUEUE)
        self._ack = clients.commands.register_script(ACK)

    async def _ensure_group(self) -> None:
        if self._group_ready:
            return
        async with arena_errors("creating the match queue"):
            try:
                await self._clients.commands.xgroup_create(
                    self._stream, MATCH_QUEUE_GROUP, id="0", mkstream=True
                )
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise
        self._group_ready = True

    async def enqueue(self, matches: Sequence[QueuedMatch]) -> None:
        await self._ensure_group()
        async with arena_errors("queueing matches"):
            args: list[str] = []
            for match in matches:
                args += [match.campaign_id, str(match.index), json.dumps(match.trace_context)]
            await self._enqueue(keys=[self._stream], args=args)

    async def receive(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        await self._ensure_group()
        async with arena_errors("reading the match queue"):
            try:
                response = await self._clients.blocking.xreadgroup(
                    MATCH_QUEUE_GROUP, consumer, {self._stream: ">"}, count=count, block=block_ms
                )
            except ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
                # The stream was deleted (e.g. FLUSHDB): create the group again next time.
                self._group_ready = False
                return []
        return self._deliveries(response)

    def _deliveries(self, response: Any) -> list[Delivery]:
        found: list[Delivery] = []
        for _stream, entries in response or []:
            for entry_id, fields in entries:
                delivery = _delivery(entry_id, fields or {})
                if delivery is not None:
                    found.append(delivery)
        return found

    async def reclaim(self, consumer: str, min_idle_ms: int, count: int) -> list[Delivery]:
        await self._ensure_group()
        found: list[Delivery] = []
        broken: list[str] = []
        cursor = "0-0"
        # XAUTOCLAIM scans a bounded slice of the pending list per call: follow its cursor
        # so that dead deliveries behind many live ones are found too.
        for _ in range(_MAX_RECLAIM_SCANS):
            async with arena_errors("reclaiming matches"):
                response = await self._clients.commands.xautoclaim(
                    self._stream,
                    MATCH_QUEUE_GROUP,
                    consumer,
                    min_idle_time=min_idle_ms,
                    start_id=cursor,
                    count=count - len(found),
                )
            # [next cursor, [(id, fields)...], [ids of deleted entries]]
            cursor = _text(response[0])
            broken += [_text(i) for i in (response[2] if len(response) > 2 else [])]
            for entry_id, fields in response[1]:
                delivery = _delivery(entry_id, fields or {})
                if delivery is None:
                    broken.append(_text(entry_id))
                else:
                    found.append(delivery)
            if cursor == "0-0" or len(found) >= count:
                break
        if broken:
            # Entries that are gone or unreadable can never be played; drop them from the PEL.
            await self.ack(broken)
        return found

    async def keep_alive(self, consumer: str, delivery_ids: Sequence[str]) -> None:
        if not delivery_ids:
            return
        async with arena_errors("renewing match deliveries"):
            await self._keep_alive(keys=[self._stream], args=[MATCH_QUEUE_GROUP, consumer, *delivery_ids])

    async def prune_consumers(self) -> None:
        await self._ensure_group()
        async with arena_errors("pruning idle consumers"):
            redis = self._clients.commands
            for info in await redis.xinfo_consumers(self._stream, MATCH_QUEUE_GROUP):
                name = _text(info.get("name", b""))
                if int(info.get("pending", 1)) == 0 and int(info.get("idle", 0)) > CONSUMER_IDLE_MS:
                    await redis.xgroup_delconsumer(self._stream, MATCH_QUEUE_GROUP, name)

    async def ack(self, delivery_ids: Sequence[str]) -> None:
        if not delivery_ids:
            return
        async with arena_errors("acknowledging matches"):
            # In chunks: Lua's unpack() has a limit of a few thousand values.
            for start in range(0, len(delivery_ids), _ACK_CHUNK):
                chunk = delivery_ids[start : start + _ACK_CHUNK]
                await self._ack(keys=[self._stream], args=[MATCH_QUEUE_GROUP, *chunk])

    async def hand_back(self, consumer: str, items: Sequence[HandBack]) -> int:
        if not items:
            return 0
        await self._ensure_group()
        args: list[str] = [MATCH_QUEUE_GROUP, consumer]
        for item in items:
            args += [item.delivery.delivery_id, "1" if item.interrupted else "0"]
        async with arena_errors("handing matches back to the queue"):
            return int(await self._hand_back(keys=[self._stream], args=args))

    async def depth(self) -> int:
        async with arena_errors("measuring the match queue"):
            return int(await self._clients.commands.xlen(self._stream))

    async def close(self) -> None:
        return None


__all__ = ["RedisMatchQueue"]
