"""The defender's streams over A2A: how they begin (1.0 3.1.2) and how 0.3 streams end (0.3 7.2.2).

* Every stream begins with the Task: a new task's (the executor's, once), and
  a follow-up's too, which a2a-sdk 1.3.0 alone starts with a status update
  (``ArenaRequestHandler`` opens it with ``opening_task``). The stored task is
  the SDK's: the history the stream opened with is what GetTask returns after
  the turn, the new message included, and the task is parked again.
* A 0.3 stream ending in ``input-required`` says ``final: true`` on that last
  update (``V03StreamFinal``); 1.0 streams carry no ``final``.

Each case runs over raw JSON on all four wires (1.0 and 0.3, JSON-RPC and
HTTP+JSON); the follow-up also runs on Redis, its turn served by another replica.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Part, TaskState
from starlette.applications import Starlette

from arena_core.a2a.agent_app import CardSpec, build_agent_app, build_agent_card
from arena_core.state_backend import create_state_backend
from conftest import InProcessArena
from support.asgi import client_for
from support.raw_a2a import WIRE_NAMES, RawWire, text_of
from support.redis_server import RedisServer

pytestmark = pytest.mark.asyncio


@dataclass(frozen=True)
class StreamWire(RawWire):
    """SendStreamingMessage / message/stream on one wire, as raw JSON."""

    async def stream(
        self, http: httpx.AsyncClient, base: str, message: Any, configuration: Any = None
    ) -> list[dict[str, Any]]:
        """The stream's events, each as ``{"kind": ..., "body": ...}`` (kind in the 1.0 names)."""
        headers = self.headers
        params: dict[str, Any] = {"message": message}
        if configuration is not None:
            params["configuration"] = configuration
        if self.binding == "jsonrpc":
            method = "SendStreamingMessage" if self.version == "1.0" else "message/stream"
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            response = await http.post(f"{base}/", json=body, headers=headers)
        else:
            path = "/rest/message:stream" if self.version == "1.0" else "/rest/v1/message:stream"
            response = await http.post(f"{base}{path}", json=params, headers=headers)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream"), response.text
        return [self._event(json.loads(data)) for data in _sse_data(response.text)]

    def _event(self, document: Any) -> dict[str, Any]:
        if self.binding == "jsonrpc":
            assert "result" in document, document
            document = document["result"]
        if (self.version, self.binding) == ("0.3", "jsonrpc"):
            kinds = {"task": "task", "message": "message", "status-update": "statusUpdate"}
            return {"kind": kinds.get(document["kind"], document["kind"]), "body": document}
        ((kind, body),) = document.items()
        return {"kind": kind, "body": body}


WIRES = [StreamWire(*names) for names in WIRE_NAMES]
V03_WIRES = [wire for wire in WIRES if wire.version == "0.3"]


def _sse_data(text: str) -> list[str]:
    """The data of each event of an SSE body (events end at a blank line; data lines are joined)."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            events.append("\n".join(data))
    return events


async def _get_task(http: httpx.AsyncClient, base: str, task_id: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    response = await http.post(f"{base}/", json=body, headers={"A2A-Version": "1.0"})
    return dict(response.json()["result"])


@pytest_asyncio.fixture
async def http(arena: InProcessArena) -> AsyncIterator[httpx.AsyncClient]:
    client = client_for(arena.router)
    yield client
    await client.aclose()


async def _two_turns(
    http: httpx.AsyncClient, wire: StreamWire, first_url: str, second_url: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A streamed first turn, then a streamed follow-up (both ids) to the parked task."""
    first = await wire.stream(http, first_url, wire.message("one"))
    task = first[0]["body"]
    second = await wire.stream(
        http, second_url, wire.message("two", task_id=task["id"], context_id=task["contextId"])
    )
    return first, second


async def _check_follow_up_opens_with_the_task(
    http: httpx.AsyncClient, wire: StreamWire, first_url: str, second_url: str
) -> None:
    first, second = await _two_turns(http, wire, first_url, second_url)
    # A new task: the executor's Task, once; then the turn's update.
    assert [event["kind"] for event in first] == ["task", "statusUpdate"]
    task = first[0]["body"]
    reply_one = first[-1]["body"]["status"]["message"]
    # The follow-up: a Task first (once), then the updates of that task.
    assert [event["kind"] for event in second] == ["task", "statusUpdate"]
    opening, last = second[0]["body"], second[-1]["body"]
    assert (opening["id"], opening["contextId"]) == (task["id"], task["contextId"])
    assert (last["taskId"], last["contextId"]) == (task["id"], task["contextId"])
    assert wire.state(opening) == "working" and "message" not in opening["status"]
    history = opening["history"]
    assert text_of(history[-1]) == "two" and history[-1]["messageId"] == "m-two"
    assert history[-2]["messageId"] == reply_one["messageId"]  # the last reply, now history
    assert [m["messageId"] for m in history[:-2]] == ["m-one"]
    assert wire.state(last) == "input-required"
    assert text_of(last["status"]["message"]) == '[scripted] heard 2 user message(s): "one" | "two"'
    # The store holds the SDK's task: the history the stream opened with, the state parked again.
    stored = await _get_task(http, first_url, task["id"])
    assert [m["messageId"] for m in stored["history"]] == [m["messageId"] for m in history]
    assert stored["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert stored["status"]["message"]["messageId"] == last["status"]["message"]["messageId"]


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_a_streamed_follow_up_begins_with_the_task(
    arena: InProcessArena, http: httpx.AsyncClient, wire: StreamWire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    await _check_follow_up_opens_with_the_task(http, wire, url, url)


@pytest.mark.parametrize("wire", [WIRES[0], WIRES[3]], ids=lambda w: w.name)
async def test_a_streamed_follow_up_on_another_replica_begins_with_the_task(
    arena: InProcessArena,
    http: httpx.AsyncClient,
    redis_server: RedisServer,
    redis_namespace: str,
    wire: StreamWire,
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
        await _check_follow_up_opens_with_the_task(http, wire, replicas[0], replicas[1])


async def test_the_opening_task_honours_history_length(
    arena: InProcessArena, http: httpx.AsyncClient
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    wire = WIRES[0]
    task = (await wire.stream(http, url, wire.message("one")))[0]["body"]
    message = wire.message("two", task_id=task["id"])  # task-only: the context is inferred
    events = await wire.stream(http, url, message, configuration={"historyLength": 1})
    opening = events[0]["body"]
    assert events[0]["kind"] == "task" and opening["contextId"] == task["contextId"]
    assert [m["messageId"] for m in opening["history"]] == ["m-two"]


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_a_new_conversation_in_complete_mode_streams_one_task(
    arena: InProcessArena, http: httpx.AsyncClient, wire: StreamWire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    events = await wire.stream(http, url, wire.message("one"))
    kinds = [event["kind"] for event in events]
    assert kinds[0] == "task" and kinds.count("task") == 1, kinds
    follow = await wire.stream(http, url, wire.message("two", context_id=events[0]["body"]["contextId"]))
    assert [event["kind"] for event in follow].count("task") == 1


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_a_stream_ending_in_input_required_is_final_on_0_3(
    arena: InProcessArena, http: httpx.AsyncClient, wire: StreamWire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    for events in await _two_turns(http, wire, url, url):
        updates = [event["body"] for event in events if event["kind"] == "statusUpdate"]
        assert wire.state(updates[-1]) == "input-required"
        finals = [update.get("final") for update in updates]
        if wire.version == "1.0":
            assert finals == [None] * len(updates)  # 1.0 has no final field
        else:
            assert finals[-1] is True and not any(finals[:-1]), finals


@pytest.mark.parametrize("wire", V03_WIRES, ids=lambda w: w.name)
async def test_a_0_3_stream_ending_completed_is_final_once(
    arena: InProcessArena, http: httpx.AsyncClient, wire: StreamWire
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    events = await wire.stream(http, url, wire.message("one"))
    finals = [event["body"].get("final") for event in events if event["kind"] == "statusUpdate"]
    assert finals[-1] is True and not any(finals[:-1]), finals


class _TalksAfterAsking(AgentExecutor):
    """Parks its task in input-required, then (against the protocol's grain) still adds an artifact."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.update_status(
            TaskState.TASK_STATE_INPUT_REQUIRED, message=updater.new_agent_message([Part(text="more?")])
        )
        await updater.add_artifact([Part(text="late")], name="late")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_a_stream_ends_at_the_interrupted_state(
    arena: InProcessArena, http: httpx.AsyncClient, wire: StreamWire
) -> None:
    spec = CardSpec(name="asker", description="asks", version="1", skills=[])
    state = create_state_backend(arena.settings)
    card = build_agent_card(spec, "http://asker")
    app = build_agent_app(
        card, _TalksAfterAsking(), task_store=state.task_store, event_stream=state.event_stream
    )
    url = arena.add("asker", app)
    for events in await _two_turns(http, wire, url, url):
        assert [event["kind"] for event in events] == ["task", "statusUpdate"]
        assert wire.state(events[-1]["body"]) == "input-required"
