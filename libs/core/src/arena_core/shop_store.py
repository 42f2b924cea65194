"""Where a ``support-desk`` defender keeps each conversation's back office.

The support desk's tools act on a :class:`~arena_core.support_desk.ShopState` of the
conversation (its key: caller and contextId, :func:`arena_core.caller_scope.conversation_key`,
as the history's): a refund issued on the first turn is there on the second, and
in no other conversation. The state lives beside the conversation's history, in the same
store: in memory (bounded: at most ``max_conversations``, least recently used evicted,
expired ``ttl_s`` after the last turn that loaded or saved it) or in Redis (one JSON string per
conversation, :meth:`~arena_core.redis_state.keys.RedisKeys.shop_state`, expiring ``ttl_s``
after the last load or save), so any replica can serve any turn. Every turn loads it, so it
lives as long as the conversation's history beside it.

Turns of one conversation are played one after another by the clients the arena knows; two
turns of the same conversation at the same time would each save their own copy, the later
one winning. A state that no longer reads (a store written by another version) is a
:class:`~arena_core.errors.StateCorruptError`, never silently replaced with a fresh one: the
conversation's actions would vanish.
"""

from __future__ import annotations

import abc
import time
from collections import OrderedDict

from pydantic import ValidationError

from arena_core.conversation_store import Clock
from arena_core.errors import StateCorruptError
from arena_core.support_desk import ShopState


class ShopStore(abc.ABC):
    """The back office of each conversation, by conversation key (caller and contextId)."""

    @abc.abstractmethod
    async def load(self, key: str) -> ShopState | None:
        """The conversation's state as last saved, or None when it has none (new or expired);
        restarts its expiry."""

    @abc.abstractmethod
    async def save(self, key: str, state: ShopState) -> None:
        """Keep ``state`` as the conversation's state (and restart its expiry)."""


def decode_state(raw: str | bytes, key: str) -> ShopState:
    """A saved state, or :class:`StateCorruptError` saying it does not read."""
    try:
        return ShopState.model_validate_json(raw)
    except ValidationError as exc:
        raise StateCorruptError(
            f"the support desk's saved state of conversation {key[:80]!r} does not read "
            f"({exc.error_count()} problem(s)); it was written by another version"
        ) from exc


class InMemoryShopStore(ShopStore):
    """Process-local states, bounded in number and age (the embedded default)."""

    def __init__(
        self,
        *,
        max_conversations: int = 10_000,
        ttl_s: float = 3600.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self._max = max_conversations
        self._ttl_s = ttl_s
        self._clock = clock
        # Kept as JSON: a caller that changes the state it loaded changes nothing until it saves.
        self._states: OrderedDict[str, tuple[float, str]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    async def load(self, key: str) -> ShopState | None:
        now = self._clock()
        self._expire(now)
        held = self._states.get(key)
        if held is None:
            return None
        self._states[key] = (now, held[1])
        self._states.move_to_end(key)
        return decode_state(held[1], key)

    async def save(self, key: str, state: ShopState) -> None:
        now = self._clock()
        self._expire(now)
        self._states[key] = (now, state.model_dump_json())
        self._states.move_to_end(key)
        while len(self._states) > self._max:
            self._states.popitem(last=False)

    def _expire(self, now: float) -> None:
        while self._states:
            key, (saved, _) = next(iter(self._states.items()))
            if now - saved < self._ttl_s:
                return
            del self._states[key]


__all__ = ["InMemoryShopStore", "ShopStore", "decode_state"]
