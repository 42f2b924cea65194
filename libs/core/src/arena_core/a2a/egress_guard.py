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
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

import httpx

from arena_core.egress_policy import EgressPolicy, IPAddress, normalise_address, normalise_host, parse_address
from arena_core.errors import TargetNotAllowedError, TargetUnreachableError

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
"""``(host, port) -> addresses``, in the order to try them; raises OSError when the name is unknown."""

DNS_TIMEOUT_S = 10.0
MAX_ADDRESSES_TRIED = 4
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEMES = frozenset(_DEFAULT_PORTS)


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Resolve ``host`` with the system resolver (getaddrinfo), unique addresses in its order."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = parse_address(str(sockaddr[0]))
        if address is not None and address not in found:
            found.append(address)
    return found


def display_origin(url: httpx.URL | str) -> str:
    """``scheme://host:port`` of ``url``: never its user info, path or query."""
    url = httpx.URL(url)
    host = url.host
    shown = f"[{host}]" if ":" in host else host
    port = url.port or _DEFAULT_PORTS.get(url.scheme)
    return f"{url.scheme}://{shown}" + (f":{port}" if port else "")


class EgressGuard:
    """A policy and a resolver: checks URLs before anything connects to them."""

    def __init__(self, policy: EgressPolicy, *, resolver: Resolver | None = None) -> None:
        self.policy = policy
        self._resolver = resolver or system_resolver

    def __repr__(self) -> str:
        return f"EgressGuard({self.policy.describe()})"

    async def check_url(self, url: httpx.URL | str, *, what: str | None = None) -> list[IPAddress]:
        """Return the addresses ``url`` may be reached at (each checked), in order.

        ``what`` says in messages what the URL is (``the target``, ``the
        interface listed by ...``). Raises TargetNotAllowedError when the policy
        refuses the host or any address it resolves to, TargetUnreachableError
        when the name does not resolve.
        """
        about = f" ({what})" if what else ""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise TargetNotAllowedError(f"refused to connect{about}: the URL is not valid") from exc
        if parsed.scheme not in _SCHEMES or not parsed.host:
            raise TargetNotAllowedError(
                f"refused to connect{about}: only http and https URLs with a host are allowed"
            )
        where = display_origin(parsed)
        host = normalise_host(parsed.host)
        literal = parse_address(host)
        if literal is not None:
            addresses = [literal]
        elif not self.policy.needs_addresses(host):
            addresses = []  # refused by name: don't even ask DNS about it
        else:
            addresses = await self._resolve(host, parsed.port or _DEFAULT_PORTS[parsed.scheme], where)
        problem = self.policy.refusal(host, addresses)
        if problem is not None:
            raise TargetNotAllowedError(f"refused to connect to {where}{about}: {problem}")
        return [normalise_address(address) for address in addresses]

    async def _resolve(self, host: str, port: int, where: str) -> list[IPAddress]:
        try:
            async with asyncio.timeout(DNS_TIMEOUT_S):
                return await self._resolver(host, port)
        except TimeoutError as exc:
            raise TargetUnreachableError(
                f"{where} is not reachable: resolving {host} took more than {DNS_TIMEOUT_S:g} s"
            ) from exc
        except (OSError, UnicodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise TargetUnreachableError(
                f"{where} is not reachable: cannot resolve {host} ({reason})"
            ) from exc


def _pinned(request: httpx.Request, address: IPAddress) -> httpx.Request:
    """``request`` sent to ``address``: same Host header, same TLS server name."""
    extensions = dict(request.extensions)
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
    name that does not resolve raises ``httpx.ConnectError``. Allowed requests
    go to ``inner`` addressed to a checked IP (tried in resolver order on
    connection failure). Without ``inner``, plain http shares one connection
    pool and each https host name gets its own (a TLS connection is verified
    for one name, and pools are keyed by address).
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
        self._factory = transport_factory or (lambda: httpx.AsyncHTTPTransport(trust_env=True))
        self._pools: dict[str, httpx.AsyncBaseTransport] = {}

    def _transport_for(self, url: httpx.URL) -> httpx.AsyncBaseTransport:
        if self._inner is not None:
            return self._inner
        key = f"https://{url.host}" if url.scheme == "https" else "http"
        if key not in self._pools:
            self._pools[key] = self._factory()
        return self._pools[key]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            addresses = await self.guard.check_url(request.url)
        except TargetUnreachableError as exc:
            raise httpx.ConnectError(exc.message, request=request) from exc
        transport = self._transport_for(request.url)
        failure: httpx.ConnectError | None = None
        for address in addresses[:MAX_ADDRESSES_TRIED]:
            try:
                return await transport.handle_async_request(_pinned(request, address))
            except httpx.ConnectError as exc:  # nothing was sent: the next address may answer
                failure = exc
        raise failure or httpx.ConnectError(
            f"no address to connect to for {request.url.host}", request=request
        )

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
        if self._inner is not None:
            await self._inner.aclose()


def guarded_client(guard: EgressGuard, *, timeout: httpx.Timeout) -> httpx.AsyncClient:
    """An httpx client whose every request passes ``guard`` (no env proxies: they would bypass it)."""
    return httpx.AsyncClient(transport=GuardedTransport(guard), timeout=timeout, trust_env=False)


def not_allowed_in(exc: BaseException) -> TargetNotAllowedError | None:
    """The TargetNotAllowedError behind ``exc`` (a library may have wrapped it), or None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, TargetNotAllowedError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


__all__ = [
    "DNS_TIMEOUT_S",
    "EgressGuard",
    "GuardedTransport",
    "Resolver",
    "display_origin",
    "guarded_client",
    "not_allowed_in",
    "system_resolver",
]
