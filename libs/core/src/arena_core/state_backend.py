"""Pick where an agent keeps its state: in memory, or in Redis when configured.

``ARENA_REDIS_URL`` set: tasks, task events, conversation history and the support
desk's back office per conversation live in Redis and any replica can serve any turn.
Unset: bounded in-memory stores with the same semantics (one process; the embedded
default for ``arena demo``).
Either way a task keeps the newest ``ARENA_HISTORY_MAX_MESSAGES`` messages of
its history (:mod:`arena_core.task_retention`) and expires ``ARENA_TASK_TTL_S``
after its last write; in memory at most ``ARENA_MAX_TASKS`` tasks are held.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from a2a.server.cluster import TaskEventStream, VersionedTaskStore
from a2a.server.tasks import TaskStore

from arena_core.conversation_store import ConversationStore, InMemoryConversationStore
from arena_core.memory_cluster_state import InMemoryTaskEventStream, InMemoryVersionedTaskStore
from arena_core.redis_state import (
    RedisClients,
    RedisConfig,
    RedisConversationStore,
    RedisShopStore,
    RedisTaskEventStream,
    RedisTaskStore,
)
from arena_core.settings import ArenaSettings
from arena_core.shop_store import InMemoryShopStore, ShopStore


@dataclass(slots=True)
class StateBackend:
    """The stores of one agent process and how to check and close them."""

    task_store: TaskStore | VersionedTaskStore
    event_stream: TaskEventStream | None
    conversations: ConversationStore
    shops: ShopStore
    """The support desk's back office per conversation (used by the ``support-desk`` profiles)."""
    readiness: Callable[[], Awaitable[str | None]] | None
    close: Callable[[], Awaitable[None]]
    description: str


async def _nothing() -> None:
    return None


def redis_config(settings: ArenaSettings) -> RedisConfig | None:
    """The Redis configuration, or None when ``ARENA_REDIS_URL`` is unset."""
    if settings.redis_url is None:
        return None
    return RedisConfig(
        url=settings.redis_url,
        namespace=settings.redis_namespace,
        max_connections=settings.redis_max_connections,
        timeout_s=settings.redis_timeout_s,
        connect_timeout_s=settings.redis_connect_timeout_s,
        block_ms=settings.redis_block_ms,
        task_ttl_s=settings.task_ttl_s,
        stream_maxlen=settings.event_stream_maxlen,
    )


def create_state_backend(settings: ArenaSettings) -> StateBackend:
    """Build the stores the settings ask for. Opens no connection yet."""
    config = redis_config(settings)
    if config is None:
        store = InMemoryVersionedTaskStore(
            ttl_s=settings.task_ttl_s,
            max_tasks=settings.max_tasks,
            stream_maxlen=settings.event_stream_maxlen,
            history_max_messages=settings.history_max_messages,
        )
        return StateBackend(
            task_store=store,
            event_stream=InMemoryTaskEventStream(store),
            conversations=InMemoryConversationStore(
                max_messages=settings.history_max_messages,
                max_bytes=settings.history_max_bytes,
                max_conversations=settings.max_conversations,
                ttl_s=settings.conversation_ttl_s,
            ),
            shops=InMemoryShopStore(
                max_conversations=settings.max_conversations, ttl_s=settings.conversation_ttl_s
            ),
            readiness=None,
            close=_nothing,
            description="in memory",
        )
    clients = RedisClients.connect(config)
    return StateBackend(
        task_store=RedisTaskStore(clients, history_max_messages=settings.history_max_messages),
        event_stream=RedisTaskEventStream(clients),
        conversations=RedisConversationStore(
            clients,
            max_messages=settings.history_max_messages,
            max_bytes=settings.history_max_bytes,
            ttl_s=settings.conversation_ttl_s,
        ),
        shops=RedisShopStore(clients, ttl_s=settings.conversation_ttl_s),
        readiness=clients.problem,
        close=clients.close,
        description="redis",
    )


__all__ = ["StateBackend", "create_state_backend", "redis_config"]
