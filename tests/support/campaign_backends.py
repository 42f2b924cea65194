"""The orchestrator's state for tests: in memory, or in a real Redis with a second replica.

:func:`open_backend` gives what a fixture parametrised with ``["memory", "redis"]`` (or
``"cluster"`` too, a Redis Cluster) asks for; a Redis backend has a second "replica" (its own
connection pools over the same namespace) so races go through different connections. The
memory backend's replica is the same store and queue.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from arena_core.redis_state import RedisClients, RedisConfig, RedisKeys
from arena_core.redis_state.connection import RedisClient
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_store import CampaignStore
from arena_orchestrator.match_queue import MatchQueue, MemoryMatchQueue
from arena_orchestrator.memory_campaign_store import MemoryCampaignStore
from arena_orchestrator.redis_campaign_store import RedisCampaignStore
from arena_orchestrator.redis_match_queue import RedisMatchQueue
from support.redis_cluster import RedisClusterNodes
from support.redis_server import RedisServer

DEFAULT_MAX_MATCHES = 10_000
"""``ARENA_ORCHESTRATOR_MAX_CAMPAIGN_MATCHES`` of a test's services unless it names its own."""


def campaign_service(store: CampaignStore, queue: MatchQueue, *, max_matches: int) -> CampaignService:
    """A campaign service over ``store`` and ``queue`` that has a built-in attacker."""
    return CampaignService(store, queue, max_campaign_matches=max_matches, builtin_attacker=True)


@dataclass
class Backend:
    """A store and a queue, plus a second replica's view of the same state."""

    kind: str
    store: CampaignStore
    queue: MatchQueue
    other_store: CampaignStore
    other_queue: MatchQueue
    clients: RedisClients | None = None

    @property
    def redis(self) -> RedisClient:
        assert self.clients is not None, "a Redis-only helper used on the memory backend"
        return self.clients.commands

    @property
    def keys(self) -> RedisKeys:
        assert self.clients is not None, "a Redis-only helper used on the memory backend"
        return self.clients.keys

    def service(self, *, other: bool = False, max_matches: int = DEFAULT_MAX_MATCHES) -> CampaignService:
        """A campaign service (``other``: the second replica's)."""
        store, queue = (self.other_store, self.other_queue) if other else (self.store, self.queue)
        return campaign_service(store, queue, max_matches=max_matches)


def memory_backend() -> Backend:
    store, queue = MemoryCampaignStore(), MemoryMatchQueue()
    return Backend("memory", store, queue, store, queue)


@contextlib.asynccontextmanager
async def open_redis_backend(
    server: RedisServer | RedisClusterNodes, namespace: str, *, campaign_ttl_s: float
) -> AsyncIterator[Backend]:
    """Both replicas in ``namespace`` of ``server`` (a redis-server or a cluster); their
    connections are closed on exit."""
    config = RedisConfig(url=server.url, namespace=namespace, block_ms=1000)
    first, second = RedisClients.connect(config), RedisClients.connect(config)
    try:
        yield Backend(
            "cluster" if first.cluster else "redis",
            RedisCampaignStore(first, campaign_ttl_s=campaign_ttl_s),
            RedisMatchQueue(first),
            RedisCampaignStore(second, campaign_ttl_s=campaign_ttl_s),
            RedisMatchQueue(second),
            clients=first,
        )
    finally:
        await first.close()
        await second.close()


@contextlib.asynccontextmanager
async def open_backend(
    request: pytest.FixtureRequest, namespace: str, *, campaign_ttl_s: float
) -> AsyncIterator[Backend]:
    """The backend ``request.param`` names: ``memory``, ``redis`` (on the ``redis_server``
    fixture) or ``cluster`` (on the ``redis_cluster`` fixture)."""
    if request.param == "memory":
        yield memory_backend()
        return
    server: RedisServer | RedisClusterNodes = request.getfixturevalue(
        "redis_cluster" if request.param == "cluster" else "redis_server"
    )
    async with open_redis_backend(server, namespace, campaign_ttl_s=campaign_ttl_s) as backend:
        yield backend


__all__ = [
    "DEFAULT_MAX_MATCHES",
    "Backend",
    "campaign_service",
    "memory_backend",
    "open_backend",
    "open_redis_backend",
]
