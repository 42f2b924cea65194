"""The one way the arena connects to an A2A agent, a target or an attacker alike.

:func:`connect` does, in this order and for both:

1. the egress check of the agent's card URL (with a :class:`~arena_core.a2a.egress_guard.EgressGuard`);
2. the httpx client: the caller's, or one made here (every request of it checked again by the
   guard, redirects included, connecting only to checked addresses), wrapped when needed in a
   :class:`~arena_core.a2a.client.target_http_client.TargetHttpClient` (credentials, rate limit,
   response size);
3. the card, fetched and validated, and the interface chosen from it
   (:mod:`~arena_core.a2a.client.card_resolver`);
4. the egress check of that interface's URL, and of the credentials' scope: the credentials go
   to its origin too, unless that would downgrade https to http;
5. an a2a-sdk client bound to that one interface (the only one checked), so that the SDK
   cannot pick another on its own.

Every failure is an :mod:`arena_core.errors` class: TargetNotAllowedError for a refusal (before
anything is sent there), the card's errors (:func:`~arena_core.a2a.client.card_resolver.fetch_agent_card`),
TargetProtocolError for an interface the a2a-sdk cannot use.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import AgentCard, AgentInterface

from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.client.card_resolver import (
    SUPPORTED_BINDINGS,
    card_url_for,
    choose_interface,
    fetch_agent_card,
)
from arena_core.a2a.client.credentials import TargetCredentials
from arena_core.a2a.client.response_limits import DEFAULT_MAX_RESPONSE_BYTES
from arena_core.a2a.client.target_http_client import TargetHttpClient
from arena_core.a2a.egress_guard import EgressGuard, display_origin, guarded_client, shared_tls_context
from arena_core.errors import TargetNotAllowedError, TargetProtocolError
from arena_core.rate_limit import RateLimiter

CONNECT_TIMEOUT_S = 10.0
"""The longest a connection (or the DNS lookup of an egress check) may take, at most the call's timeout."""


class AgentRole(enum.Enum):
    """What the agent is to the arena: how it is named in messages, and how it is spoken to."""

    TARGET = "target"
    """A red-team target: one message at a time, each answered in full."""
    ATTACKER = "attacker"
    """An attacker agent playing a match: a streaming task followed turn by turn."""

    @property
    def streaming(self) -> bool:
        return self is AgentRole.ATTACKER

    def card_owner(self, url: str) -> str:
        """Whose card an interface comes from, in an egress refusal: a target by its origin alone."""
        origin = display_origin(url)
        return origin if self is AgentRole.TARGET else f"{self.value} {origin}"


@dataclass(frozen=True, slots=True)
class Connection:
    """An a2a-sdk client bound to the interface chosen (and checked) from an agent's card.

    ``card`` is the agent's card as fetched; ``credentials`` go to its origin and to
    ``interface``'s. :meth:`close` releases the client, and the httpx client when
    :func:`connect` made it.
    """

    url: str
    card: AgentCard
    interface: AgentInterface
    client: Client
    credentials: TargetCredentials | None
    owned_http: httpx.AsyncClient | None

    async def close(self) -> None:
        await self.client.close()
        if self.owned_http is not None:
            await self.owned_http.aclose()


async def connect(
    url: str,
    role: AgentRole,
    *,
    timeout_s: float,
    http: httpx.AsyncClient | None = None,
    credentials: TargetCredentials | None = None,
    guard: EgressGuard | None = None,
    limiter: RateLimiter | None = None,
    max_response_bytes: int | None = None,
    card_cache: CardCache | None = None,
) -> Connection:
    """Connect to the agent at ``url`` (a base URL or a card URL) as the module doc says.

    ``http`` (tests pass an ASGI transport here) is used as is and left open; without it a
    client is made, guarded when a ``guard`` is given, and owned by the connection. Requests
    go through a :class:`TargetHttpClient` when there are ``credentials``, a ``limiter`` or a
    ``max_response_bytes`` (``None``: the default limit, applied only if the client is wrapped
    for another reason). ``timeout_s`` bounds the egress checks' DNS lookups (at most
    :data:`CONNECT_TIMEOUT_S`) and the rate limit's waits; the requests themselves keep the
    timeouts of the httpx client: the caller's, or (made here) ``timeout_s``, connecting
    within :data:`CONNECT_TIMEOUT_S` of it. With a ``card_cache`` the card is reused while
    its ``Cache-Control`` allows; the egress checks run every time all the same.
    """
    connect_s = min(CONNECT_TIMEOUT_S, timeout_s)
    if guard is not None:
        await guard.check_url(card_url_for(url), what=f"the {role.value}", timeout_s=connect_s)
    owned = http is None
    client_http = http or _new_http_client(guard, httpx.Timeout(timeout_s, connect=connect_s))
    sdk_http = _sdk_http(client_http, credentials, limiter, timeout_s, max_response_bytes)
    try:
        card, _ = await fetch_agent_card(url, sdk_http, credentials=credentials, cache=card_cache)
        interface = choose_interface(card)
        if guard is not None:
            what = f"the interface the agent card of {role.card_owner(url)} lists"
            await guard.check_url(interface.url, what=what, timeout_s=connect_s)
        if credentials is not None:
            _allow(credentials, url, interface)
        client = _client_for(card, interface, sdk_http, url, role)
    except BaseException:
        if owned:
            await client_http.aclose()
        raise
    return Connection(url, card, interface, client, credentials, client_http if owned else None)


def _new_http_client(guard: EgressGuard | None, timeout: httpx.Timeout) -> httpx.AsyncClient:
    if guard is not None:
        return guarded_client(guard, timeout=timeout)
    # A client per connection, but one TLS context for all of them (shared_tls_context).
    return httpx.AsyncClient(timeout=timeout, verify=shared_tls_context())


def _sdk_http(
    inner: httpx.AsyncClient,
    credentials: TargetCredentials | None,
    limiter: RateLimiter | None,
    timeout_s: float,
    max_response_bytes: int | None,
) -> httpx.AsyncClient:
    """The client every request of the agent (the card fetch included) goes through."""
    if credentials is None and limiter is None and max_response_bytes is None:
        return inner  # nothing to add (the operator's own attacker, without a token)
    return TargetHttpClient(
        inner,
        credentials=credentials,
        limiter=limiter,
        timeout_s=timeout_s,
        max_response_bytes=DEFAULT_MAX_RESPONSE_BYTES if max_response_bytes is None else max_response_bytes,
    )


def _allow(credentials: TargetCredentials, url: str, interface: AgentInterface) -> None:
    """Send ``credentials`` to the chosen interface too; refuse it when it leaves their scope.

    Only a target's token has a scope (an attacker's token goes to its agent's origins only).
    """
    if not credentials.in_scope(interface.url):
        raise TargetNotAllowedError(
            f"the agent card of {display_origin(url)} moves the match to an interface on "
            f"{display_origin(interface.url)}, outside the origins this target's token may "
            "go to (ARENA_TARGET_CREDENTIAL_ORIGINS); nothing was sent there"
        )
    credentials.allow(interface.url)


def _client_for(
    card: AgentCard, interface: AgentInterface, http: httpx.AsyncClient, url: str, role: AgentRole
) -> Client:
    """An a2a-sdk client bound to ``interface`` only (the one checked), JSON-RPC or HTTP+JSON."""
    pinned = AgentCard()
    pinned.CopyFrom(card)
    del pinned.supported_interfaces[:]
    pinned.supported_interfaces.append(interface)
    config = ClientConfig(
        streaming=role.streaming, httpx_client=http, supported_protocol_bindings=list(SUPPORTED_BINDINGS)
    )
    try:
        return ClientFactory(config).create(pinned)
    except ValueError as exc:  # the SDK found no transport for the interface after all
        version = interface.protocol_version or "no version"
        raise TargetProtocolError(
            f"{role.value} {url}: the A2A client cannot use the {interface.protocol_binding} "
            f"interface its agent card lists ({version[:40]}): {exc}"
        ) from exc


__all__ = ["CONNECT_TIMEOUT_S", "AgentRole", "Connection", "connect"]
