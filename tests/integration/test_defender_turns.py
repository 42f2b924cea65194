"""The defender's turns over A2A: both turn modes, task-only follow-ups, usage metadata.

Each case runs in both protocol versions and both bindings; the task-only
follow-up also runs on Redis with the turns spread over two replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from starlette.applications import Starlette

from arena_core.a2a.agent_lifespan import held_task_count
from arena_core.settings import PARKED_RELEASE_WITH_REDIS_S, load_settings
from conftest import InProcessArena
from support.asgi import client_for
from support.raw_a2a import WIRE_NAMES, RawWire, text_of
from support.redis_server import RedisServer

pytestmark = pytest.mark.asyncio


@dataclass(frozen=True)
class Wire(RawWire):
    """Non-streaming requests on one wire."""

    async def post(self, http: httpx.AsyncClient, base: str, message: Any) -> httpx.Response:
        if self.binding == "jsonrpc":
            method = "SendMessage" if self.version == "1.0" else "message/send"
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
            return await http.post(f"{base}/", json=body, headers=self.headers)
        path = "/rest/message:send" if self.version == "1.0" else "/rest/v1/message:send"
        return await http.post(f"{base}{path}", json={"message": message}, headers=self.headers)

    def result(self, response: httpx.Response) -> dict[str, Any]:
        """The task of a successful answer (either version's shape)."""
        assert response.status_code == 200, response.text
        body = response.json()
        if self.binding == "jsonrpc":
            assert "result" in body, body
            body = body["result"]
        if (self.version, self.binding) == ("0.3", "jsonrpc"):
            assert body.get("kind") == "task", body
            return dict(body)
        assert "task" in body, body
        return dict(body["task"])

    def error(self, response: httpx.Response) -> str:
        """The error message of a refused request."""
        body = response.json()
        if self.binding == "jsonrpc":
            assert "error" in body, body
            return str(body["error"]["message"])
        assert response.status_code >= 400, body
        return str(body["error"]["message"] if "error" in body else body)


WIRES = [Wire(*names) for names in WIRE_NAMES]


def _reply(task: dict[str, Any]) -> str:
    return text_of(task["status"]["message"])


@pytest_asyncio.fixture
async def http(arena: InProcessArena) -> AsyncIterator[httpx.AsyncClient]:
    client = client_for(arena.router)
    yield client
    await client.aclose()


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_complete_mode_each_turn_is_a_completed_task_in_one_context(
    arena: InProcessArena, http: httpx.AsyncClient, wire: Wire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()  # complete is the default turn mode
    first = wire.result(await wire.post(http, url, wire.message("alpha")))
    assert wire.state(first) == "completed"
    assert _reply(first) == '[scripted] heard 1 user message(s): "alpha"'
    # The reply is also the task's artifact, where clients of completed tasks look for it.
    assert text_of(first["artifacts"][0]) == _reply(first)
    second = wire.result(await wire.post(http, url, wire.message("beta", context_id=first["contextId"])))
    assert wire.state(second) == "completed"
    assert second["contextId"] == first["contextId"] and second["id"] != first["id"]
    assert _reply(second) == '[scripted] heard 2 user message(s): "alpha" | "beta"'
    # A completed task takes no more messages; the error says so.
    refused = await wire.post(http, url, wire.message("gamma", task_id=second["id"]))
    error = wire.error(refused)
    assert "terminal" in error.lower()
    assert f"send the message with contextId {second['contextId']} and no taskId" in error


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_task_only_follow_ups_keep_the_conversation(
    arena: InProcessArena, http: httpx.AsyncClient, wire: Wire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    first = wire.result(await wire.post(http, url, wire.message("one")))
    assert wire.state(first) == "input-required"
    heard = ['"one"']
    for text in ("two", "three", "four"):
        follow = wire.result(await wire.post(http, url, wire.message(text, task_id=first["id"])))
        heard.append(f'"{text}"')
        assert (follow["id"], follow["contextId"]) == (first["id"], first["contextId"])
        assert wire.state(follow) == "input-required"
        assert _reply(follow) == f"[scripted] heard {len(heard)} user message(s): {' | '.join(heard)}"


async def test_task_only_follow_ups_on_redis_across_replicas(
    arena: InProcessArena, http: httpx.AsyncClient, redis_server: RedisServer, redis_namespace: str
) -> None:
    arena.add_model(mode="echo")
    shared = {
        "redis_url": redis_server.url,
        "redis_namespace": redis_namespace,
        "defender_turn_mode": "input-required",
    }
    replicas = [arena.add_defender("defender-a", **shared), arena.add_defender("defender-b", **shared)]
    async with contextlib.AsyncExitStack() as running:  # each app's lifespan closes its Redis pool
        for host in ("defender-a", "defender-b"):
            app = arena.apps[host]
            assert isinstance(app, Starlette)
            await running.enter_async_context(app.router.lifespan_context(app))
        await _task_only_turns_alternating(http, replicas)


async def _task_only_turns_alternating(http: httpx.AsyncClient, replicas: list[str]) -> None:
    wire = WIRES[0]
    first = wire.result(await wire.post(http, replicas[0], wire.message("one")))
    heard = ['"one"']
    for turn, text in enumerate(("two", "three", "four"), start=1):
        replica = replicas[turn % 2]
        follow = wire.result(await wire.post(http, replica, wire.message(text, task_id=first["id"])))
        heard.append(f'"{text}"')
        assert follow["contextId"] == first["contextId"]
        assert _reply(follow) == f"[scripted] heard {len(heard)} user message(s): {' | '.join(heard)}"


async def test_a_task_id_of_another_context_is_refused(
    arena: InProcessArena, http: httpx.AsyncClient
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    wire = WIRES[0]
    first = wire.result(await wire.post(http, url, wire.message("one")))
    other = wire.result(await wire.post(http, url, wire.message("other")))
    refused = await wire.post(
        http, url, wire.message("two", task_id=first["id"], context_id=other["contextId"])
    )
    assert "does not match" in wire.error(refused)


async def test_unknown_task_only_follow_up_is_task_not_found(
    arena: InProcessArena, http: httpx.AsyncClient
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    response = await WIRES[0].post(http, url, WIRES[0].message("x", task_id="no-such-task"))
    assert response.json()["error"]["code"] == -32001


_TOKENS = re.compile(r'"(?:promptTokens|completionTokens)":\s*([0-9.]+)')


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_usage_metadata_is_camel_case_integers(
    arena: InProcessArena, http: httpx.AsyncClient, wire: Wire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    response = await wire.post(http, url, wire.message("count me"))
    usage = wire.result(response)["status"]["message"]["metadata"]["arena"]["usage"]
    assert set(usage) == {"promptTokens", "completionTokens"}
    assert all(type(value) is int and value > 0 for value in usage.values()), usage
    # On the wire, not only after json.loads: `446`, never `446.0`.
    assert [value.isdigit() for value in _TOKENS.findall(response.text)] == [True, True], response.text


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_usage_metadata_is_integers_on_streams(
    arena: InProcessArena, http: httpx.AsyncClient, version: str
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    message = Wire("", version, "jsonrpc").message("stream me")
    method = "SendStreamingMessage" if version == "1.0" else "message/stream"
    headers = {"A2A-Version": "1.0"} if version == "1.0" else {}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    response = await http.post(f"{url}/", json=body, headers=headers)
    assert response.status_code == 200
    assert "promptTokens" in response.text
    assert re.search(r'Tokens":\s*\d+\.0', response.text) is None, response.text


async def test_on_redis_a_parked_task_leaves_memory_soon_and_its_follow_up_still_continues_it(
    arena: InProcessArena, http: httpx.AsyncClient, redis_server: RedisServer, redis_namespace: str
) -> None:
    """With Redis the task lives there: the process lets a parked task go (ARENA_TASK_IDLE_TIMEOUT_S,
    2 s unless set) and the follow-up recreates it from Redis with the whole conversation."""
    arena.add_model(mode="echo")
    shared = {"redis_url": redis_server.url, "redis_namespace": redis_namespace}
    assert load_settings(**shared).parked_task_release_s() == PARKED_RELEASE_WITH_REDIS_S
    url = arena.add_defender(defender_turn_mode="input-required", task_idle_timeout_s=0.2, **shared)
    app = arena.apps["defender"]
    assert isinstance(app, Starlette)
    wire = WIRES[0]
    async with app.router.lifespan_context(app):
        first = wire.result(await wire.post(http, url, wire.message("one")))
        assert wire.state(first) == "input-required"
        for _ in range(200):
            if held_task_count(app.state.request_handler) == 0:
                break
            await asyncio.sleep(0.05)
        assert held_task_count(app.state.request_handler) == 0, "the parked task is still held"
        follow = wire.result(await wire.post(http, url, wire.message("two", task_id=first["id"])))
        assert (follow["id"], wire.state(follow)) == (first["id"], "input-required")
        assert _reply(follow) == '[scripted] heard 2 user message(s): "one" | "two"'
