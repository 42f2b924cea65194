"""The match queue: at-least-once delivery of ``(campaign, match index)`` to workers.

:class:`RedisMatchQueue` is a Redis Stream read through one consumer group by
every orchestrator replica; :class:`MemoryMatchQueue` serves one process. A
delivery stays pending until acknowledged; the worker acknowledges only after
the match's record is stored. Deliveries a dead worker held are reclaimed by
another after the visibility timeout, so a match may be delivered more than
once, and the idempotent record makes it count once.

A worker shutting down gracefully does not leave its deliveries to that
timeout: it hands them back (:meth:`MatchQueue.hand_back`), which queues the
match again at once and acknowledges the old delivery in one step, so another
worker takes it straight away. A match handed back in the middle of a try
carries that in ``handbacks``: the worker does not charge such tries to the
match's attempts (a shutdown is not a failure of the match).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class QueuedMatch:
    """What the queue carries for one match."""

    campaign_id: str
    index: int
    trace_context: dict[str, str] = field(default_factory=dict)
    handbacks: int = 0
    """Tries of this match that stopping workers cut short and handed back: not charged as attempts."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery of a queued match; ``delivery_id`` is what gets acknowledged."""

    delivery_id: str
    match: QueuedMatch


@dataclass(frozen=True, slots=True)
class HandBack:
    """A delivery a stopping worker gives back; ``interrupted``: a try of it was cut short."""

    delivery: Delivery
    interrupted: bool = False


class MatchQueue(Protocol):
    """At-least-once queue of matches shared by workers."""

    async def enqueue(self, matches: Sequence[QueuedMatch]) -> None:
        """Append matches (atomically as a batch)."""
        ...

    async def receive(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        """Up to ``count`` new deliveries for ``consumer``, waiting at most ``block_ms``."""
        ...

    async def reclaim(self, consumer: str, min_idle_ms: int, count: int) -> list[Delivery]:
        """Take over up to ``count`` deliveries idle for ``min_idle_ms`` (their worker died)."""
        ...

    async def keep_alive(self, consumer: str, delivery_ids: Sequence[str]) -> None:
        """Reset the idle time of those deliveries that ``consumer`` still holds (one taken over
        by another consumer stays with it)."""
        ...

    async def prune_consumers(self) -> None:
        """Forget consumers (dead workers) that hold nothing and were idle for long."""
        ...

    async def ack(self, delivery_ids: Sequence[str]) -> None:
        """Done with these deliveries: they are never delivered again."""
        ...

    async def hand_back(self, consumer: str, items: Sequence[HandBack]) -> int:
        """Queue these matches again for any worker, now, and acknowledge their deliveries, each
        in one atomic step; an interrupted one counts one more hand-back. Deliveries ``consumer``
        no longer holds (acknowledged, or taken over by another worker) are skipped. Returns how
        many were handed back."""
        ...

    async def depth(self) -> int:
        """Matches waiting or in progress (for metrics and readiness)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class MemoryMatchQueue:
    """A :class:`MatchQueue` for one process: nothing to reclaim, nothing survives."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Delivery] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._pending: set[str] = set()

    async def enqueue(self, matches: Sequence[QueuedMatch]) -> None:
        for match in matches:
            delivery = Delivery(str(next(self._ids)), match)
            self._pending.add(delivery.delivery_id)
            self._queue.put_nowait(delivery)

    async def receive(self, consumer: str, count: int, block_ms: int) -> list[Delivery]:
        found: list[Delivery] = []
        if self._queue.empty():
            try:
                async with asyncio.timeout(block_ms / 1000):
                    found.append(await self._queue.get())
            except TimeoutError:
                return []
        while len(found) < count and not self._queue.empty():
            found.append(self._queue.get_nowait())
        return found

    async def reclaim(self, consumer: str, min_idle_ms: int, count: int) -> list[Delivery]:
        return []

    async def keep_alive(self, consumer: str, delivery_ids: Sequence[str]) -> None:
        return None

    async def prune_consumers(self) -> None:
        return None

    async def ack(self, delivery_ids: Sequence[str]) -> None:
        self._pending.difference_update(delivery_ids)

    async def hand_back(self, consumer: str, items: Sequence[HandBack]) -> int:
        handed = 0
        for item in items:
            old = item.delivery
            if old.delivery_id not in self._pending:
                continue
            self._pending.discard(old.delivery_id)
            match = dataclasses.replace(old.match, handbacks=old.match.handbacks + int(item.interrupted))
            await self.enqueue([match])
            handed += 1
        return handed

    async def depth(self) -> int:
        return len(self._pending)

    async def close(self) -> None:
        return None


__all__ = ["Delivery", "HandBack", "MatchQueue", "MemoryMatchQueue", "QueuedMatch"]
