"""Shared state in Redis: a2a-sdk cluster-mode stores and conversation history.

Selected by ``ARENA_REDIS_URL``; without it every agent keeps its state in
memory. Key layout: :mod:`arena_core.redis_state.keys`.
"""

from arena_core.redis_state.connection import (
    RedisClients,
    RedisConfig,
    redacted,
)
from arena_core.redis_state.keys import PREFIX, RedisKeys
from arena_core.redis_state.redis_conversation_store import RedisConversationStore
from arena_core.redis_state.redis_shop_store import RedisShopStore
from arena_core.redis_state.redis_task_event_stream import RedisTaskEventStream
from arena_core.redis_state.redis_task_store import RedisTaskStore

__all__ = [
    "PREFIX",
    "RedisClients",
    "RedisConfig",
    "RedisConversationStore",
    "RedisKeys",
    "RedisShopStore",
    "RedisTaskEventStream",
    "RedisTaskStore",
    "redacted",
]
