"""Per-target rate limits: the arena must not hammer the agents it attacks.

Every HTTP request the attacker sends to a target (the card fetch, each A2A
message, a retry after a 429) first takes a slot from the limiter of the
request's *origin* (:class:`~arena_core.origin.Origin`, ``scheme://host:port``),
at ``ARENA_TARGET_RATE_LIMIT`` requests per second with bursts of
``ARENA_TARGET_RATE_BURST``. ``0`` turns the limit off.

The algorithm is GCRA (the generic cell rate algorithm, a token bucket kept as
one number per origin): the *theoretical arrival time* ``tat`` of the next
request. A request at ``now`` gets the slot ``max(tat, now) + interval``, where
``interval = 1 / rate``; it may go out once that slot is at most ``burst *
interval`` ahead of ``now``, so over any time span ``t`` no more than ``burst +
rate * t`` requests start. A request that must wait *reserves* its slot at once
and sleeps until it is due, so waiters go out in order and nobody polls. A wait
longer than what is left before the request's own deadline is not reserved: the
request fails with :class:`~arena_core.errors.TargetRateLimitedError` (kind
``rate_limited``, retryable: worth another try later, never a defence).

Two implementations:

* :class:`LocalRateLimiter`: in process; one ``tat`` per origin in a bounded,
  least-recently-used dict that forgets idle origins (an origin whose ``tat``
  has passed holds no state worth keeping).
* :class:`RedisRateLimiter`: shared by every attacker replica of one Redis (and
  namespace): the same arithmetic in one Lua script (atomic, Redis's own clock),
  one key per origin, ``arena:[ns:]ratelimit:{origin}``, expiring once idle. When
  Redis fails it falls back to a :class:`LocalRateLimiter`, logs that once, and
  tries Redis again after a few seconds: a limiter never loses a match.

:func:`retry_after_s` reads a target's ``Retry-After`` (seconds or an HTTP date);
:meth:`RateLimiter.hold` pushes an origin's next slot past it, so every replica
backs off, not only the request that got the 429.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import contextvars
import email.utils
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx
from redis.exceptions import RedisError

from arena_core.errors import TargetRateLimitedError
from arena_core.origin import Origin

if TYPE_CHECKING:
    from arena_core.redis_state.connection import RedisClient
    from arena_core.redis_state.keys import RedisKeys
    from arena_core.settings import ArenaSettings

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

DEFAULT_MAX_ORIGINS = 10_000
"""Origins an in-process limiter remembers at most (idle ones are forgotten first)."""

REDIS_RETRY_S = 5.0
"""After a Redis failure, how long the in-process fallback is used before Redis is tried again."""

_EPSILON_S = 1e-6


@dataclass(frozen=True, slots=True)
class RateLimit:
    """``rate`` requests per second to one origin, bursts of ``burst``; rate 0: unlimited."""

    rate: float
    burst: int = 1

    def __post_init__(self) -> None:
        if not (self.rate >= 0 and math.isfinite(self.rate)):
            raise ValueError(f"rate must be a finite number >= 0, not {self.rate!r}")
        if self.burst < 1:
            raise ValueError(f"burst must be at least 1, not {self.burst!r}")

    @classmethod
    def from_settings(cls, settings: ArenaSettings) -> RateLimit:
        """``ARENA_TARGET_RATE_LIMIT`` and ``ARENA_TARGET_RATE_BURST``."""
        return cls(rate=settings.target_rate_limit, burst=settings.target_rate_burst)

    @property
    def unlimited(self) -> bool:
        """True when no limit applies (rate 0)."""
        return self.rate == 0

    @property
    def interval_s(self) -> float:
        """Seconds between two requests at the sustained rate."""
        return 1.0 / self.rate

    def describe(self) -> str:
        """For messages: ``10 requests/s (bursts of 10)``."""
        if self.unlimited:
            return "unlimited"
        return f"{self.rate:g} requests/s (bursts of {self.burst})"


def target_origin(url: httpx.URL | str) -> str:
    """``scheme://host:port`` of ``url`` (default port filled in): what a limit is counted per,
    and the key part of :func:`rate_limit_key`."""
    return str(Origin.of(url))


def retry_after_s(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or an HTTP date), or None.

    None when the header is missing or unreadable; 0 for a date in the past.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


# --- deadlines -------------------------------------------------------------------------------

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "arena_target_deadline", default=None
)


@contextlib.contextmanager
def deadline_scope(deadline: float) -> Iterator[None]:
    """Within this block (tasks started inside included) no rate-limit wait may end after
    ``deadline`` (a ``time.monotonic()`` instant, e.g. the end of the match)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def current_deadline() -> float | None:
    """The innermost :func:`deadline_scope`'s deadline, or None."""
    return _deadline.get()


# --- limiters -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reservation:
    """What a limiter answered: ``granted`` with ``wait_s`` to sleep first, or refused
    because the slot is ``wait_s`` away (more than the caller could wait)."""

    granted: bool
    wait_s: float


class RateLimiter(abc.ABC):
    """Per-origin limits. Subclasses implement :meth:`_reserve` and :meth:`_hold`."""

    def __init__(
        self, limit: RateLimit, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.limit = limit
        self.clock = clock
        self.sleep = sleep

    async def acquire(self, origin: str, *, max_wait_s: float) -> float:
        """Take a slot for one request to ``origin``, sleeping until it is due; return the wait.

        Raises :class:`TargetRateLimitedError` when the slot is further away than
        ``max_wait_s`` (nothing is reserved then).
        """
        if self.limit.unlimited:
            return 0.0
        reservation = await self._reserve(origin, max(0.0, max_wait_s))
        if not reservation.granted:
            raise TargetRateLimitedError(
                f"the rate limit for {origin} ({self.limit.describe()}, ARENA_TARGET_RATE_LIMIT and "
                f"ARENA_TARGET_RATE_BURST) has no slot for {reservation.wait_s:.1f} s, longer than the "
                f"{max(0.0, max_wait_s):.1f} s left before the request's deadline; try again later"
            )
        if reservation.wait_s > 0:
            await self.sleep(reservation.wait_s)
        return reservation.wait_s

    async def hold(self, origin: str, seconds: float) -> None:
        """Let no new request to ``origin`` start for ``seconds`` (a target's Retry-After)."""
        if self.limit.unlimited or seconds <= 0:
            return
        await self._hold(origin, seconds)

    @abc.abstractmethod
    async def _reserve(self, origin: str, max_wait_s: float) -> Reservation:
        """Book the next slot for ``origin`` if it is due within ``max_wait_s``."""

    @abc.abstractmethod
    async def _hold(self, origin: str, seconds: float) -> None:
        """Push ``origin``'s next slot at least ``seconds`` into the future."""

    async def close(self) -> None:  # noqa: B027 - optional: only the Redis limiter holds connections
        """Release connections, if any."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.limit.describe()})"


class LocalRateLimiter(RateLimiter):
    """GCRA in this process; remembers at most ``max_origins`` origins, idle ones forgotten first."""

    def __init__(
        self,
        limit: RateLimit,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        max_origins: int = DEFAULT_MAX_ORIGINS,
    ) -> None:
        super().__init__(limit, clock=clock, sleep=sleep)
        if max_origins < 1:
            raise ValueError("max_origins must be at least 1")
        self._max_origins = max_origins
        # origin -> theoretical arrival time of its next request, least recently used first.
        self._tat: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        """Origins remembered now."""
        return len(self._tat)

    def reserve_now(self, origin: str, max_wait_s: float) -> Reservation:
        """:meth:`_reserve` without awaiting (the arithmetic is synchronous here)."""
        now = self.clock()
        interval = self.limit.interval_s
        tat = max(self._tat.get(origin, now), now)
        slot = tat + interval
        wait = slot - self.limit.burst * interval - now
        if wait > max_wait_s + _EPSILON_S:
            return Reservation(granted=False, wait_s=wait)
        self._remember(origin, slot, now)
        # Float rounding must not turn the burst's last request into a microscopic sleep.
        return Reservation(granted=True, wait_s=wait if wait > _EPSILON_S else 0.0)

    def hold_now(self, origin: str, seconds: float) -> None:
        """:meth:`_hold` without awaiting."""
        now = self.clock()
        interval = self.limit.interval_s
        # The next request's slot - burst * interval (when it may start) lands at now + seconds.
        held = now + seconds + (self.limit.burst - 1) * interval
        self._remember(origin, max(self._tat.get(origin, now), held), now)

    async def _reserve(self, origin: str, max_wait_s: float) -> Reservation:
        return self.reserve_now(origin, max_wait_s)

    async def _hold(self, origin: str, seconds: float) -> None:
        self.hold_now(origin, seconds)

    def _remember(self, origin: str, tat: float, now: float) -> None:
        self._tat[origin] = tat
        self._tat.move_to_end(origin)
        # An origin whose tat has passed is as good as new: forget it. Least recently used first;
        # amortised O(1), and the dict never grows beyond max_origins.
        while self._tat:
            oldest, oldest_tat = next(iter(self._tat.items()))
            if oldest_tat > now and len(self._tat) <= self._max_origins:
                break
            del self._tat[oldest]


# KEYS[1]: the origin's key. ARGV: 1 interval (µs), 2 burst, 3 mode ("take" or "hold"),
# 4 most to wait (µs, take) or how long to hold (µs, hold).
# Returns {granted (1/0), wait (µs)}. Times are Redis's clock (TIME), shared by every replica.
GCRA_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tau = interval * tonumber(ARGV[2])
local stored = redis.call('GET', KEYS[1])
local tat = now
if stored then
  tat = math.max(tonumber(stored), now)
end
local slot
local wait = 0
if ARGV[3] == 'hold' then
  slot = math.max(tat, now + tonumber(ARGV[4]) + tau - interval)
else
  slot = tat + interval
  wait = slot - tau - now
  if wait > tonumber(ARGV[4]) then
    return {0, math.ceil(wait)}
  end
end
local ttl_ms = math.ceil((slot - now) / 1000) + 1
redis.call('SET', KEYS[1], string.format('%.0f', slot), 'PX', ttl_ms)
if wait < 0 then
  wait = 0
end
return {1, math.ceil(wait)}
"""


def rate_limit_key(keys: RedisKeys, origin: str) -> str:
    """``arena:[ns:]ratelimit:{<origin>}``, the origin escaped like every other key part."""
    return keys.rate_limit(origin)


class RedisRateLimiter(RateLimiter):
    """GCRA in Redis, shared by every replica; the in-process ``fallback`` while Redis fails."""

    def __init__(
        self,
        limit: RateLimit,
        redis: RedisClient,
        keys: RedisKeys,
        *,
        fallback: LocalRateLimiter | None = None,
        retry_s: float = REDIS_RETRY_S,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        owns_redis: bool = False,
    ) -> None:
        super().__init__(limit, clock=clock, sleep=sleep)
        self._redis = redis
        self._keys = keys
        self._script = redis.register_script(GCRA_SCRIPT)
        self.fallback = (
            fallback if fallback is not None else LocalRateLimiter(limit, clock=clock, sleep=sleep)
        )
        self._retry_s = retry_s
        self._down_until: float | None = None
        self._owns_redis = owns_redis

    @property
    def using_fallback(self) -> bool:
        """True while Redis is considered down (the in-process limiter is in use)."""
        return self._down_until is not None

    async def _reserve(self, origin: str, max_wait_s: float) -> Reservation:
        if self._skip_redis():
            return self.fallback.reserve_now(origin, max_wait_s)
        args: list[str | int] = [
            _micros(self.limit.interval_s),
            self.limit.burst,
            "take",
            _micros(max_wait_s),
        ]
        try:
            granted, wait_us = await self._script(keys=[rate_limit_key(self._keys, origin)], args=args)
        except (RedisError, OSError) as exc:
            self._redis_failed(exc)
            return self.fallback.reserve_now(origin, max_wait_s)
        self._redis_ok()
        return Reservation(granted=bool(int(granted)), wait_s=int(wait_us) / 1_000_000)

    async def _hold(self, origin: str, seconds: float) -> None:
        self.fallback.hold_now(origin, seconds)
        if self._skip_redis():
            return
        args: list[str | int] = [_micros(self.limit.interval_s), self.limit.burst, "hold", _micros(seconds)]
        try:
            await self._script(keys=[rate_limit_key(self._keys, origin)], args=args)
        except (RedisError, OSError) as exc:
            self._redis_failed(exc)
            return
        self._redis_ok()

    def _skip_redis(self) -> bool:
        return self._down_until is not None and self.clock() < self._down_until

    def _redis_failed(self, exc: BaseException) -> None:
        if self._down_until is None:
            logger.warning(
                "target rate limits: Redis failed (%s: %s); limiting in this process only until it "
                "answers again (checked every %g s)",
                type(exc).__name__,
                exc,
                self._retry_s,
            )
        self._down_until = self.clock() + self._retry_s

    def _redis_ok(self) -> None:
        if self._down_until is not None:
            logger.info("target rate limits: Redis answers again; limits are shared by all replicas")
            self._down_until = None

    async def close(self) -> None:
        if self._owns_redis:
            await self._redis.aclose()


def _micros(seconds: float) -> str:
    return f"{max(0.0, seconds) * 1_000_000:.0f}"


def create_target_rate_limiter(settings: ArenaSettings) -> RateLimiter:
    """The limiter the settings ask for: shared through Redis with ``ARENA_REDIS_URL``, else in
    process. Opens no connection yet; call :meth:`RateLimiter.close` at shutdown."""
    limit = RateLimit.from_settings(settings)
    if settings.redis_url is None or limit.unlimited:
        return LocalRateLimiter(limit)
    # The package pulls in a2a-sdk.
    from arena_core.redis_state.connection import cluster_redis, pooled_redis
    from arena_core.redis_state.keys import RedisKeys
    from arena_core.redis_url import is_cluster_url

    redis: RedisClient = (
        cluster_redis(
            settings.redis_url,
            max_connections=settings.redis_max_connections,
            timeout_s=settings.redis_timeout_s,
            connect_timeout_s=settings.redis_connect_timeout_s,
        )
        if is_cluster_url(settings.redis_url)
        else pooled_redis(
            settings.redis_url,
            max_connections=settings.redis_max_connections,
            timeout_s=settings.redis_timeout_s,
            connect_timeout_s=settings.redis_connect_timeout_s,
            retry_on_timeout=False,
        )
    )
    return RedisRateLimiter(limit, redis, RedisKeys(settings.redis_namespace), owns_redis=True)


__all__ = [
    "DEFAULT_MAX_ORIGINS",
    "GCRA_SCRIPT",
    "REDIS_RETRY_S",
    "LocalRateLimiter",
    "RateLimit",
    "RateLimiter",
    "RedisRateLimiter",
    "Reservation",
    "create_target_rate_limiter",
    "current_deadline",
    "deadline_scope",
    "rate_limit_key",
    "retry_after_s",
    "target_origin",
]
