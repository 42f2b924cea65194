"""Enforce the egress policy on every HTTP request to a user-named host (SSRF guard).

:class:`EgressGuard` resolves a URL's host and checks the host and every
address it resolves to against an :class:`~arena_core.egress_policy.EgressPolicy`,
raising :class:`~arena_core.errors.TargetNotAllowedError` before any connection
is opened. :class:`GuardedTransport` does this for every request an httpx
client sends (so redirects, interface URLs from a card and every A2A call are
checked too) and then connects to a checked address, never to a second DNS
answer (DNS rebinding): the URL's host is replaced by the address, the ``Host``
header keeps the name, and for https the TLS server name (SNI and certificate
check) stays the name. :func:`guarded_client` builds an httpx client that
reaches hosts only through it, never through an ``HTTP(S)_PROXY``.

Each request is checked on its own: its host is resolved again (no answer is
cached), and the request goes only to the addresses that answer returned.

Time: a request's connect timeout (httpx's ``connect``) bounds resolving *and*
every connection attempt together: one deadline, shared by the addresses
tried. Resolving alone is also bounded by :data:`DNS_TIMEOUT_S`. The system
resolver runs getaddrinfo on at most :data:`MAX_CONCURRENT_LOOKUPS` threads of
its own: lookups beyond that wait for a thread within their deadline, and a
lookup whose caller gave up before it started never runs, so a hanging DNS
server cannot pile up threads.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from arena_core.egress_policy import EgressPolicy, IPAddress, normalise_address, normalise_host, parse_address
from arena_core.errors import TargetNotAllowedError, TargetUnreachableError
from arena_core.exception_chain import find_in_chain
from arena_core.origin import Origin

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""``(host, port) -> addresses``, in the order to try them; raises OSError when the name is unknown."""

DNS_TIMEOUT_S = 10.0
"""The longest a name may take to resolve, whatever the caller's connect timeout."""
MAX_ADDRESSES_TRIED = 4
MAX_CONCURRENT_LOOKUPS = 16
"""getaddrinfo calls the system resolver runs at once (threads); more wait their turn."""

GetAddrInfo = Callable[..., list[tuple[Any, ...]]]


class SystemResolver:
    """A :data:`Resolver` on getaddrinfo, run on a bounded pool of threads of its own.

    At most ``max_concurrent`` lookups run at once; further ones queue. A queued
    lookup whose caller stopped waiting (its deadline passed) is dropped before
    it runs, so a resolver that hangs holds ``max_concurrent`` threads at most,
    and never the event loop's default executor. ``getaddrinfo`` is replaceable
    for tests.
    """

    def __init__(
        self,
        *,
        max_concurrent: int = MAX_CONCURRENT_LOOKUPS,
        getaddrinfo: GetAddrInfo = socket.getaddrinfo,
    ) -> None:
        self._getaddrinfo = getaddrinfo
        self.max_concurrent = max_concurrent
        self._executor = ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix="arena-dns")

    def __repr__(self) -> str:
        return f"SystemResolver(max_concurrent={self.max_concurrent})"

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        """Resolve ``host`` (unique addresses in getaddrinfo's order); raises OSError when unknown."""
        loop = asyncio.get_running_loop()
        infos = await loop.run_in_executor(self._executor, self._lookup, host, port)
        found: list[IPAddress] = []
        for _family, _type, _proto, _name, sockaddr in infos:
            address = parse_address(str(sockaddr[0]))
            if address is not None and address not in found:
                found.append(address)
        return found

    def _lookup(self, host: str, port: int) -> list[tuple[Any, ...]]:
        return self._getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop the threads (queued lookups are dropped). For tests and explicit clean-up."""
        self._executor.shutdown(wait=wait, cancel_futures=True)


system_resolver = SystemResolver()
"""The process's resolver: every :class:`EgressGuard` made without one shares its threads."""


def display_origin(url: httpx.URL | str) -> str:
    """``scheme://host:port`` of ``url`` for messages: never its user info, path or query."""
    return str(Origin.of(url))


class EgressGuard:
    """A policy and a resolver: checks URLs before anything connects to them."""

    def __init__(self, policy: EgressPolicy, *, resolver: Resolver | None = None) -> None:
        self.policy = policy
        self._resolver = resolver or system_resolver

    def __repr__(self) -> str:
        return f"EgressGuard({self.policy.describe()})"

    async def check_url(
        self, url: httpx.URL | str, *, what: str | None = None, timeout_s: float | None = None
    ) -> list[IPAddress]:
        """Return the addresses ``url`` may be reached at (each checked), in order.

        ``what`` says in messages what the URL is (``the target``, ``the
        interface listed by ...``). Resolving takes at most ``timeout_s`` (and
        never more than :data:`DNS_TIMEOUT_S`). Raises TargetNotAllowedError
        when the policy refuses the host or any address it resolves to,
        TargetUnreachableError when the name does not resolve in time.
        """
        about = f" ({what})" if what else ""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise TargetNotAllowedError(f"refused to connect{about}: the URL is not valid") from exc
        origin = Origin.of_web(parsed)
        if origin is None:
            raise TargetNotAllowedError(
                f"refused to connect{about}: only http and https URLs with a host are allowed"
            )
        where = str(origin)
        host = normalise_host(origin.host)
        literal = parse_address(host)
        if literal is not None:
            addresses = [literal]
        elif not self.policy.needs_addresses(host):
            addresses = []  # refused by name: don't even ask DNS about it
        else:
            addresses = await self._resolve(host, origin.port, where, timeout_s)
        problem = self.policy.refusal(host, addresses)
        if problem is not None:
            raise TargetNotAllowedError(f"refused to connect to {where}{about}: {problem}")
        return [normalise_address(address) for address in addresses]

    async def _resolve(self, host: str, port: int, where: str, timeout_s: float | None) -> list[IPAddress]:
        limit = DNS_TIMEOUT_S if timeout_s is None else max(0.0, min(DNS_TIMEOUT_S, timeout_s))
        try:
            async with asyncio.timeout(limit):
                return await self._resolver(host, port)
        except TimeoutError as exc:
            raise TargetUnreachableError(
                f"{where} is not reachable: resolving {host} took more than {limit:g} s"
            ) from exc
        except (OSError, UnicodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise TargetUnreachableError(
                f"{where} is not reachable: cannot resolve {host} ({reason})"
            ) from exc


def _pinned(
    request: httpx.Request, address: IPAddress, timeouts: Mapping[str, float | None] | None = None
) -> httpx.Request:
    """``request`` sent to ``address``: same Host header, same TLS server name (and ``timeouts``)."""
    extensions = dict(request.extensions)
    if timeouts is not None:
        extensions["timeout"] = dict(timeouts)
    if request.url.scheme == "https" and parse_address(request.url.host) is None:
        extensions.setdefault("sni_hostname", request.url.host)
    headers = request.headers.copy()
    headers.setdefault("Host", request.url.netloc.decode("ascii"))
    return httpx.Request(
        request.method,
        request.url.copy_with(host=str(address)),
        headers=headers,
        stream=request.stream,
        extensions=extensions,
    )


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that checks every request with an :class:`EgressGuard`.

    Refused requests raise TargetNotAllowedError before any socket is opened; a
    name that does not resolve (in time) raises ``httpx.ConnectError``. Allowed
    requests go to ``inner`` addressed to a checked IP: up to
    :data:`MAX_ADDRESSES_TRIED` of them, in resolver order, the next one when a
    connection fails or times out (nothing was sent). The request's connect
    timeout is one deadline for resolving and all attempts: each attempt gets
    an equal share of what is left (the last one all of it), and when it runs
    out ``httpx.ConnectTimeout`` is raised. Without ``inner``, plain http
    shares one connection pool and each https host name gets its own (a TLS
    connection is verified for one name, and pools are keyed by address).
    """

    def __init__(
        self,
        guard: EgressGuard,
        inner: httpx.AsyncBaseTransport | None = None,
        *,
        transport_factory: Callable[[], httpx.AsyncBaseTransport] | None = None,
    ) -> None:
        self.guard = guard
        self._inner = inner
        self._factory = transport_factory or (
            lambda: httpx.AsyncHTTPTransport(verify=shared_tls_context(), trust_env=True)
        )
        self._pools: dict[str, httpx.AsyncBaseTransport] = {}

    def _transport_for(self, url: httpx.URL) -> httpx.AsyncBaseTransport:
        if self._inner is not None:
            return self._inner
        key = f"https://{url.host}" if url.scheme == "https" else "http"
        if key not in self._pools:
            self._pools[key] = self._factory()
        return self._pools[key]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        loop = asyncio.get_running_loop()
        timeouts: dict[str, float | None] = dict(request.extensions.get("timeout") or {})
        budget = timeouts.get("connect")
        deadline = None if budget is None else loop.time() + budget
        try:
            addresses = await self.guard.check_url(request.url, timeout_s=budget)
        except TargetUnreachableError as exc:
            raise httpx.ConnectError(exc.message, request=request) from exc
        transport = self._transport_for(request.url)
        candidates = addresses[:MAX_ADDRESSES_TRIED]
        failure: httpx.TransportError | None = None
        for index, address in enumerate(candidates):
            attempt_timeouts: dict[str, float | None] | None = None
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    break
                attempt_timeouts = {**timeouts, "connect": left / (len(candidates) - index)}
            try:
                return await transport.handle_async_request(_pinned(request, address, attempt_timeouts))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failure = exc  # nothing was sent: the next address may answer
        if deadline is not None and loop.time() >= deadline:
            raise httpx.ConnectTimeout(
                f"could not connect to {display_origin(request.url)} within {budget:g} s "
                "(the connect timeout, resolving included)",
                request=request,
            ) from failure
        raise failure or httpx.ConnectError(
            f"no address to connect to for {request.url.host}", request=request
        )

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
        if self._inner is not None:
            await self._inner.aclose()


@functools.cache
def shared_tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every pool and client the process makes: each context
    loads and keeps its own copy of the CA bundle (CPU, and native memory the garbage
    collector does not see)."""
    return httpx.create_ssl_context(trust_env=True)


def guarded_client(guard: EgressGuard, *, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """An httpx client whose every request passes ``guard`` (no env proxies: they would bypass it)."""
    return httpx.AsyncClient(transport=GuardedTransport(guard), timeout=timeout, trust_env=False)


def not_allowed_in(exc: BaseException) -> TargetNotAllowedError | None:
    """The TargetNotAllowedError behind ``exc``, or None.

    A library may have wrapped it (see :func:`~arena_core.exception_chain.find_in_chain`).
    """
    return find_in_chain(exc, TargetNotAllowedError)


__all__ = [
    "DNS_TIMEOUT_S",
    "MAX_ADDRESSES_TRIED",
    "MAX_CONCURRENT_LOOKUPS",
    "EgressGuard",
    "GuardedTransport",
    "Resolver",
    "SystemResolver",
    "display_origin",
    "guarded_client",
    "not_allowed_in",
    "shared_tls_context",
    "system_resolver",
]
