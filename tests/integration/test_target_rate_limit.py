"""Per-target rate limits against a real HTTP target on 127.0.0.1 that counts what it receives.

The target is the minimal third-party agent (tests/support/minimal_agent.py) behind a
counting middleware, served by uvicorn on a loopback socket; the attacker reaches it through
its real, guarded httpx client. Assertions are on counts: during a run that took ``elapsed``
seconds the target saw at most ``burst + rate * elapsed`` requests, which a run without the
limit breaks many times over. (Not on arrival spacing: a request leaves when its slot is due,
but a busy event loop can hold several back and let them in together; that moves no request
earlier than its slot, so the count bound holds whatever the scheduling.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
import pytest_asyncio
from redis.asyncio import Redis
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_attacker.match_runner import MatchRunner
from arena_core.errors import TargetRateLimitedError, exit_code_for_kind
from arena_core.match_models import MatchRequest, MatchResult
from arena_core.rate_limit import (
    RateLimit,
    RedisRateLimiter,
    rate_limit_key,
    target_origin,
)
from arena_core.redis_state.keys import RedisKeys
from arena_core.settings import load_settings
from support.minimal_agent import create_minimal_app
from support.redis_server import RedisServer, find_redis_server
from support.uvicorn_server import bound_socket, serve_app, socket_url

# The settings fixture clears ARENA_* from the environment; the tests build their own settings.
pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("settings")]

Throttle = Callable[[int, str], Response | None]
"""``(request number from 1, method) -> a response to send instead, or None to serve``."""


@dataclass
class CountingTarget:
    """ASGI middleware: records each HTTP request's arrival; may answer some itself (429s)."""

    app: ASGIApp
    throttle: Throttle | None = None
    seen: list[tuple[float, str, int]] = field(default_factory=list)
    url: str = ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        number = len(self.seen) + 1
        replacement = self.throttle(number, scope["method"]) if self.throttle else None
        self.seen.append((time.monotonic(), scope["method"], 429 if replacement is not None else 200))
        if replacement is not None:
            await replacement(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def count(self, method: str) -> int:
        return sum(1 for _, seen, _ in self.seen if seen == method)


@contextlib.asynccontextmanager
async def serving(throttle: Throttle | None = None) -> AsyncIterator[CountingTarget]:
    # bound_socket uses IPPROTO_TCP, not 0: TCP_NODELAY is kept only then (40 ms stalls otherwise).
    sock = bound_socket()
    url = socket_url(sock)
    target = CountingTarget(create_minimal_app(url, comply=False), throttle, url=url)
    async with serve_app(target, sock, what="the test target"):
        yield target


@pytest_asyncio.fixture
async def target() -> AsyncIterator[CountingTarget]:
    async with serving() as counted:
        yield counted


def assert_within_limit(count: int, elapsed_s: float, limit: RateLimit) -> None:
    """``count`` requests in ``elapsed_s`` seconds fit ``burst + rate * elapsed`` (+1 for rounding)."""
    allowed = limit.burst + limit.rate * elapsed_s + 1
    assert count <= allowed, f"{count} requests in {elapsed_s:.3f} s; the limit allows {allowed:.1f}"


async def timed(*runs: Awaitable[MatchResult]) -> tuple[list[MatchResult], float]:
    """Run matches concurrently; their results and how long they took together."""
    started = time.monotonic()
    results = await asyncio.gather(*runs)
    return list(results), time.monotonic() - started


def request(url: str, turns: int) -> MatchRequest:
    return MatchRequest(target=url, strategy="playbook", max_turns=turns, seed=1)


def all_defended(results: list[MatchResult]) -> None:
    for result in results:
        assert result.outcome == "defended", (result.error_kind, result.error)


async def warm_up(runners: list[MatchRunner], target: CountingTarget) -> None:
    """One short match per runner, then forget what the target saw.

    The first requests of a process pay one-off costs (the resolver's thread pool, lazy
    imports) after they took their slot, so they reach the target bunched together; that is
    not what the limit is about.
    """
    all_defended([await runner.run(request(target.url, 1)) for runner in runners])
    target.seen.clear()


# --- one attacker process --------------------------------------------------------------------


async def test_concurrent_matches_never_exceed_the_limit(target: CountingTarget) -> None:
    limit = RateLimit(rate=20, burst=4)
    runner = MatchRunner(load_settings(target_rate_limit=limit.rate, target_rate_burst=limit.burst))
    await warm_up([runner], target)
    matches, turns = 5, 6
    results, elapsed = await timed(*(runner.run(request(target.url, turns)) for _ in range(matches)))
    all_defended(results)
    assert target.count("GET") == matches  # one card fetch per match
    assert target.count("POST") == matches * turns
    assert_within_limit(len(target.seen), elapsed, limit)


async def test_the_limit_off_lets_the_same_load_through_at_once(target: CountingTarget) -> None:
    # The control for the test above: with the limit off the same load goes through far faster
    # than a limit of 5 requests/s would allow (that would take more than 6 s).
    runner = MatchRunner(load_settings(target_rate_limit=0))
    await warm_up([runner], target)
    results, elapsed = await timed(*(runner.run(request(target.url, 6)) for _ in range(5)))
    all_defended(results)
    with pytest.raises(AssertionError, match="the limit allows"):
        assert_within_limit(len(target.seen), elapsed, RateLimit(rate=5, burst=4))


async def test_a_wait_beyond_the_request_timeout_fails_the_match_as_rate_limited(
    target: CountingTarget,
) -> None:
    # One request per 2 s and a 1 s reply timeout: the card fetch takes the only slot, the
    # first message would have to wait 2 s. It fails at once, retryable, without being sent.
    runner = MatchRunner(load_settings(target_rate_limit=0.5, target_rate_burst=1, target_timeout_s=1))
    result = await runner.run(request(target.url, 3))
    assert result.outcome == "error"
    assert result.error_kind == "rate_limited"
    assert "ARENA_TARGET_RATE_LIMIT" in (result.error or "")
    assert exit_code_for_kind(result.error_kind) == 3
    assert result.turns_used == 0
    assert (target.count("GET"), target.count("POST")) == (1, 0)


async def test_a_wait_beyond_the_end_of_the_match_fails_it_as_rate_limited(target: CountingTarget) -> None:
    # The reply timeout would allow the wait, the match's own deadline does not.
    runner = MatchRunner(
        load_settings(target_rate_limit=0.2, target_rate_burst=2, target_timeout_s=60, match_timeout_s=3)
    )
    result = await runner.run(request(target.url, 3))
    assert (result.outcome, result.error_kind) == ("error", "rate_limited")
    assert result.turns_used == 1
    assert len(target.seen) == 2


# --- a target's own 429 ---------------------------------------------------------------------


def too_many(retry_after: str | None) -> Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return PlainTextResponse("slow down", status_code=429, headers=headers)


async def test_a_429_with_retry_after_is_waited_out_and_retried_once() -> None:
    # The first message gets 429 "Retry-After: 1"; the retry is served.
    async with serving(lambda number, _: too_many("1") if number == 2 else None) as target:
        runner = MatchRunner(load_settings(target_rate_limit=100, target_rate_burst=100))
        result = await runner.run(request(target.url, 2))
    all_defended([result])
    assert result.turns_used == 2
    assert [status for _, _, status in target.seen] == [200, 429, 200, 200]
    refused_at, retried_at = target.seen[1][0], target.seen[2][0]
    assert retried_at - refused_at >= 0.95  # never earlier than the target asked


async def test_a_429_on_the_card_fetch_is_retried_too() -> None:
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=1), usegmt=True)
    async with serving(lambda number, _: too_many(date) if number == 1 else None) as target:
        result = await MatchRunner(load_settings()).run(request(target.url, 1))
    all_defended([result])
    assert (target.count("GET"), target.count("POST")) == (2, 1)


@pytest.mark.parametrize(
    "retry_after", ["30", format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)]
)
async def test_a_retry_after_beyond_the_timeout_fails_as_rate_limited_without_retrying(
    retry_after: str,
) -> None:
    async with serving(lambda _, method: too_many(retry_after) if method == "POST" else None) as target:
        result = await MatchRunner(load_settings(target_timeout_s=2)).run(request(target.url, 3))
    assert (result.outcome, result.error_kind) == ("error", "rate_limited")
    assert "429" in (result.error or "")
    assert target.count("POST") == 1


async def test_a_second_429_fails_as_rate_limited() -> None:
    async with serving(lambda _, method: too_many(None) if method == "POST" else None) as target:
        result = await MatchRunner(load_settings()).run(request(target.url, 3))
    assert (result.outcome, result.error_kind) == ("error", "rate_limited")
    assert "again" in (result.error or "")
    assert target.count("POST") == 2  # the message and its one retry (after the default 1 s)


# --- several attacker replicas: one limit through Redis ----------------------------------------


def redis_limiter(url: str, namespace: str, limit: RateLimit, **kwargs: object) -> RedisRateLimiter:
    client = Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
    return RedisRateLimiter(limit, client, RedisKeys(namespace), owns_redis=True, **kwargs)  # type: ignore[arg-type]


async def test_two_replicas_share_one_limit_through_redis(
    target: CountingTarget, redis_server: RedisServer, redis_namespace: str
) -> None:
    limit = RateLimit(rate=10, burst=3)
    limiters = [redis_limiter(redis_server.url, redis_namespace, limit) for _ in range(2)]
    match_settings = load_settings(target_rate_limit=limit.rate, target_rate_burst=limit.burst)
    runners = [MatchRunner(match_settings, rate_limiter=limiter) for limiter in limiters]
    try:
        await warm_up(runners, target)
        results, elapsed = await timed(
            *(runner.run(request(target.url, 4)) for runner in runners for _ in range(2))
        )
        all_defended(results)
        assert len(target.seen) == 4 * 5
        # Two independent limits would let twice the rate through: this fails then.
        assert_within_limit(len(target.seen), elapsed, limit)
        assert not any(limiter.using_fallback for limiter in limiters)
        key = rate_limit_key(RedisKeys(redis_namespace), target_origin(target.url))
        ttl = await limiters[0]._redis.pttl(key)  # idle origins expire by themselves
        assert -2 <= ttl <= 2_000
    finally:
        for limiter in limiters:
            await limiter.close()


async def test_redis_limiters_grant_exactly_the_shared_burst(
    redis_server: RedisServer, redis_namespace: str
) -> None:
    # One request per 1000 s: only the burst is ever available, whichever replica asks.
    limit = RateLimit(rate=0.001, burst=3)
    first, second = (redis_limiter(redis_server.url, redis_namespace, limit) for _ in range(2))
    granted = refused = 0
    try:
        for limiter in (first, second, first, second, first, second):
            try:
                await limiter.acquire("http://shared:80", max_wait_s=0)
                granted += 1
            except TargetRateLimitedError:
                refused += 1
        assert (granted, refused) == (3, 3)
        # A Retry-After held by one replica holds the origin for the other as well.
        await first.hold("http://other:80", 600)
        with pytest.raises(TargetRateLimitedError, match="http://other:80"):
            await second.acquire("http://other:80", max_wait_s=60)
    finally:
        await first.close()
        await second.close()


async def test_an_unreachable_redis_falls_back_in_process_and_logs_once(
    tmp_path: Path, redis_namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    binary = find_redis_server()
    if binary is None:
        pytest.skip("no redis-server")
    server = RedisServer(binary, tmp_path)  # not started yet
    limit = RateLimit(rate=0.001, burst=2)
    limiter = redis_limiter(server.url, redis_namespace, limit, retry_s=0)
    try:
        with caplog.at_level(logging.INFO, logger="arena_core.rate_limit"):
            await limiter.acquire("http://a:80", max_wait_s=0)
            await limiter.acquire("http://a:80", max_wait_s=0)
            with pytest.raises(TargetRateLimitedError):  # the in-process limit still holds
                await limiter.acquire("http://a:80", max_wait_s=0)
            assert limiter.using_fallback
            warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
            assert len(warnings) == 1, [r.getMessage() for r in warnings]
            server.start()
            await limiter.acquire("http://a:80", max_wait_s=0)  # Redis again: a fresh, shared count
            assert not limiter.using_fallback
            assert any("answers again" in r.getMessage() for r in caplog.records)
            key = rate_limit_key(RedisKeys(redis_namespace), "http://a:80")
            assert await limiter._redis.exists(key) == 1
    finally:
        await limiter.close()
        server.stop()
