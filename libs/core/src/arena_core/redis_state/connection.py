"""Redis clients for the arena, and what to do when Redis is away.

Two connection pools per process: one for ordinary commands (short socket
timeout, so a missing Redis fails requests fast instead of hanging them) and
one for blocking stream reads (its timeout must outlast ``XREAD BLOCK``).
redis-py reconnects on the next command once Redis is back, so services
recover by themselves.

``ARENA_REDIS_URL`` names a single Redis (``redis://`` or ``rediss://``, as redis-py reads
them) or a Redis Cluster: ``redis+cluster://[user:password@]host:port[,host:port...]``
(``rediss+cluster://`` for TLS), one or more seed nodes from which redis-py learns the
cluster's slots and follows them through failovers (ADR 0022).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeAlias

from a2a.utils.errors import InternalError
from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from arena_core.errors import StateUnavailableError
from arena_core.redis_state.keys import RedisKeys
from arena_core.redis_url import cluster_nodes, is_cluster_url


@dataclass(frozen=True, slots=True)
class RedisConfig:
    """How to reach Redis. See ``ARENA_REDIS_*`` in deploy/.env.example.

    ``timeout_s`` bounds a command and the wait for a free pooled connection;
    ``connect_timeout_s`` bounds opening a new one (the host name's lookup and the TCP
    connect). It is longer on purpose: one lost DNS or SYN packet costs the resolver or the
    kernel seconds before it asks again (5 s for glibc's resolver, 1 s then 3 s for a SYN), and
    a connection opened under load must not fail a match for it. A Redis that is down refuses
    at once, so it still fails fast.
    """

    url: str
    namespace: str = ""
    max_connections: int = 64
    timeout_s: float = 2.0
    connect_timeout_s: float = 10.0
    block_ms: int = 5000
    task_ttl_s: float = 86_400.0
    stream_maxlen: int = 1000


RedisClient: TypeAlias = "Redis | RedisCluster"
"""A client of a single Redis or of a Redis Cluster; both speak the same commands."""


@dataclass(slots=True)
class RedisClients:
    """The command client, the blocking-read client and the key builder."""

    commands: RedisClient
    blocking: RedisClient
    keys: RedisKeys
    config: RedisConfig

    @property
    def cluster(self) -> bool:
        """Whether the clients speak to a Redis Cluster (a script may then touch one slot only)."""
        return isinstance(self.commands, RedisCluster)

    @classmethod
    def connect(cls, config: RedisConfig) -> RedisClients:
        """Create the pools; no connection is opened until the first command."""
        commands: RedisClient
        blocking: RedisClient
        if is_cluster_url(config.url):
            commands = cluster_redis(
                config.url,
                max_connections=config.max_connections,
                timeout_s=config.timeout_s,
                connect_timeout_s=config.connect_timeout_s,
            )
            blocking = cluster_redis(
                config.url,
                max_connections=config.max_connections,
                timeout_s=config.timeout_s,
                connect_timeout_s=config.connect_timeout_s,
                socket_timeout_s=config.timeout_s + config.block_ms / 1000,
            )
            return cls(commands, blocking, RedisKeys(config.namespace), config)
        commands = pooled_redis(
            config.url,
            max_connections=config.max_connections,
            timeout_s=config.timeout_s,
            connect_timeout_s=config.connect_timeout_s,
            retry_on_timeout=False,
        )
        blocking = pooled_redis(
            config.url,
            max_connections=config.max_connections,
            timeout_s=config.timeout_s,
            connect_timeout_s=config.connect_timeout_s,
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
    connect_timeout_s: float | None = None,
    socket_timeout_s: float | None = None,
    retry_on_timeout: bool | None = None,
) -> Redis:
    """A client whose pool holds at most ``max_connections`` and makes a command that finds
    them all busy wait up to ``timeout_s`` for one (then ``ConnectionError``).

    redis-py's default pool fails such a command at once (``MaxConnectionsError``): an
    orchestrator running 64 matches with 64 connections refused campaigns under load
    (bench/campaign.py found it). Socket reads time out after ``socket_timeout_s``
    (default ``timeout_s``); opening a connection (the name's lookup and the TCP connect)
    after ``connect_timeout_s`` (default ``timeout_s``; see :class:`RedisConfig`).
    """
    options: dict[str, object] = {}
    if retry_on_timeout is not None:
        options["retry_on_timeout"] = retry_on_timeout
    pool = BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout_s,
        socket_timeout=timeout_s if socket_timeout_s is None else socket_timeout_s,
        socket_connect_timeout=timeout_s if connect_timeout_s is None else connect_timeout_s,
        health_check_interval=30,
        **options,
    )
    return Redis.from_pool(pool)


class _WaitingRedisCluster(RedisCluster):
    """A cluster client whose commands wait for a free connection instead of failing.

    redis-py's cluster nodes raise ``MaxConnectionsError`` at once when their pool is
    exhausted (the single-Redis pool waits, :func:`pooled_redis`). Commands here take one
    of ``in_flight`` permits first, waiting up to ``wait_s`` (then ``ConnectionError``, as
    the single-Redis pool says it); each node's pool holds twice as many connections, so
    pipelines (not gated: a pipeline retries its commands through this client) have room.
    """

    def __init__(self, *args: Any, in_flight: int, wait_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gate = asyncio.Semaphore(in_flight)
        self._wait_s = wait_s

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            # asyncio.timeout, not wait_for: a permit granted as the time runs out is never lost.
            async with asyncio.timeout(self._wait_s):
                await self._gate.acquire()
        except TimeoutError as exc:
            raise RedisConnectionError(f"no free Redis Cluster connection within {self._wait_s:g} s") from exc
        try:
            return await super().execute_command(*args, **kwargs)
        finally:
            self._gate.release()


def cluster_redis(
    url: str,
    *,
    max_connections: int,
    timeout_s: float,
    connect_timeout_s: float | None = None,
    socket_timeout_s: float | None = None,
) -> RedisCluster:
    """A Redis Cluster client for a ``redis+cluster://`` URL (see :func:`cluster_nodes`):
    ``max_connections`` commands in flight, waiting up to ``timeout_s`` for one."""
    node_url, seeds = cluster_nodes(url)
    return _WaitingRedisCluster.from_url(
        node_url,
        startup_nodes=[ClusterNode(host, port) for host, port in seeds[1:]],
        in_flight=max_connections,
        wait_s=timeout_s,
        max_connections=2 * max_connections,
        socket_timeout=timeout_s if socket_timeout_s is None else socket_timeout_s,
        socket_connect_timeout=timeout_s if connect_timeout_s is None else connect_timeout_s,
        health_check_interval=30,
    )


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
    "RedisClient",
    "RedisClients",
    "RedisConfig",
    "a2a_errors",
    "arena_errors",
    "cluster_redis",
    "pooled_redis",
    "redacted",
]
