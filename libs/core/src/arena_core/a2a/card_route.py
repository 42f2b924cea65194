"""The agent card route: one card for A2A 1.0 clients and 0.3 clients alike, cacheable.

A2A 1.0 cards list their endpoints in ``supportedInterfaces``; A2A 0.3 clients
(a2a-sdk 0.3's card resolver, the original sample's attacker tool, most 0.3
red-team tools) need the legacy top-level ``url``, ``preferredTransport`` and
``protocolVersion``, which a strict 1.0 parse rejects as unknown fields. The
route serves one of two renderings of the same card:

* ``strict``: the 1.0 card, its 1.0 interfaces only; passes a strict 1.0 parse;
* ``compat``: the same card listing the 0.3 interfaces too, with the legacy
  fields a2a-sdk adds for them (what 0.3 clients need; 1.0 clients, which
  ignore unknown fields, read it as well).

:data:`CardCompat` chooses: ``"auto"`` (the default) applies the protocol's
version rule to the card: a request naming ``A2A-Version`` 1.x gets the strict
card, a request without the header (which the spec reads as 0.3) or naming 0.x
gets the compat card, and the response says ``Vary: A2A-Version``; ``"true"``
always serves the compat card, ``"false"`` always the strict one.

Caching (spec: cards SHOULD be served with ``Cache-Control`` and a ``max-age``,
MAY carry ``ETag`` / ``Last-Modified``): every answer carries
``Cache-Control: public, max-age=N``, a strong ``ETag`` (a hash of the exact
body), and ``Last-Modified`` (when the card was built, i.e. at start-up, to
the second). ``If-None-Match`` (weak comparison, ``*`` included) and, when no
``If-None-Match`` is sent, ``If-Modified-Since`` are answered with 304 (RFC
9110 §13.1.1-13.1.3). Both bodies are rendered once, at start-up.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from typing import Any, Literal

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types.a2a_pb2 import AgentCard, AgentInterface
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, VERSION_HEADER
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CardCompat = Literal["auto", "true", "false"]
"""``ARENA_CARD_V03_COMPAT``: which rendering of the card is served (see the module docstring)."""

CARD_MEDIA_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class RenderedCard:
    """One rendering of the card: its body and the validators that go with it."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, card: AgentCard) -> RenderedCard:
        raw = agent_card_to_dict(card)
        _list_main_interface(raw)
        body = json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode()
        return cls(body=body, etag=f'"{hashlib.sha256(body).hexdigest()[:32]}"')


def _list_main_interface(raw: dict[str, Any]) -> None:
    """List a 0.3 card's main ``url`` in its ``additionalInterfaces`` too.

    A2A 0.3 (§5.6.4): when ``additionalInterfaces`` is given it SHOULD also
    name the main URL and transport, so a client sees every option in one list;
    a2a-sdk leaves it out.
    """
    url, transport, extra = raw.get("url"), raw.get("preferredTransport"), raw.get("additionalInterfaces")
    if not isinstance(extra, list) or url is None or transport is None:
        return
    if not any(isinstance(i, dict) and (i.get("url"), i.get("transport")) == (url, transport) for i in extra):
        extra.insert(0, {"transport": transport, "url": url})


def with_v03_interfaces(card: AgentCard) -> AgentCard:
    """A copy of ``card`` that also lists each 1.0 interface at protocol 0.3.

    a2a-sdk renders such a card with the 0.3 legacy top-level fields.
    """
    compat = AgentCard()
    compat.CopyFrom(card)
    for interface in card.supported_interfaces:
        if interface.protocol_version == PROTOCOL_VERSION_1_0:
            compat.supported_interfaces.append(
                AgentInterface(
                    url=interface.url,
                    protocol_binding=interface.protocol_binding,
                    protocol_version=PROTOCOL_VERSION_0_3,
                    tenant=interface.tenant,
                )
            )
    return compat


def _wants_v1(request: Request) -> bool:
    """Whether the request names an A2A major version of 1 or more (no header: 0.3)."""
    version = request.headers.get(VERSION_HEADER, "").strip()
    major = version.partition(".")[0]
    return major.isdigit() and int(major) >= 1


def _none_match_hits(header: str, etag: str) -> bool:
    """If-None-Match's weak comparison (RFC 9110 §13.1.2)."""
    candidates = [candidate.strip() for candidate in header.split(",")]
    return "*" in candidates or any(candidate.removeprefix("W/") == etag for candidate in candidates)


def _not_modified_since(header: str, last_modified: int) -> bool:
    """Whether an If-Modified-Since date is at or after ``last_modified`` (invalid dates: no)."""
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return False
    if since.tzinfo is None:  # RFC 850 / asctime dates are GMT
        return False
    return last_modified <= since.timestamp()


def create_card_route(
    card: AgentCard,
    *,
    path: str,
    compat: CardCompat = "auto",
    max_age_s: int = 300,
    built_at: float | None = None,
) -> Route:
    """The ``GET``/``HEAD`` route serving ``card`` (built with its 1.0 interfaces only) at ``path``.

    ``compat`` chooses the rendering as the module docstring says; ``max_age_s``
    is the ``Cache-Control`` max-age; ``built_at`` (default: now) is the
    ``Last-Modified`` time.
    """
    strict = RenderedCard.of(card)
    legacy = RenderedCard.of(with_v03_interfaces(card))
    last_modified = int(time.time() if built_at is None else built_at)
    common = {
        "Cache-Control": f"public, max-age={max_age_s}",
        "Last-Modified": formatdate(last_modified, usegmt=True),
    }
    if compat == "auto":
        common["Vary"] = VERSION_HEADER

    def choose(request: Request) -> RenderedCard:
        if compat == "auto":
            return strict if _wants_v1(request) else legacy
        return legacy if compat == "true" else strict

    async def agent_card(request: Request) -> Response:
        rendered = choose(request)
        headers = {**common, "ETag": rendered.etag}
        if_none_match = request.headers.get("if-none-match")
        if if_none_match is not None:
            fresh = _none_match_hits(if_none_match, rendered.etag)
        else:
            if_modified_since = request.headers.get("if-modified-since")
            fresh = if_modified_since is not None and _not_modified_since(if_modified_since, last_modified)
        if fresh:
            return Response(status_code=304, headers=headers)
        return Response(rendered.body, media_type=CARD_MEDIA_TYPE, headers=headers)

    return Route(path, agent_card, methods=["GET"])


__all__ = ["CARD_MEDIA_TYPE", "CardCompat", "RenderedCard", "create_card_route", "with_v03_interfaces"]
