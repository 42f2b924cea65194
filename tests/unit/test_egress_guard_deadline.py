"""The egress guard's time limits: one deadline for resolving and connecting, bounded DNS threads.

No sockets and no real DNS: resolvers, getaddrinfo and the network are stand-ins. Times
are small and the upper bounds generous; what is checked exactly is how the connect
timeout is shared out, read from the requests the guard hands on.
"""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from arena_core.a2a.egress_guard import (
    EgressGuard,
    GuardedTransport,
    SystemResolver,
    system_resolver,
)
from arena_core.egress_policy import EgressPolicy, IPAddress, parse_address
from arena_core.errors import TargetUnreachableError

pytestmark = pytest.mark.asyncio

GENEROUS_S = 5.0


def resolver_of(*addresses: str, delay_s: float = 0.0) -> Any:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        if delay_s:
            await asyncio.sleep(delay_s)
        return [address for text in addresses if (address := parse_address(text)) is not None]

    return resolve


async def hanging_resolver(host: str, port: int) -> list[IPAddress]:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


class Attempts(httpx.AsyncBaseTransport):
    """Stands in for the network; records when each connection attempt starts and its timeout.

    ``outcomes`` per attempt: ``refused`` (ConnectError at once), ``blackhole`` (waits out its
    connect timeout, then ConnectTimeout) or ``ok``.
    """

    def __init__(self, *outcomes: str) -> None:
        self.outcomes = list(outcomes)
        self.started: list[tuple[float, float | None, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        connect = request.extensions.get("timeout", {}).get("connect")
        self.started.append((asyncio.get_running_loop().time(), connect, request.url.host))
        outcome = self.outcomes[len(self.started) - 1]
        if outcome == "refused":
            raise httpx.ConnectError("connection refused", request=request)
        if outcome == "blackhole":
            await asyncio.sleep(connect if connect is not None else 3600)
            raise httpx.ConnectTimeout("timed out", request=request)
        return httpx.Response(200, text="ok")


def client(
    guard: EgressGuard, network: httpx.AsyncBaseTransport, connect_s: float | None
) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=GuardedTransport(guard, network), timeout=httpx.Timeout(30.0, connect=connect_s)
    )


async def test_a_hanging_resolver_is_given_up_within_the_connect_timeout() -> None:
    network = Attempts()
    started = time.monotonic()
    async with client(EgressGuard(EgressPolicy(), resolver=hanging_resolver), network, 0.2) as http:
        with pytest.raises(httpx.ConnectError, match=re.escape("resolving hang.test took more than 0.2 s")):
            await http.get("http://hang.test/")
    assert time.monotonic() - started < GENEROUS_S  # not DNS_TIMEOUT_S (10 s)
    assert network.started == []


async def test_check_url_resolves_within_the_callers_limit() -> None:
    guard = EgressGuard(EgressPolicy(), resolver=hanging_resolver)
    started = time.monotonic()
    with pytest.raises(TargetUnreachableError, match=re.escape("resolving hang.test took more than 0.1 s")):
        await guard.check_url("http://hang.test/", timeout_s=0.1)
    assert time.monotonic() - started < GENEROUS_S
    # Without a limit of its own, DNS_TIMEOUT_S bounds it (not waited for here).
    guard = EgressGuard(EgressPolicy(), resolver=resolver_of("10.0.0.1"))
    assert await guard.check_url("http://ok.test/") == [parse_address("10.0.0.1")]


async def test_resolving_and_every_attempt_share_one_deadline() -> None:
    budget = 0.6
    network = Attempts("blackhole", "blackhole", "blackhole")
    resolver = resolver_of("10.0.0.1", "10.0.0.2", "10.0.0.3", delay_s=0.1)
    loop = asyncio.get_running_loop()
    began = loop.time()
    async with client(EgressGuard(EgressPolicy(), resolver=resolver), network, budget) as http:
        with pytest.raises(httpx.ConnectTimeout):
            await http.get("http://three.test/")
    ended = loop.time()
    # Every address got a try, and no try could outlast the one deadline.
    assert [host for _, _, host in network.started] == ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    for start, connect, _ in network.started:
        assert connect is not None and connect > 0
        assert start + connect <= began + budget + 0.05
    assert network.started[0][0] >= began + 0.1  # resolving came out of the same budget
    assert ended - began < GENEROUS_S


async def test_a_refused_connection_leaves_its_time_to_the_next_address() -> None:
    budget = 2.0
    network = Attempts("refused", "refused", "ok")
    resolver = resolver_of("10.0.0.1", "10.0.0.2", "10.0.0.3")
    async with client(EgressGuard(EgressPolicy(), resolver=resolver), network, budget) as http:
        response = await http.get("http://three.test/")
    assert response.text == "ok"
    shares = [connect for _, connect, _ in network.started]
    assert shares[0] is not None and shares[0] <= budget / 3 + 0.01
    assert shares[2] is not None and budget / 2 < shares[2] <= budget  # the last one gets what is left


async def test_without_a_connect_timeout_the_attempts_keep_none() -> None:
    network = Attempts("refused", "ok")
    resolver = resolver_of("10.0.0.1", "10.0.0.2")
    async with client(EgressGuard(EgressPolicy(), resolver=resolver), network, None) as http:
        await http.get("http://two.test/")
    assert [connect for _, connect, _ in network.started] == [None, None]


class BlockingGetAddrInfo:
    """A getaddrinfo that blocks until released; counts the calls that ran and how many at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.calls = 0
        self.running = 0
        self.most = 0

    def __call__(self, host: str, port: int, **kwargs: Any) -> list[tuple[Any, ...]]:
        with self._lock:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            self.release.wait(30)
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("10.0.0.9", port))]
        finally:
            with self._lock:
                self.running -= 1


async def test_a_hanging_system_resolver_holds_a_bounded_number_of_threads() -> None:
    lookups = BlockingGetAddrInfo()
    resolver = SystemResolver(max_concurrent=2, getaddrinfo=lookups)
    guard = EgressGuard(EgressPolicy(), resolver=resolver)
    try:
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(guard.check_url(f"http://host{i}.test/", timeout_s=0.3) for i in range(6)),
            return_exceptions=True,
        )
        assert time.monotonic() - started < GENEROUS_S
        for outcome in outcomes:
            assert isinstance(outcome, TargetUnreachableError), outcome
            assert "took more than 0.3 s" in str(outcome)
        assert lookups.most == 2
        for _ in range(5):  # let the cancellations of the queued lookups reach the executor
            await asyncio.sleep(0)
        lookups.release.set()
        # Once the hung lookups return, the resolver works again...
        assert await guard.check_url("http://after.test/", timeout_s=GENEROUS_S) == [
            parse_address("10.0.0.9")
        ]
    finally:
        lookups.release.set()
        await asyncio.to_thread(resolver.shutdown)
    # ...and the four lookups whose callers gave up while they waited for a thread never ran.
    assert lookups.calls == 3


async def test_the_system_resolver_resolves_localhost() -> None:
    found = await system_resolver("localhost", 80)
    assert found and all(address.is_loopback for address in found)
