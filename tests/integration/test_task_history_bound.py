"""One bound on task history and task retention for both state backends, through the real defender.

The defender app is built from settings as it is served (``create_defender_app``, its
lifespan run), once in memory and once on a real redis-server, and spoken to over A2A
JSON-RPC 1.0 through ``httpx.ASGITransport`` with the scripted model. Whatever the
backend and the turn mode, a task keeps the newest ``ARENA_HISTORY_MAX_MESSAGES``
messages: ``GetTask`` never returns more, and ``SendMessage`` answers stop growing
once the bound is reached (they hold the stored window plus the turn's own message and
the previous reply, which a2a-sdk adds to the task it read from the store). Tasks
expire ``ARENA_TASK_TTL_S`` after their last write; in memory at most
``ARENA_MAX_TASKS`` are held (ADR 0005).

Issue 16 found the in-memory defender keeping every message (119 after 60 turns, 118 KB
per answer by turn 200): an empty ``InMemoryVersionedTaskStore`` tested false, and the
app builder's ``task_store or InMemoryTaskStore()`` swapped it for a2a-sdk's unbounded
store.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from arena_core.settings import ArenaSettings, load_settings
from arena_defender.app import create_defender_app
from conftest import InProcessArena
from support.asgi import client_for
from support.redis_server import RedisServer

pytestmark = pytest.mark.asyncio

TURNS = 60
V10 = {"A2A-Version": "1.0"}
TASK_NOT_FOUND = -32001


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest, redis_namespace: str) -> dict[str, object]:
    """Settings choosing the state backend: none for memory, a fresh namespace on Redis."""
    if request.param == "memory":
        return {}
    server: RedisServer = request.getfixturevalue("redis_server")
    return {"redis_url": server.url, "redis_namespace": redis_namespace}


@pytest_asyncio.fixture
async def http(arena: InProcessArena) -> AsyncIterator[httpx.AsyncClient]:
    client = client_for(arena.router)
    yield client
    await client.aclose()


@contextlib.asynccontextmanager
async def served_defender(arena: InProcessArena, **overrides: object) -> AsyncIterator[ArenaSettings]:
    """The defender app as served (at ``http://defender``), with its lifespan; yields its settings."""
    settings = load_settings(**overrides)
    app = create_defender_app(settings, public_url="http://defender", model=arena.chat_model())
    async with app.router.lifespan_context(app):
        arena.add("defender", app)
        yield settings


async def _rpc(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await http.post("http://defender/", json=body, headers=V10)
    assert response.status_code == 200, response.text
    return response


async def _send(http: httpx.AsyncClient, text: str, **ids: str) -> tuple[dict[str, Any], int]:
    """SendMessage; the answer's task and the answer's size in bytes."""
    message = {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **ids}
    response = await _rpc(http, "SendMessage", {"message": message})
    body = response.json()
    assert "result" in body, body
    return dict(body["result"]["task"]), len(response.content)


async def _get_task(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    """GetTask's whole answer (``result`` or ``error``); no ``historyLength``: the server's default."""
    return dict((await _rpc(http, "GetTask", {"id": task_id})).json())


def _history(task: dict[str, Any]) -> list[dict[str, Any]]:
    return list(task.get("history", []))


def _texts(messages: list[dict[str, Any]], role: str) -> list[str]:
    return [m["parts"][0]["text"] for m in messages if m["role"] == role]


async def test_a_parked_task_keeps_the_bounded_history(
    arena: InProcessArena, http: httpx.AsyncClient, backend: dict[str, object]
) -> None:
    arena.add_model(mode="echo")
    async with served_defender(arena, defender_turn_mode="input-required", **backend) as settings:
        bound = settings.history_max_messages
        assert bound + 2 < 2 * TURNS, "the conversation must outgrow the bound"
        task, _ = await _send(http, "turn 0")
        ids = {"taskId": task["id"], "contextId": task["contextId"]}
        sizes: list[int] = []
        for turn in range(1, TURNS):
            task, size = await _send(http, f"turn {turn}", **ids)
            assert task["id"] == ids["taskId"]
            assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert len(_history(task)) <= bound + 2, turn
            sizes.append(size)
            if turn == TURNS // 2:
                middle = (await _get_task(http, ids["taskId"]))["result"]
                assert len(_history(middle)) == bound
        stored = (await _get_task(http, ids["taskId"]))["result"]

    history = _history(stored)
    assert len(history) == bound
    # The newest messages are kept, in order: the last bound/2 user turns and the replies between.
    assert _texts(history, "ROLE_USER") == [f"turn {t}" for t in range(TURNS - bound // 2, TURNS)]
    assert len(_texts(history, "ROLE_AGENT")) == bound // 2
    assert history[-1]["role"] == "ROLE_USER"
    # The latest reply is the status message, never trimmed.
    assert stored["status"]["message"]["parts"][0]["text"].startswith("[scripted] heard")
    # Answers stop growing once the bound is reached (without it, turn 60 is ~2.5x turn 30).
    assert max(sizes[-10:]) <= 1.1 * sizes[TURNS // 2], sizes


async def test_a_task_per_turn_stays_small_and_within_the_bound(
    arena: InProcessArena, http: httpx.AsyncClient, backend: dict[str, object]
) -> None:
    arena.add_model(mode="echo")
    async with served_defender(arena, defender_turn_mode="complete", **backend) as settings:
        bound = settings.history_max_messages
        task, _ = await _send(http, "turn 0")
        context_id = task["contextId"]
        sizes: list[int] = []
        task_ids = {task["id"]}
        for turn in range(1, TURNS):
            task, size = await _send(http, f"turn {turn}", contextId=context_id)
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert task["contextId"] == context_id
            assert len(_history(task)) <= min(bound, 2)
            task_ids.add(task["id"])
            sizes.append(size)
        stored = (await _get_task(http, task["id"]))["result"]

    assert len(task_ids) == TURNS
    assert len(_history(stored)) <= min(bound, 2)
    assert max(sizes[-10:]) <= 1.1 * sizes[TURNS // 2], sizes


async def test_tasks_expire_after_their_ttl(
    arena: InProcessArena, http: httpx.AsyncClient, backend: dict[str, object]
) -> None:
    arena.add_model(mode="echo")
    async with served_defender(arena, defender_turn_mode="input-required", task_ttl_s=0.3, **backend):
        task, _ = await _send(http, "soon gone")
        deadline = time.monotonic() + 10
        while "result" in (answer := await _get_task(http, task["id"])):
            assert time.monotonic() < deadline, "the task did not expire"
            await asyncio.sleep(0.05)
        assert answer["error"]["code"] == TASK_NOT_FOUND
        # A follow-up to the expired (still parked) task is refused, not answered from nothing.
        message = {
            "messageId": "m-late",
            "role": "ROLE_USER",
            "parts": [{"text": "late"}],
            "taskId": task["id"],
            "contextId": task["contextId"],
        }
        late = (await _rpc(http, "SendMessage", {"message": message})).json()
        assert late["error"]["code"] == TASK_NOT_FOUND


async def test_the_in_memory_defender_holds_at_most_max_tasks(
    arena: InProcessArena, http: httpx.AsyncClient
) -> None:
    arena.add_model(mode="echo")
    async with served_defender(arena, defender_turn_mode="input-required", max_tasks=3):
        tasks = [(await _send(http, f"conversation {index}"))[0] for index in range(4)]
        oldest = await _get_task(http, tasks[0]["id"])
        assert oldest["error"]["code"] == TASK_NOT_FOUND
        for task in tasks[1:]:
            assert "result" in await _get_task(http, task["id"])
