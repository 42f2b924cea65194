"""The attacker talks to targets that offer only A2A 0.3, or only HTTP+JSON."""

from __future__ import annotations

import pytest

from arena_core.a2a import TargetConversation, connect_target
from arena_core.errors import AgentCardError
from conftest import InProcessArena
from support.cards import card_app, card_json

pytestmark = pytest.mark.asyncio


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
    arena.add_defender(defender_turn_mode="input-required")
    # The card lives on another host but points at the defender's JSON-RPC endpoint.
    arena.add("legacy", card_app(LEGACY_CARD))
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
    card = card_json("http://defender/rest", binding="HTTP+JSON", name="REST Agent")
    arena.add("rest", card_app(card))
    target = await connect_target("http://rest", http=arena.http)
    assert target.binding == "HTTP+JSON"
    conversation = TargetConversation(target)
    await conversation.send("uno")
    reply = await conversation.send("dos")
    assert reply.text.endswith('"uno" | "dos"')
    await target.close()


async def test_a_grpc_only_card_is_refused_with_a_reason(arena: InProcessArena) -> None:
    card = card_json("grpc://x:1", binding="GRPC", name="gRPC Agent")
    arena.add("grpc", card_app(card))
    with pytest.raises(AgentCardError, match="offers no interface the arena speaks"):
        await connect_target("http://grpc", http=arena.http)
