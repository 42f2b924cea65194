"""The defender over A2A: cards, both protocol versions, both bindings, multi-turn."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.helpers import new_text_message
from a2a.types.a2a_pb2 import AgentInterface, Role, SendMessageRequest, TaskState
from a2a.utils.constants import TransportProtocol

from arena_core.a2a import TargetConversation, connect_target
from arena_core.a2a.card_validation import card_problems_v1
from conftest import InProcessArena
from support.asgi import client_for

pytestmark = pytest.mark.asyncio

V10 = {"A2A-Version": "1.0"}


def _rpc(method: str, params: dict[str, Any], rid: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


async def _raw_client(arena: InProcessArena) -> httpx.AsyncClient:
    # A separate client: the SDK's ClientFactory stamps A2A-Version on clients it is given.
    return client_for(arena.router)


async def test_card_is_a_strict_a2a_1_0_card(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender()
    response = await arena.http.get(f"{url}/.well-known/agent-card.json", headers=V10)
    assert response.status_code == 200
    raw = response.json()
    assert card_problems_v1(raw) == []
    assert raw["name"] == "Arena Defender"
    assert raw["capabilities"]["streaming"] is True
    bindings = {(i["protocolBinding"], i["protocolVersion"]) for i in raw["supportedInterfaces"]}
    assert bindings == {("JSONRPC", "1.0"), ("HTTP+JSON", "1.0")}
    assert raw["skills"][0]["examples"]
    assert "url" not in raw


async def test_v03_compat_setting_adds_legacy_fields(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender(card_v03_compat="true")
    raw = (await arena.http.get(f"{url}/.well-known/agent-card.json")).json()
    assert raw["url"] == "http://defender/"
    assert raw["protocolVersion"].startswith("0.3")
    assert any("legacy" in problem for problem in card_problems_v1(raw))
    parse_agent_card(raw)  # still a card the SDK reads


async def test_v10_send_message_and_continuation_with_both_ids(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    http = await _raw_client(arena)
    first = await http.post(
        url,
        json=_rpc(
            "SendMessage", {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "alpha"}]}}
        ),
        headers=V10,
    )
    task = first.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "alpha" in task["status"]["message"]["parts"][0]["text"]
    second = await http.post(
        url,
        json=_rpc(
            "SendMessage",
            {
                "message": {
                    "messageId": "m2",
                    "role": "ROLE_USER",
                    "contextId": task["contextId"],
                    "taskId": task["id"],
                    "parts": [{"text": "beta"}],
                }
            },
            2,
        ),
        headers=V10,
    )
    follow = second.json()["result"]["task"]
    assert follow["id"] == task["id"] and follow["contextId"] == task["contextId"]
    reply = follow["status"]["message"]["parts"][0]["text"]
    # The scripted echo model names every user message it received: the whole history.
    assert reply == '[scripted] heard 2 user message(s): "alpha" | "beta"'
    await http.aclose()


async def test_v03_message_send_and_continuation(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    http = await _raw_client(arena)
    message = {
        "kind": "message",
        "messageId": "a",
        "role": "user",
        "parts": [{"kind": "text", "text": "one"}],
    }
    first = (await http.post(url, json=_rpc("message/send", {"message": message}))).json()["result"]
    assert first["kind"] == "task" and first["status"]["state"] == "input-required"
    message = {
        **message,
        "messageId": "b",
        "contextId": first["contextId"],
        "taskId": first["id"],
        "parts": [{"kind": "text", "text": "two"}],
    }
    second = (await http.post(url, json=_rpc("message/send", {"message": message}, 2))).json()["result"]
    assert second["id"] == first["id"]
    assert second["status"]["message"]["parts"][0]["text"].endswith('"one" | "two"')
    await http.aclose()


async def test_new_message_without_ids_starts_a_new_conversation(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    target = await connect_target(url, http=arena.http)
    first = await target.send("first")
    other = await target.send("second")
    assert other.context_id != first.context_id
    assert other.text == '[scripted] heard 1 user message(s): "second"'
    await target.close()


async def test_context_only_follow_up_opens_new_task_with_history(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    target = await connect_target(url, http=arena.http)
    first = await target.send("remember me")
    again = await target.send("and me", context_id=first.context_id)
    assert again.context_id == first.context_id and again.task_id != first.task_id
    assert '"remember me" | "and me"' in again.text
    await target.close()


@pytest.mark.parametrize("binding", [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON])
@pytest.mark.parametrize("version", ["1.0", "0.3"])
@pytest.mark.parametrize("streaming", [False, True])
async def test_sdk_clients_of_both_versions_bindings_and_modes(
    arena: InProcessArena, binding: TransportProtocol, version: str, streaming: bool
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    raw = (await arena.http.get(f"{url}/.well-known/agent-card.json")).json()
    card = parse_agent_card(raw)
    path = "/" if binding == TransportProtocol.JSONRPC else "/rest"
    del card.supported_interfaces[:]
    card.supported_interfaces.append(
        AgentInterface(url=f"{url}{path}", protocol_binding=binding.value, protocol_version=version)
    )
    http = client_for(arena.router)
    client = ClientFactory(
        ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding.value])
    ).create(card)
    request = SendMessageRequest(message=new_text_message("hello there", role=Role.ROLE_USER))
    events = [event async for event in client.send_message(request)]
    states = []
    texts = []
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            states.append(event.task.status.state)
            texts += [p.text for p in event.task.status.message.parts]
        elif kind == "status_update":
            states.append(event.status_update.status.state)
            texts += [p.text for p in event.status_update.status.message.parts]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    assert '"hello there"' in texts[-1]
    await client.close()
    await http.aclose()


async def test_rest_v03_path_is_served(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    http = await _raw_client(arena)
    body = {"message": {"messageId": "r1", "role": "ROLE_USER", "content": [{"text": "rest 0.3"}]}}
    response = await http.post(f"{url}/rest/v1/message:send", json=body)
    assert response.status_code == 200, response.text
    assert "rest 0.3" in json.dumps(response.json())
    await http.aclose()


async def test_conversation_ends_with_cancel(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    http = await _raw_client(arena)
    start = await http.post(
        url,
        json=_rpc(
            "SendMessage", {"message": {"messageId": "c1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
        ),
        headers=V10,
    )
    task = start.json()["result"]["task"]
    cancel = await http.post(url, json=_rpc("CancelTask", {"id": task["id"]}, 2), headers=V10)
    assert cancel.json()["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    late = await http.post(
        url,
        json=_rpc(
            "SendMessage",
            {
                "message": {
                    "messageId": "c2",
                    "role": "ROLE_USER",
                    "contextId": task["contextId"],
                    "taskId": task["id"],
                    "parts": [{"text": "still there?"}],
                }
            },
            3,
        ),
        headers=V10,
    )
    assert "error" in late.json()
    await http.aclose()


async def test_model_down_fails_the_task_with_a_reason_and_service_keeps_serving(
    arena: InProcessArena,
) -> None:
    url = arena.add_defender(model_host="nowhere")
    target = await connect_target(url, http=arena.http)
    reply = await target.send("hello?")
    assert reply.state == "failed"
    assert "could not answer" in reply.text and "unavailable" in reply.text
    arena.add_model(host="nowhere")
    healthy = await target.send("hello again")
    assert healthy.state == "completed"
    await target.close()


async def test_readyz_reflects_the_model_server(arena: InProcessArena) -> None:
    url = arena.add_defender(model_host="model")
    # The readiness probe uses its own HTTP client, so an in-process model is not visible to it.
    assert (await arena.http.get(f"{url}/healthz")).json() == {"status": "ok"}
    ready = await arena.http.get(f"{url}/readyz")
    assert ready.status_code == 503
    assert "not reachable" in ready.json()["reason"]


async def test_empty_message_is_refused_with_a_reason(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender()
    target = await connect_target(url, http=arena.http)
    conversation = TargetConversation(target)
    reply = await conversation.send("   ")
    assert reply.state == "failed" and "no text" in reply.text
    await target.close()
