"""``RedisConversationStore``: conversation history shared by defender replicas.

One Redis list per conversation (its key: caller and contextId,
:func:`arena_core.caller_scope.conversation_key`), appended and trimmed by one Lua script
(:data:`~arena_core.redis_state.scripts.APPEND_HISTORY`) so that concurrent
replicas never leave it above its bounds; a byte counter beside it enforces
the byte bound. Both expire ``ttl_s`` after the last append. Messages are JSON
objects ``{"role": ..., "content": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from arena_core.conversation_store import ConversationStore
from arena_core.llm.chat_model import Message
from arena_core.redis_state.connection import RedisClients, arena_errors
from arena_core.redis_state.scripts import APPEND_HISTORY


class RedisConversationStore(ConversationStore):
    """History per conversation key in Redis, bounded in messages and bytes."""

    def __init__(
        self,
        clients: RedisClients,
        *,
        max_messages: int = 40,
        max_bytes: int = 64_000,
        ttl_s: float = 3600.0,
    ) -> None:
        self._redis = clients.commands
        self._keys = clients.keys
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._ttl_ms = int(ttl_s * 1000)
        self._append = self._redis.register_script(APPEND_HISTORY)

    async def load(self, key: str) -> list[Message]:
        async with arena_errors("loading a conversation"):
            raw = await self._redis.lrange(self._keys.conversation(key), 0, -1)
        messages: list[Message] = []
        for item in raw:
            value = json.loads(item)
            if isinstance(value, dict):
                messages.append(value)
        return messages

    async def append(self, key: str, messages: Sequence[Message]) -> None:
        if not messages:
            return
        encoded = [json.dumps(dict(message), separators=(",", ":")) for message in messages]
        async with arena_errors("saving a conversation"):
            await self._append(
                keys=[self._keys.conversation(key), self._keys.conversation_bytes(key)],
                args=[self._max_messages, self._max_bytes, self._ttl_ms, *encoded],
            )

    async def delete(self, key: str) -> None:
        async with arena_errors("deleting a conversation"):
            await self._redis.delete(self._keys.conversation(key), self._keys.conversation_bytes(key))


__all__ = ["RedisConversationStore"]
