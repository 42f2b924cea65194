"""Per-target rate limits (arena_core/rate_limit.py), on a fake clock: deterministic, no sleeping."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from arena_core.errors import ConfigError, TargetError, TargetRateLimitedError, exit_code_for_kind
from arena_core.rate_limit import (
    LocalRateLimiter,
    RateLimit,
    RedisRateLimiter,
    create_target_rate_limiter,
    current_deadline,
    deadline_scope,
    rate_limit_key,
    retry_after_s,
    target_origin,
)
from arena_core.redis_state.keys import RedisKeys
from arena_core.settings import ArenaSettings, load_settings

ORIGIN = "http://defender:8081"


class FakeClock:
    """A monotonic clock that moves only when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


def limiter(clock: FakeClock, rate: float, burst: int, **kwargs: Any) -> LocalRateLimiter:
    return LocalRateLimiter(RateLimit(rate, burst), clock=clock, sleep=clock.sleep, **kwargs)


# --- the limit itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(("rate", "burst"), [(-1, 1), (float("nan"), 1), (float("inf"), 1), (1, 0)])
def test_a_limit_is_validated(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match=r"(rate|burst) must be"):
        RateLimit(rate, burst)


def test_describe_and_interval() -> None:
    assert RateLimit(0, 5).unlimited
    assert RateLimit(0, 5).describe() == "unlimited"
    assert RateLimit(4, 2).interval_s == 0.25
    assert RateLimit(2.5, 3).describe() == "2.5 requests/s (bursts of 3)"


@pytest.mark.asyncio
async def test_a_burst_goes_out_at_once_then_the_rate_applies() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=10, burst=5)
    waits = [await limits.acquire(ORIGIN, max_wait_s=60) for _ in range(8)]
    assert waits[:5] == [0, 0, 0, 0, 0]
    assert waits[5:] == pytest.approx([0.1, 0.1, 0.1])
    assert clock.now == pytest.approx(1_000.3)


@pytest.mark.asyncio
async def test_unlimited_never_waits_and_keeps_no_state() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=0, burst=1)
    for _ in range(1_000):
        assert await limits.acquire(ORIGIN, max_wait_s=0) == 0
    assert clock.slept == []
    assert len(limits) == 0


@pytest.mark.asyncio
async def test_a_slot_beyond_the_deadline_is_refused_and_not_reserved() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=1, burst=2)
    await limits.acquire(ORIGIN, max_wait_s=0)
    await limits.acquire(ORIGIN, max_wait_s=0)
    with pytest.raises(TargetRateLimitedError) as refused:
        await limits.acquire(ORIGIN, max_wait_s=0.5)
    message = str(refused.value)
    assert ORIGIN in message and "ARENA_TARGET_RATE_LIMIT" in message and "1.0 s" in message
    assert refused.value.kind == "rate_limited"
    # Nothing was reserved: a caller that can wait gets the very same slot.
    assert await limits.acquire(ORIGIN, max_wait_s=1.0) == pytest.approx(1.0)
    assert clock.slept == [pytest.approx(1.0)]


@pytest.mark.asyncio
async def test_waiters_reserve_their_slots_in_order_without_polling() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=2, burst=1)
    # Reservations are made at once (no sleep in between): each gets the next slot.
    granted = [limits.reserve_now(ORIGIN, max_wait_s=10) for _ in range(4)]
    assert [r.granted for r in granted] == [True] * 4
    assert [r.wait_s for r in granted] == pytest.approx([0, 0.5, 1.0, 1.5])


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.asyncio
async def test_never_more_than_burst_plus_rate_times_elapsed(seed: int) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    rate, burst = rng.choice([(1.0, 1), (5.0, 3), (10.0, 10), (0.5, 4)])
    limits = limiter(clock, rate=rate, burst=burst)
    sent: list[float] = []
    # Requests arrive at random times; each reserves a slot and goes out when it is due.
    for _ in range(300):
        clock.advance(rng.expovariate(rate * 3))  # three times more demand than the rate
        reservation = limits.reserve_now(ORIGIN, max_wait_s=rng.choice([0.0, 1.0, 1e9]))
        if reservation.granted:
            sent.append(clock.now + reservation.wait_s)
    sent.sort()
    assert len(sent) > burst
    for i, start in enumerate(sent):
        for j in range(i, len(sent)):
            assert j - i + 1 <= burst + rate * (sent[j] - start) + 1e-6


@pytest.mark.asyncio
async def test_origins_are_limited_separately() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=1, burst=1)
    await limits.acquire("http://a:80", max_wait_s=0)
    await limits.acquire("http://b:80", max_wait_s=0)
    with pytest.raises(TargetRateLimitedError):
        await limits.acquire("http://a:80", max_wait_s=0)


@pytest.mark.asyncio
async def test_idle_origins_are_forgotten_and_memory_is_bounded() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=1, burst=1, max_origins=100)
    for i in range(50):
        await limits.acquire(f"http://host{i}:80", max_wait_s=0)
    assert len(limits) == 50
    clock.advance(2)  # every slot has passed: all idle
    await limits.acquire("http://fresh:80", max_wait_s=0)
    assert len(limits) == 1
    for i in range(1_000):  # busy origins, more than the bound
        await limits.acquire(f"http://busy{i}:80", max_wait_s=0)
    assert len(limits) == 100


@pytest.mark.asyncio
async def test_hold_delays_everyone_then_the_rate_resumes_without_a_burst() -> None:
    clock = FakeClock()
    limits = limiter(clock, rate=10, burst=5)
    await limits.hold(ORIGIN, 3.0)
    assert await limits.acquire(ORIGIN, max_wait_s=60) == pytest.approx(3.0)
    assert await limits.acquire(ORIGIN, max_wait_s=60) == pytest.approx(0.1)
    await limits.hold(ORIGIN, 10.0)
    with pytest.raises(TargetRateLimitedError):
        await limits.acquire(ORIGIN, max_wait_s=5)
    # A shorter hold never brings the next slot forward; holds mean nothing when unlimited.
    await limits.hold(ORIGIN, 1.0)
    assert await limits.acquire(ORIGIN, max_wait_s=60) == pytest.approx(10.0)
    unlimited = limiter(clock, rate=0, burst=1)
    await unlimited.hold(ORIGIN, 100)
    assert await unlimited.acquire(ORIGIN, max_wait_s=0) == 0


# --- helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://Defender:8081/rest/v1?x=1", "http://defender:8081"),
        ("http://defender/", "http://defender:80"),
        ("https://agent.example.com/a2a", "https://agent.example.com:443"),
        ("https://user:pw@agent.example.com:8443/", "https://agent.example.com:8443"),
        ("http://[::1]:9000/", "http://[::1]:9000"),
    ],
)
def test_target_origin(url: str, origin: str) -> None:
    assert target_origin(url) == origin


def test_retry_after_seconds_and_dates() -> None:
    now = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_s("5") == 5.0
    assert retry_after_s(" 120 ") == 120.0
    assert retry_after_s(format_datetime(now + timedelta(seconds=30), usegmt=True), now=now) == 30.0
    assert retry_after_s(format_datetime(now - timedelta(hours=1), usegmt=True), now=now) == 0.0
    for unreadable in (None, "", "soon", "-3", "1.5", "Mon, 99 Foo 2030"):
        assert retry_after_s(unreadable, now=now) is None


@pytest.mark.asyncio
async def test_deadline_scope_is_seen_by_tasks_started_inside() -> None:
    assert current_deadline() is None
    with deadline_scope(42.0):
        assert current_deadline() == 42.0

        async def inner() -> float | None:
            return current_deadline()

        assert await asyncio.create_task(inner()) == 42.0
        with deadline_scope(7.0):
            assert current_deadline() == 7.0
        assert current_deadline() == 42.0
    assert current_deadline() is None


def test_the_error_is_a_retryable_target_error() -> None:
    assert issubclass(TargetRateLimitedError, TargetError)
    assert TargetRateLimitedError.kind == "rate_limited"
    assert exit_code_for_kind("rate_limited") == 3


def test_redis_key_is_namespaced_and_escaped() -> None:
    assert rate_limit_key(RedisKeys(), ORIGIN) == "arena:ratelimit:{http%3A//defender%3A8081}"
    assert rate_limit_key(RedisKeys("ns"), "http://a:1") == "arena:ns:ratelimit:{http%3A//a%3A1}"


# --- settings -------------------------------------------------------------------------------


def test_settings_defaults_and_ranges() -> None:
    settings = ArenaSettings()
    assert (settings.target_rate_limit, settings.target_rate_burst) == (10.0, 10)
    assert RateLimit.from_settings(load_settings(target_rate_limit=0)).unlimited
    assert load_settings(target_rate_limit=0.5).target_rate_limit == 0.5
    for bad in ({"target_rate_limit": -1}, {"target_rate_burst": 0}, {"target_rate_limit": 1e6}):
        with pytest.raises(ConfigError, match="ARENA_TARGET_RATE_"):
            load_settings(**bad)


@pytest.mark.asyncio
async def test_the_settings_pick_the_limiter() -> None:
    local = create_target_rate_limiter(load_settings(target_rate_limit=3, target_rate_burst=2))
    assert isinstance(local, LocalRateLimiter)
    assert local.limit == RateLimit(3, 2)
    shared = create_target_rate_limiter(load_settings(redis_url="redis://127.0.0.1:1/0", redis_namespace="x"))
    assert isinstance(shared, RedisRateLimiter)  # no connection is opened until the first request
    await shared.close()
    unlimited = create_target_rate_limiter(
        load_settings(redis_url="redis://127.0.0.1:1/0", target_rate_limit=0)
    )
    assert isinstance(unlimited, LocalRateLimiter)


# --- Redis failing: the in-process fallback ---------------------------------------------------


class BrokenRedis:
    """Stands in for redis.asyncio.Redis: every script call fails like an unreachable server."""

    def __init__(self) -> None:
        self.calls = 0
        self.healthy = False

    def register_script(self, _source: str) -> Callable[..., Awaitable[list[int]]]:
        async def run(*, keys: list[str], args: list[object]) -> list[int]:
            self.calls += 1
            if not self.healthy:
                raise RedisConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")
            return [1, 0]

        return run

    async def aclose(self) -> None:
        return None


@pytest.mark.asyncio
async def test_redis_failures_fall_back_in_process_log_once_and_recover(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    redis = BrokenRedis()
    limits = RedisRateLimiter(
        RateLimit(1, 2),
        redis,  # type: ignore[arg-type]
        RedisKeys("t"),
        retry_s=5,
        clock=clock,
        sleep=clock.sleep,
    )
    with caplog.at_level(logging.INFO, logger="arena_core.rate_limit"):
        # The in-process limiter takes over: the burst, then the rate, never an error.
        assert await limits.acquire(ORIGIN, max_wait_s=0) == 0
        assert limits.using_fallback
        assert await limits.acquire(ORIGIN, max_wait_s=0) == 0
        with pytest.raises(TargetRateLimitedError):
            await limits.acquire(ORIGIN, max_wait_s=0.5)
        assert redis.calls == 1  # Redis is not asked again before retry_s has passed
        clock.advance(5)
        await limits.acquire(ORIGIN, max_wait_s=10)
        assert redis.calls == 2
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1
        assert "in this process only" in warnings[0].getMessage()
        redis.healthy = True
        clock.advance(5)
        await limits.acquire(ORIGIN, max_wait_s=10)
        assert not limits.using_fallback
        assert any("answers again" in r.getMessage() for r in caplog.records if r.levelno == logging.INFO)
    await limits.close()
