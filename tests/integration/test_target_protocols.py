"""The attacker talks to targets that offer only A2A 0.3, or only HTTP+JSON."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from arena_core.a2a import TargetConversation, connect_target
from arena_core.errors import AgentCardError
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio


def _card_app(card: dict[str, Any]) -> Starlette:
    async def serve(_: Request) -> JSONResponse:
        return JSONResponse(card)

    return Starlette(routes=[Route("/.well-known/agent-card.json", serve)])


LEGACY_CARD = {
    "name": "Legacy Agent",
    "description": "An A2A 0.3 agent",
    "url": "http://defender/",
    "preferredTransport": "JSONRPC",
    "protocolVersion": "0.3.0",
    "version": "1.0.0",
    "capabilities": {"streaming": False},
    "defaultInputModes": ["text"],
    "defaultOutputModes": ["text"],
    "skills": [{"id": "chat", "name": "chat", "description": "chat", "tags": ["chat"]}],
}


async def test_a_0_3_only_card_is_spoken_to_in_0_3_with_both_ids(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    arena.add_defender()
    # The card lives on another host but points at the defender's JSON-RPC endpoint.
    arena.add("legacy", _card_app(LEGACY_CARD))
    target = await connect_target("http://legacy", http=arena.http)
    assert target.protocol_version.startswith("0.3")
    assert target.binding == "JSONRPC"
    conversation = TargetConversation(target)
    first = await conversation.send("one")
    second = await conversation.send("two")
    assert second.task_id == first.task_id
    assert second.context_id == first.context_id
    assert second.text.endswith('"one" | "two"')
    await target.close()


async def test_an_http_json_only_card_is_used_over_rest(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    arena.add_defender()
    card = {
        "name": "REST Agent",
        "description": "HTTP+JSON only",
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": "http://defender/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chat", "name": "chat", "description": "chat", "tags": ["chat"]}],
    }
    arena.add("rest", _card_app(card))
    target = await connect_target("http://rest", http=arena.http)
    assert target.binding == "HTTP+JSON"
    conversation = TargetConversation(target)
    await conversation.send("uno")
    reply = await conversation.send("dos")
    assert reply.text.endswith('"uno" | "dos"')
    await target.close()


async def test_a_grpc_only_card_is_refused_with_a_reason(arena: InProcessArena) -> None:
    card = {
        "name": "gRPC Agent",
        "description": "gRPC only",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": "grpc://x:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chat", "name": "chat", "description": "chat", "tags": ["chat"]}],
    }
    arena.add("grpc", _card_app(card))
    with pytest.raises(AgentCardError, match="offers no interface the arena speaks"):
        await connect_target("http://grpc", http=arena.http)
