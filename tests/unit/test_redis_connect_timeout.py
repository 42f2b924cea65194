"""Opening a Redis connection has its own, longer timeout (``ARENA_REDIS_CONNECT_TIMEOUT_S``).

A command, and the wait for a free pooled connection, stay bounded by ``ARENA_REDIS_TIMEOUT_S``
(fail fast while Redis is away); opening a new connection may take
``ARENA_REDIS_CONNECT_TIMEOUT_S``, so that one lost DNS or SYN packet on a busy network does not
fail a match. The Compose engine test lost a match to a 2 s connect timeout inside a container
network. No connection is opened here: the pools are built and read.
"""

from __future__ import annotations

import pytest

from arena_core.rate_limit import RedisRateLimiter, create_target_rate_limiter
from arena_core.redis_state import RedisClients
from arena_core.settings import ArenaSettings
from arena_core.state_backend import redis_config


def _settings(url: str) -> ArenaSettings:
    return ArenaSettings(redis_url=url, redis_timeout_s=1.5, redis_connect_timeout_s=7.0)


def test_the_setting_defaults_to_ten_seconds() -> None:
    assert ArenaSettings().redis_connect_timeout_s == 10.0


@pytest.mark.asyncio
async def test_single_redis_pools_take_the_connect_timeout_apart_from_the_command_timeout() -> None:
    config = redis_config(_settings("redis://127.0.0.1:6399/0"))
    assert config is not None
    clients = RedisClients.connect(config)
    try:
        blocking_read_s = 1.5 + config.block_ms / 1000
        for client, read_timeout in ((clients.commands, 1.5), (clients.blocking, blocking_read_s)):
            kwargs = client.connection_pool.connection_kwargs
            assert kwargs["socket_connect_timeout"] == 7.0
            assert kwargs["socket_timeout"] == read_timeout
        assert clients.commands.connection_pool.timeout == 1.5  # the wait for a free connection
    finally:
        await clients.close()


@pytest.mark.asyncio
async def test_cluster_clients_take_the_connect_timeout() -> None:
    config = redis_config(_settings("redis+cluster://127.0.0.1:7001,127.0.0.1:7002"))
    assert config is not None
    clients = RedisClients.connect(config)
    try:
        for client in (clients.commands, clients.blocking):
            kwargs = client.nodes_manager.connection_kwargs
            assert kwargs["socket_connect_timeout"] == 7.0
    finally:
        await clients.close()


@pytest.mark.asyncio
async def test_the_shared_rate_limiter_takes_the_connect_timeout() -> None:
    settings = ArenaSettings(
        redis_url="redis://127.0.0.1:6399/0", redis_connect_timeout_s=7.0, target_rate_limit=5.0
    )
    limiter = create_target_rate_limiter(settings)
    assert isinstance(limiter, RedisRateLimiter)
    try:
        assert limiter._redis.connection_pool.connection_kwargs["socket_connect_timeout"] == 7.0
    finally:
        await limiter.close()
