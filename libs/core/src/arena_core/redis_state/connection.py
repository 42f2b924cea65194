"""Redis clients for the arena, and what to do when Redis is away.

Two connection pools per process: one for ordinary commands (short socket
timeout, so a missing Redis fails requests fast instead of hanging them) and
one for blocking stream reads (its timeout must outlast ``XREAD BLOCK``).
redis-py reconnects on the next command once Redis is back, so services
recover by themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from a2a.utils.errors import InternalError
from redis.asyncio import BlockingConnectionPool, Redis
from redis.exceptions import RedisError

from arena_core.errors import StateUnavailableError
from arena_core.redis_state.keys import RedisKeys


@dataclass(frozen=True, slots=True)
class RedisConfig:
    """How to reach Redis. See ``ARENA_REDIS_*`` in deploy/.env.example."""

    url: str
    namespace: str = ""
    max_connections: int = 64
    timeout_s: float = 2.0
    block_ms: int = 5000
    task_ttl_s: float = 86_400.0
    stream_maxlen: int = 1000


@dataclass(slots=True)
class RedisClients:
    """The command client, the blocking-read client and the key builder."""

    commands: Redis
    blocking: Redis
    keys: RedisKeys
    config: RedisConfig

    @classmethod
    def connect(cls, config: RedisConfig) -> RedisClients:
        """Create the pools; no connection is opened until the first command."""
        commands = pooled_redis(
            config.url,
            max_connections=config.max_connections,
            timeout_s=config.timeout_s,
            retry_on_timeout=False,
        )
        blocking = pooled_redis(
            config.url,
            max_connections=config.max_connections,
            timeout_s=config.timeout_s,
            socket_timeout_s=config.timeout_s + config.block_ms / 1000,
        )
        return cls(commands, blocking, RedisKeys(config.namespace), config)

    async def close(self) -> None:
        """Close both pools."""
        await self.commands.aclose()
        await self.blocking.aclose()

    async def problem(self) -> str | None:
        """None when Redis answers PING, else a sentence saying why not (for /readyz)."""
        try:
            await self.commands.ping()
        except (RedisError, OSError) as exc:
            return f"Redis at {redacted(self.config.url)} is not reachable ({type(exc).__name__})"
        return None


def pooled_redis(
    url: str,
    *,
    max_connections: int,
    timeout_s: float,
    socket_timeout_s: float | None = None,
    retry_on_timeout: bool | None = None,
) -> Redis:
    """A client whose pool holds at most ``max_connections`` and makes a command that finds
    them all busy wait up to ``timeout_s`` for one (then ``ConnectionError``).

    redis-py's default pool fails such a command at once (``MaxConnectionsError``): an
    orchestrator running 64 matches with 64 connections refused campaigns under load
    (bench/campaign.py found it). Socket reads time out after ``socket_timeout_s``
    (default ``timeout_s``), connects after ``timeout_s``.
    """
    options: dict[str, object] = {}
    if retry_on_timeout is not None:
        options["retry_on_timeout"] = retry_on_timeout
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout_s,
        socket_timeout=timeout_s if socket_timeout_s is None else socket_timeout_s,
        socket_connect_timeout=timeout_s,
        health_check_interval=30,
        **options,
    )
    return Redis.from_pool(pool)


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.partition(":")[0]
    return f"{scheme}{sep}{user + ':***@' if user else '***@'}{host}"


@contextlib.asynccontextmanager
async def a2a_errors(what: str) -> AsyncIterator[None]:
    """Turn Redis failures inside an A2A request into a clear A2A internal error."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise InternalError(
            message=f"shared state unavailable while {what}: {type(exc).__name__}: {exc}"
        ) from exc


@contextlib.asynccontextmanager
async def arena_errors(what: str) -> AsyncIterator[None]:
    """Turn Redis failures into :class:`StateUnavailableError`."""
    try:
        yield
    except (RedisError, OSError) as exc:
        raise StateUnavailableError(
            f"shared state unavailable while {what}: {type(exc).__name__}: {exc}"
        ) from exc


__all__ = [
    "RedisClients",
    "RedisConfig",
    "a2a_errors",
    "arena_errors",
    "redacted",
]
