"""play_remote_match against attackers whose cards or transports are out of the ordinary.

In process (httpx over ASGI): an attacker reachable only over HTTP+JSON, a card whose
interface the A2A client cannot use, the interface the client is bound to, and egress
refusals wrapped by the libraries on the way (never mistaken for an unreachable attacker).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a.client.attacker import play_remote_match
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.egress_policy import EgressPolicy, IPAddress, parse_address
from arena_core.errors import TargetError, TargetNotAllowedError, TargetProtocolError, is_retryable_kind
from arena_core.match_models import MatchRequest
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

CARD_PATH = "/.well-known/agent-card.json"


class CardRewriter:
    """The attacker app, with its agent card replaced; records the path of every request."""

    def __init__(self, app: ASGIApp, card: dict[str, Any]) -> None:
        self.app = app
        self.card = card
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.paths.append(scope["path"])
        if scope["path"] == CARD_PATH:
            response = httpx.Response(200, json=self.card)
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": response.content})
            return
        await self.app(scope, receive, send)


async def attacker_with_card(
    arena: InProcessArena, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> CardRewriter:
    """Wire model, defender and an attacker whose card lists ``edit(its interfaces)``."""
    arena.add_model(mode="obey")
    arena.add_defender()
    arena.add_attacker()
    card = (await arena.http.get(f"http://attacker{CARD_PATH}", headers={"A2A-Version": "1.0"})).json()
    card = copy.deepcopy(card)
    card["supportedInterfaces"] = edit(card["supportedInterfaces"])
    rewriter = CardRewriter(arena.apps["attacker"], card)
    arena.add("attacker", rewriter)
    return rewriter


def interface(interfaces: list[dict[str, Any]], binding: str) -> dict[str, Any]:
    (found,) = [i for i in interfaces if i["protocolBinding"] == binding]
    return dict(found)


def request() -> MatchRequest:
    return MatchRequest(target="http://defender", max_turns=3)


async def test_an_attacker_offering_only_http_json_plays_the_match(arena: InProcessArena) -> None:
    rewriter = await attacker_with_card(arena, lambda found: [interface(found, "HTTP+JSON")])
    result = await play_remote_match("http://attacker", request(), http=arena.http)
    assert result.error is None, result.error
    assert result.turns_used >= 1
    a2a_paths = [path for path in rewriter.paths if path != CARD_PATH]
    assert a2a_paths and all(path.startswith("/rest/") for path in a2a_paths), a2a_paths


async def test_the_client_uses_the_interface_chosen_from_the_card_and_no_other(arena: InProcessArena) -> None:
    # HTTP+JSON listed first: the arena's choice (and the only interface checked) is HTTP+JSON,
    # so the client must not pick the JSON-RPC one on its own.
    rewriter = await attacker_with_card(
        arena, lambda found: [interface(found, "HTTP+JSON"), interface(found, "JSONRPC")]
    )
    result = await play_remote_match("http://attacker", request(), http=arena.http)
    assert result.error is None, result.error
    a2a_paths = [path for path in rewriter.paths if path != CARD_PATH]
    assert a2a_paths and all(path.startswith("/rest/") for path in a2a_paths), a2a_paths


@pytest.mark.parametrize("version", ["0.2", "banana"])
async def test_an_interface_the_a2a_client_cannot_use_is_a_protocol_error(
    arena: InProcessArena, version: str
) -> None:
    def unusable(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**interface(found, "HTTP+JSON"), "protocolVersion": version}]

    await attacker_with_card(arena, unusable)
    with pytest.raises(TargetProtocolError, match="the A2A client cannot use the HTTP\\+JSON interface"):
        await play_remote_match("http://attacker", request(), http=arena.http)


def resolver_for(names: dict[str, str]) -> Any:
    async def resolve(host: str, port: int) -> list[IPAddress]:
        if host not in names:
            raise OSError(0, "unknown name")
        address = parse_address(names[host])
        assert address is not None
        return [address]

    return resolve


async def test_only_the_chosen_interface_is_checked_by_the_guard(arena: InProcessArena) -> None:
    guard = EgressGuard(
        EgressPolicy.parse("attacker"),
        resolver=resolver_for({"attacker": "10.0.0.7", "elsewhere.test": "10.9.9.9"}),
    )

    def elsewhere_unused(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        unused = {
            **interface(found, "HTTP+JSON"),
            "url": "http://elsewhere.test/rest",
            "protocolVersion": "0.3",
        }
        return [interface(found, "JSONRPC"), unused]

    await attacker_with_card(arena, elsewhere_unused)
    result = await play_remote_match("http://attacker", request(), http=arena.http, guard=guard)
    assert result.error is None, result.error

    def elsewhere_chosen(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**interface(found, "JSONRPC"), "url": "http://elsewhere.test/"}]

    await attacker_with_card(arena, elsewhere_chosen)
    with pytest.raises(TargetNotAllowedError) as caught:
        await play_remote_match("http://attacker", request(), http=arena.http, guard=guard)
    assert str(caught.value).startswith(
        "refused to connect to http://elsewhere.test:80 (the interface the agent card of attacker "
        "http://attacker:80 lists): elsewhere.test is not on the target allowlist"
    )


class Refusing(httpx.AsyncBaseTransport):
    """Refuses requests the way ``wrap`` dresses the refusal up: the A2A calls, or the card too."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, wrap: Callable[..., BaseException], *, card_too: bool
    ) -> None:
        self._inner = inner
        self._wrap = wrap
        self._card_too = card_too
        self.refused = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == CARD_PATH and not self._card_too:
            return await self._inner.handle_async_request(request)
        self.refused += 1
        refusal = TargetNotAllowedError(
            "refused to connect to http://attacker:80: 10.0.0.7 is not on the target allowlist"
        )
        raise self._wrap(refusal, request)


def as_connect_error(refusal: TargetNotAllowedError, request: httpx.Request) -> BaseException:
    wrapped = httpx.ConnectError("connection refused by policy", request=request)
    wrapped.__cause__ = refusal
    return wrapped


def as_remote_protocol_error(refusal: TargetNotAllowedError, request: httpx.Request) -> BaseException:
    wrapped = httpx.RemoteProtocolError("the stream broke", request=request)
    wrapped.__context__ = refusal
    return wrapped


def in_a_group(refusal: TargetNotAllowedError, request: httpx.Request) -> BaseException:
    return ExceptionGroup("unhandled errors in a task group", [refusal])


@pytest.mark.parametrize("card_too", [False, True], ids=["a2a-call", "card"])
@pytest.mark.parametrize("wrap", [as_connect_error, as_remote_protocol_error, in_a_group])
async def test_a_wrapped_egress_refusal_surfaces_as_not_allowed_never_as_retryable(
    arena: InProcessArena, wrap: Callable[..., BaseException], card_too: bool
) -> None:
    arena.add_attacker()
    refusing = Refusing(arena.router, wrap, card_too=card_too)
    async with httpx.AsyncClient(transport=refusing) as http:
        with pytest.raises(TargetNotAllowedError) as caught:
            await play_remote_match("http://attacker", request(), http=http)
    assert refusing.refused >= 1
    assert "10.0.0.7 is not on the target allowlist" in str(caught.value)
    # How the orchestrator's worker tells retryable failures apart.
    assert not isinstance(caught.value, TargetError)
    assert caught.value.kind == "target_not_allowed" and not is_retryable_kind(caught.value.kind)
