"""A task the agent has just minted is not read from Redis before its first save (arena_core.a2a.fresh_tasks).

a2a-sdk 1.3 reads a new task three times before the first event is saved; each read of an
id the agent minted a moment ago can only find nothing, so the agent answers them itself.
Counted on a redis-server of this test's own, whose slow log is set to log every command
(nothing else talks to it): a new task costs no task read, and once saved, the task is read
from Redis as before, by GetTask and by a follow-up that names it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import redis.asyncio as aioredis
from starlette.applications import Starlette

from conftest import InProcessArena
from support.asgi import client_for
from support.redis_server import SKIP_REASON, RedisServer, find_redis_server

pytestmark = pytest.mark.asyncio

HEADERS = {"A2A-Version": "1.0"}
SLOWLOG_LENGTH = 10_000


@pytest.fixture
def own_redis(tmp_path: Path) -> Any:
    binary = find_redis_server()
    if binary is None:
        pytest.skip(SKIP_REASON)
    server = RedisServer(binary, tmp_path)
    server.start()
    yield server
    server.stop()


@pytest_asyncio.fixture
async def http(arena: InProcessArena) -> AsyncIterator[httpx.AsyncClient]:
    client = client_for(arena.router)
    yield client
    await client.aclose()


async def _task_reads(client: aioredis.Redis) -> int:
    """How many times the store read a task since the last call (the slow log logs every command)."""
    entries = await client.slowlog_get(SLOWLOG_LENGTH)
    await client.slowlog_reset()
    # RedisTaskStore.get is HMGET <task key> o v d; the save script's own HMGET asks for v o s.
    return sum(
        1
        for entry in entries
        if entry["command"].startswith(b"HMGET ") and entry["command"].endswith(b" o v d")
    )


async def _rpc(http: httpx.AsyncClient, url: str, method: str, params: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await http.post(f"{url}/", json=body, headers=HEADERS)
    document = response.json()
    assert "result" in document, document
    return dict(document["result"])


def _message(text: str, **ids: str) -> dict[str, Any]:
    return {"message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **ids}}


@pytest.mark.parametrize("turn_mode", ["complete", "input-required"])
async def test_a_new_task_is_not_read_from_redis_until_it_is_saved(
    arena: InProcessArena, http: httpx.AsyncClient, own_redis: RedisServer, turn_mode: str
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(redis_url=own_redis.url, redis_namespace="fresh", defender_turn_mode=turn_mode)
    app = arena.apps["defender"]
    assert isinstance(app, Starlette)
    counter = aioredis.Redis.from_url(own_redis.url)
    async with contextlib.AsyncExitStack() as running:
        await running.enter_async_context(app.router.lifespan_context(app))
        running.push_async_callback(counter.aclose)
        await counter.config_set("slowlog-max-len", SLOWLOG_LENGTH)
        await counter.config_set("slowlog-log-slower-than", 0)
        await _task_reads(counter)

        task = (await _rpc(http, url, "SendMessage", _message("one")))["task"]
        assert await _task_reads(counter) == 0, "a new task was read before its first save"

        # Saved, it is read from Redis again, and what is read is the turn's task.
        stored = await _rpc(http, url, "GetTask", {"id": task["id"]})
        assert await _task_reads(counter) == 1
        assert stored["id"] == task["id"] and stored["status"]["state"] == task["status"]["state"]

        if turn_mode == "input-required":  # a follow-up names the saved task: read, found, continued
            ids = {"taskId": task["id"], "contextId": task["contextId"]}
            follow = (await _rpc(http, url, "SendMessage", _message("two", **ids)))["task"]
            assert follow["id"] == task["id"] and follow["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert await _task_reads(counter) > 0
        else:  # the next turn of the conversation is a new task again: not read either
            follow = (await _rpc(http, url, "SendMessage", _message("two", contextId=task["contextId"])))[
                "task"
            ]
            assert follow["id"] != task["id"] and follow["status"]["state"] == "TASK_STATE_COMPLETED"
            assert await _task_reads(counter) == 0
