"""An A2A agent's card: where it lives, fetching and validating it, and the interface to use.

:func:`fetch_agent_card` reads the well-known card (asking for the 1.0 card with
``A2A-Version: 1.0``), at most :data:`MAX_CARD_BYTES`, and validates it (1.0, or 0.3 with
its legacy fields). :func:`choose_interface` picks JSON-RPC or HTTP+JSON, protocol 1.x
first, then 0.3, the card's order breaking ties.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import AgentCard, AgentInterface
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
    PROTOCOL_VERSION_1_0,
    VERSION_HEADER,
    TransportProtocol,
)

from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.client.credentials import TargetCredentials, redact
from arena_core.a2a.client.error_translation import auth_failure, chained_cause
from arena_core.a2a.client.response_limits import ResponseRefusedError, ResponseTooLargeError, limit_response
from arena_core.errors import AgentCardError, TargetProtocolError, TargetUnreachableError

SUPPORTED_BINDINGS = (TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value)
MAX_CARD_BYTES = 1_000_000


def card_url_for(url: str) -> str:
    """The well-known card URL of a target given as a base URL or a card URL."""
    base = url.strip()
    if base.endswith(".json"):
        return base
    return f"{base.rstrip('/')}{AGENT_CARD_WELL_KNOWN_PATH}"


async def fetch_agent_card(
    url: str,
    http: httpx.AsyncClient,
    *,
    credentials: TargetCredentials | None = None,
    cache: CardCache | None = None,
) -> tuple[AgentCard, dict[str, Any]]:
    """Fetch and validate the card of the agent at ``url``.

    With ``credentials``, the request carries them (never following a redirect) and their
    values are kept out of every error. With a ``cache``, a fresh card is reused without a
    request and a stale one revalidated (:mod:`~arena_core.a2a.client.card_cache`). Returns
    the parsed card and the raw JSON. Raises TargetUnreachableError when nothing answers,
    TargetAuthError on 401/403, TargetProtocolError when the response is refused (see
    :mod:`~arena_core.a2a.client.response_limits`) and AgentCardError when the answer is not a card.
    """
    card_url = card_url_for(url)
    key = CardCache.key(card_url, credentials.fingerprint() if credentials is not None else "")
    entry = None
    if cache is not None:
        entry, fresh = cache.lookup(key)
        if entry is not None and fresh:
            return entry.copy()
    # A2A-Version 1.0: an agent that renders its card per version (ours do) sends the 1.0 card,
    # the one a 1.x client should read; others ignore the header.
    headers = {"Accept": "application/json", VERSION_HEADER: PROTOCOL_VERSION_1_0}
    if entry is not None:
        headers.update(entry.validators())
    options: dict[str, Any] = {"headers": headers}
    if credentials is not None:
        options.update(auth=credentials, follow_redirects=False)
    try:
        async with http.stream("GET", card_url, **options) as response:
            if response.status_code == 304 and cache is not None and entry is not None:
                cache.refreshed(key, entry, response.headers)
                return entry.copy()
            if response.status_code in (401, 403):
                what = f"the agent card request ({card_url})"
                raise auth_failure(url, response.status_code, sent=credentials is not None, what=what)
            if response.status_code != 200:
                raise AgentCardError(
                    f"no A2A agent card at {card_url}: HTTP {response.status_code}"
                    + (" (is this an A2A agent?)" if response.status_code == 404 else "")
                )
            content = await _read_card(response, card_url)
            answer_headers = response.headers
    except ResponseRefusedError as exc:
        raise TargetProtocolError(exc.message) from None
    except httpx.TimeoutException as exc:
        raise TargetUnreachableError(
            f"target {url} did not answer in time ({type(exc).__name__})"
        ) from chained_cause(exc, credentials)
    except httpx.HTTPError as exc:
        message = redact(f"target {url} is not reachable: {exc or type(exc).__name__}", credentials)
        raise TargetUnreachableError(message) from chained_cause(exc, credentials)
    card, raw = _card_in(content, card_url, credentials)
    if cache is not None:
        cache.store(key, card, raw, answer_headers)
    return card, raw


def _card_in(
    content: bytes, card_url: str, credentials: TargetCredentials | None
) -> tuple[AgentCard, dict[str, Any]]:
    """The card in the body read from ``card_url``, and its raw JSON."""
    try:
        raw = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = f"{card_url} did not return JSON, so it is not an A2A agent card"
        raise AgentCardError(message) from chained_cause(exc, credentials)
    if not isinstance(raw, dict):
        raise AgentCardError(f"{card_url} returned JSON that is not an object, not an agent card")
    if credentials is None:
        return parse_card(raw, card_url), raw
    try:
        return parse_card(raw, card_url), raw
    except AgentCardError as exc:
        raise AgentCardError(credentials.redact(exc.message)) from chained_cause(exc, credentials)


async def _read_card(response: httpx.Response, card_url: str) -> bytes:
    """The card's body: at most MAX_CARD_BYTES (and the target's response limit), streamed."""
    try:
        limit_response(response, MAX_CARD_BYTES, url=card_url)
        return await response.aread()
    except ResponseTooLargeError as exc:
        if exc.limit != MAX_CARD_BYTES:
            raise
        raise AgentCardError(f"agent card at {card_url} is larger than {MAX_CARD_BYTES} bytes") from None


def parse_card(raw: dict[str, Any], source: str) -> AgentCard:
    """Validate card JSON (1.0, or 0.3 with legacy fields) into an AgentCard."""
    missing = [key for key in ("name", "skills") if key not in raw]
    if "supportedInterfaces" not in raw and "url" not in raw:
        missing.append("supportedInterfaces")
    if missing:
        raise AgentCardError(f"{source} is not a valid A2A agent card: missing {', '.join(missing)}")
    try:
        card = parse_agent_card(dict(raw))
    except Exception as exc:
        raise AgentCardError(f"{source} is not a valid A2A agent card: {exc}") from exc
    if not card.supported_interfaces:
        raise AgentCardError(f"{source} lists no interface to reach the agent")
    return card


def choose_interface(card: AgentCard) -> AgentInterface:
    """Pick JSON-RPC or HTTP+JSON, protocol 1.x first, then 0.3, in card order."""
    usable = [i for i in card.supported_interfaces if i.protocol_binding in SUPPORTED_BINDINGS]
    if not usable:
        offered = ", ".join(sorted({i.protocol_binding for i in card.supported_interfaces})) or "none"
        raise AgentCardError(
            f"agent '{card.name}' offers no interface the arena speaks "
            f"(offered: {offered}; supported: {', '.join(SUPPORTED_BINDINGS)})"
        )

    def rank(interface: AgentInterface) -> int:
        version = interface.protocol_version or ""
        if version.startswith("1."):
            return 0
        if version.startswith("0.3"):
            return 1
        return 2

    chosen: AgentInterface = min(usable, key=rank)
    return chosen


__all__ = [
    "MAX_CARD_BYTES",
    "SUPPORTED_BINDINGS",
    "card_url_for",
    "choose_interface",
    "fetch_agent_card",
    "parse_card",
]
