"""Targets and attackers are reached by one connect path: a card that fails one fails both, alike.

Each case serves one agent card in process (over ASGI, no component of ours replaced) and
connects to it twice: as a target (``connect_target``) and as an attacker
(``play_remote_match``). Both go through :func:`arena_core.a2a.client.connect.connect`, so both
fail with the same error class and reason, and nothing but the card is ever requested.
"""

from __future__ import annotations

from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a import connect_target
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.egress_policy import EgressPolicy, IPAddress, parse_address
from arena_core.errors import AgentCardError, ArenaError, TargetNotAllowedError, TargetProtocolError
from arena_core.match_models import MatchRequest
from conftest import InProcessArena
from support.cards import card_app, card_json

pytestmark = pytest.mark.asyncio

CARD_PATH = "/.well-known/agent-card.json"


class PathRecorder:
    """Passes every request to ``app`` and records its path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


async def _everywhere_private(host: str, port: int) -> list[IPAddress]:
    address = parse_address("10.0.0.7")
    assert address is not None
    return [address]


def _allow_agent_only() -> EgressGuard:
    return EgressGuard(EgressPolicy.parse("agent"), resolver=_everywhere_private)


CASES: dict[str, tuple[dict[str, Any], bool, type[ArenaError], str]] = {
    # card, guarded, the error both raise, what its message says
    "no-interface-the-arena-speaks": (
        card_json("http://agent/", binding="GRPC"),
        False,
        AgentCardError,
        "offers no interface the arena speaks",
    ),
    "an-interface-the-a2a-sdk-cannot-use": (
        card_json("http://agent/rest", binding="HTTP+JSON", version="0.2"),
        False,
        TargetProtocolError,
        r"http://agent: the A2A client cannot use the HTTP\+JSON interface its agent card lists \(0\.2\)",
    ),
    "an-interface-off-the-allowlist": (
        card_json("http://elsewhere.test/"),
        True,
        TargetNotAllowedError,
        r"refused to connect to http://elsewhere\.test:80 \(the interface the agent card of "
        r"(attacker )?http://agent:80 lists\): elsewhere\.test is not on the target allowlist",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_card_that_fails_the_target_client_fails_the_attacker_client_alike(
    arena: InProcessArena, case: str
) -> None:
    card, guarded, error, says = CASES[case]
    recorder = PathRecorder(card_app(card))
    arena.add("agent", recorder)

    with pytest.raises(error, match=says) as as_target:
        await connect_target("http://agent", http=arena.http, guard=_allow_agent_only() if guarded else None)
    with pytest.raises(error, match=says) as as_attacker:
        await play_remote_match(
            "http://agent",
            MatchRequest(target="http://defender", max_turns=1),
            http=arena.http,
            guard=_allow_agent_only() if guarded else None,
        )

    assert as_target.value.kind == as_attacker.value.kind == error.kind
    assert recorder.paths == [CARD_PATH, CARD_PATH]  # the card, once per client, nothing else


async def test_an_agent_without_a_card_fails_both_clients_alike(arena: InProcessArena) -> None:
    recorder = PathRecorder(card_app(card_json("http://agent/")))
    arena.add("agent", recorder)
    says = r"no A2A agent card at http://agent/nowhere\.json: HTTP 404"

    with pytest.raises(AgentCardError, match=says):
        await connect_target("http://agent/nowhere.json", http=arena.http)
    with pytest.raises(AgentCardError, match=says):
        await play_remote_match(
            "http://agent/nowhere.json", MatchRequest(target="http://defender", max_turns=1), http=arena.http
        )

    assert recorder.paths == ["/nowhere.json", "/nowhere.json"]
