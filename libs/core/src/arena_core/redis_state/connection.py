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
from redis.asyncio import Redis
from redis.exceptions import RedisError

from arena_core.errors import ArenaError
from arena_core.redis_state.keys import RedisKeys


class StateUnavailableError(ArenaError):
    """Redis (the shared state) could not be reached or failed a command."""

    kind = "state_unavailable"
    http_status = 503
    exit_code = 6


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
        commands = Redis.from_url(
            config.url,
            max_connections=config.max_connections,
            socket_timeout=config.timeout_s,
            socket_connect_timeout=config.timeout_s,
            health_check_interval=30,
            retry_on_timeout=False,
        )
        blocking = Redis.from_url(
            config.url,
            max_connections=config.max_connections,
            socket_timeout=config.timeout_s + config.block_ms / 1000,
            socket_connect_timeout=config.timeout_s,
            health_check_interval=30,
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
    "StateUnavailableError",
    "a2a_errors",
    "arena_errors",
    "redacted",
]
