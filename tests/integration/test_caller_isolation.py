"""Every API token is a caller of its own: one caller's tasks and conversations are not another's.

Two named tokens (``alice:...``, ``bob:...``) on the defender, on every wire (1.0 / 0.3 x
JSON-RPC / HTTP+JSON), with the in-memory state and with Redis: Bob cannot read, cancel,
resubscribe to, list or continue Alice's task, nor read its push-notification settings; each
answer is exactly the answer for a task id that does not exist (the task's id aside), so Bob
cannot even learn that it exists. Bob's message naming Alice's contextId starts a conversation
of his own, and Alice's next message still finds hers. The attacker (the same app builder) keeps
its callers apart too; a read token named like a full one is the same caller.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from starlette.applications import Starlette

from arena_core.settings import load_settings
from conftest import InProcessArena
from support.raw_a2a import WIRE_NAMES, RawWire, text_of
from support.redis_server import RedisServer

pytestmark = pytest.mark.asyncio

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
ALICE_READ = "alice-read-token-0123456789"
TOKENS = {"api_tokens": f"alice:{ALICE},bob:{BOB}", "api_read_tokens": f"alice:{ALICE_READ}"}
TASK_NOT_FOUND = -32001
PUSH_CONFIG_ID = "cfg-1"


@dataclass(frozen=True)
class CallerWire(RawWire):
    """Every task operation on one wire, as a given caller (``token``)."""

    @property
    def rpc(self) -> bool:
        return self.binding == "jsonrpc"

    @property
    def rest(self) -> str:
        return "/rest" if self.version == "1.0" else "/rest/v1"

    def _headers(self, token: str) -> dict[str, str]:
        return {**self.headers, "Authorization": f"Bearer {token}"}

    async def _call(
        self, http: httpx.AsyncClient, base: str, token: str, methods: tuple[str, str], params: Any
    ) -> httpx.Response:
        method = methods[0] if self.version == "1.0" else methods[1]
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
        return await http.post(f"{base}/", json=body, headers=self._headers(token))

    async def send(self, http: httpx.AsyncClient, base: str, token: str, message: Any) -> httpx.Response:
        if self.rpc:
            return await self._call(http, base, token, ("SendMessage", "message/send"), {"message": message})
        return await http.post(
            f"{base}{self.rest}/message:send", json={"message": message}, headers=self._headers(token)
        )

    async def get_task(self, http: httpx.AsyncClient, base: str, token: str, task_id: str) -> httpx.Response:
        if self.rpc:
            return await self._call(http, base, token, ("GetTask", "tasks/get"), {"id": task_id})
        return await http.get(f"{base}{self.rest}/tasks/{task_id}", headers=self._headers(token))

    async def cancel(self, http: httpx.AsyncClient, base: str, token: str, task_id: str) -> httpx.Response:
        if self.rpc:
            return await self._call(http, base, token, ("CancelTask", "tasks/cancel"), {"id": task_id})
        return await http.post(f"{base}{self.rest}/tasks/{task_id}:cancel", headers=self._headers(token))

    async def subscribe(self, http: httpx.AsyncClient, base: str, token: str, task_id: str) -> httpx.Response:
        if self.rpc:
            return await self._call(
                http, base, token, ("SubscribeToTask", "tasks/resubscribe"), {"id": task_id}
            )
        return await http.post(f"{base}{self.rest}/tasks/{task_id}:subscribe", headers=self._headers(token))

    async def push_configs(
        self, http: httpx.AsyncClient, base: str, token: str, task_id: str
    ) -> list[httpx.Response]:
        """Listing the task's push-notification configs, and reading one."""
        if self.rpc:
            listed = ("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list")
            read = ("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get")
            one = {"taskId": task_id, "id": PUSH_CONFIG_ID} if self.version == "1.0" else {"id": task_id}
            return [
                await self._call(
                    http, base, token, listed, {"taskId" if self.version == "1.0" else "id": task_id}
                ),
                await self._call(http, base, token, read, one),
            ]
        path = f"{base}{self.rest}/tasks/{task_id}/pushNotificationConfigs"
        return [
            await http.get(path, headers=self._headers(token)),
            await http.get(f"{path}/{PUSH_CONFIG_ID}", headers=self._headers(token)),
        ]

    async def list_tasks(
        self, http: httpx.AsyncClient, base: str, token: str, context_id: str | None = None
    ) -> httpx.Response | None:
        """ListTasks (filtered by context when given); None on 0.3, which has no such method."""
        if self.version != "1.0":
            return None
        if self.rpc:
            params = {"contextId": context_id} if context_id else {}
            return await self._call(http, base, token, ("ListTasks", ""), params)
        query = {"contextId": context_id} if context_id else {}
        return await http.get(f"{base}{self.rest}/tasks", params=query, headers=self._headers(token))

    def task(self, response: httpx.Response) -> dict[str, Any]:
        """The task of a successful answer to a send or a get (either version's shape)."""
        assert response.status_code == 200, response.text
        body = response.json()
        if self.rpc:
            assert "result" in body, body
            body = body["result"]
        if "task" in body:
            body = body["task"]
        assert "id" in body and "status" in body, body
        return dict(body)

    def listed_ids(self, response: httpx.Response) -> list[str]:
        assert response.status_code == 200, response.text
        body = response.json()
        return [task["id"] for task in (body["result"] if self.rpc else body)["tasks"]]

    def is_task_not_found(self, response: httpx.Response) -> bool:
        body = document(response.text)
        if self.rpc:
            return response.status_code == 200 and body.get("error", {}).get("code") == TASK_NOT_FOUND
        return response.status_code == 404 and body["error"]["status"] == "NOT_FOUND"


WIRES = [CallerWire(*names) for names in WIRE_NAMES]


def document(text: str) -> Any:
    """A JSON answer, or the first event of an SSE one (0.3's ``tasks/resubscribe`` errors are)."""
    if text.startswith("data:"):
        return json.loads(text.partition("data:")[2].partition("\n")[0])
    return json.loads(text)


def shape(response: httpx.Response, task_id: str) -> tuple[int, str, Any]:
    """What a client sees of an answer, the task id it asked about blanked out."""
    media_type = response.headers.get("content-type", "")
    return response.status_code, media_type, document(response.text.replace(task_id, "<task id>"))


def reply(task: dict[str, Any]) -> str:
    return text_of(task["status"]["message"])


@pytest_asyncio.fixture(params=["memory", "redis"])
async def defender(request: pytest.FixtureRequest, arena: InProcessArena) -> AsyncIterator[str]:
    """A defender taking Alice's and Bob's tokens, its tasks parked in input-required between turns."""
    arena.add_model(mode="echo")
    settings: dict[str, object] = {**TOKENS, "defender_turn_mode": "input-required"}
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        settings |= {"redis_url": server.url, "redis_namespace": f"test-{uuid.uuid4().hex[:12]}"}
    url = arena.add_defender(**settings)
    app = arena.apps["defender"]
    assert isinstance(app, Starlette)
    async with contextlib.AsyncExitStack() as running:  # the lifespan closes the Redis pool
        await running.enter_async_context(app.router.lifespan_context(app))
        yield url


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_another_callers_task_looks_exactly_like_a_missing_one(
    arena: InProcessArena, defender: str, wire: CallerWire
) -> None:
    http, url = arena.http, defender
    alices = wire.task(await wire.send(http, url, ALICE, wire.message("alpha")))
    task_id, context_id = alices["id"], alices["contextId"]
    assert wire.state(alices) == "input-required"
    unknown = str(uuid.uuid4())

    operations = {
        "get": wire.get_task,
        "cancel": wire.cancel,
        "subscribe": wire.subscribe,
    }
    for name, operation in operations.items():
        foreign = await operation(http, url, BOB, task_id)
        missing = await operation(http, url, BOB, unknown)
        assert wire.is_task_not_found(foreign), (name, foreign.status_code, foreign.text)
        assert shape(foreign, task_id) == shape(missing, unknown), name
    for foreign, missing in zip(
        await wire.push_configs(http, url, BOB, task_id),
        await wire.push_configs(http, url, BOB, unknown),
        strict=True,
    ):
        assert shape(foreign, task_id) == shape(missing, unknown), foreign.text
    # A follow-up into Alice's task: not found either, and nothing reaches her conversation.
    follow_up = wire.message("intruder", task_id=task_id, context_id=context_id)
    foreign = await wire.send(http, url, BOB, follow_up)
    missing = await wire.send(
        http, url, BOB, wire.message("intruder", task_id=unknown, context_id=context_id)
    )
    assert wire.is_task_not_found(foreign), foreign.text
    assert shape(foreign, task_id) == shape(missing, unknown)

    listed = await wire.list_tasks(http, url, BOB)
    if listed is not None:
        assert wire.listed_ids(listed) == []
        by_context = await wire.list_tasks(http, url, BOB, context_id)
        assert by_context is not None
        assert by_context.json() == (await wire.list_tasks(http, url, BOB, str(uuid.uuid4()))).json()
        own = await wire.list_tasks(http, url, ALICE)
        assert own is not None and wire.listed_ids(own) == [task_id]

    # Alice still has her task, untouched by Bob's cancel, and goes on with her conversation.
    still = wire.task(await wire.get_task(http, url, ALICE, task_id))
    assert wire.state(still) == "input-required"
    again = wire.task(await wire.send(http, url, ALICE, wire.message("beta", task_id=task_id)))
    assert again["id"] == task_id
    assert reply(again) == '[scripted] heard 2 user message(s): "alpha" | "beta"'
    canceled = wire.task(await wire.cancel(http, url, ALICE, task_id))
    assert wire.state(canceled) in ("canceled", "cancelled")  # 0.3 HTTP+JSON: TASK_STATE_CANCELLED


@pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
async def test_a_context_id_does_not_open_another_callers_conversation(
    arena: InProcessArena, defender: str, wire: CallerWire
) -> None:
    http, url = arena.http, defender
    alices = wire.task(await wire.send(http, url, ALICE, wire.message("my secret is kumquat-sorbet")))
    context_id = alices["contextId"]
    # Bob names Alice's contextId: a fresh conversation, his own, in which he hears only himself.
    bobs = wire.task(await wire.send(http, url, BOB, wire.message("what was said?", context_id=context_id)))
    assert bobs["id"] != alices["id"]
    assert reply(bobs) == '[scripted] heard 1 user message(s): "what was said?"'
    assert "kumquat" not in json.dumps(bobs)
    # Alice's conversation goes on without Bob's message in it; so does Bob's, without hers.
    more = wire.task(await wire.send(http, url, ALICE, wire.message("and?", context_id=context_id)))
    assert reply(more) == '[scripted] heard 2 user message(s): "my secret is kumquat-sorbet" | "and?"'
    his = wire.task(await wire.send(http, url, BOB, wire.message("again", context_id=context_id)))
    assert reply(his) == '[scripted] heard 2 user message(s): "what was said?" | "again"'
    # Each lists only their own tasks in that context.
    for token, ids in ((ALICE, {alices["id"], more["id"]}), (BOB, {bobs["id"], his["id"]})):
        listed = await wire.list_tasks(http, url, token, context_id)
        if listed is not None:
            assert set(wire.listed_ids(listed)) == ids


async def test_a_read_token_under_the_same_name_reads_that_callers_tasks(
    arena: InProcessArena, defender: str
) -> None:
    wire, http, url = WIRES[1], arena.http, defender  # 1.0 HTTP+JSON: reads are GETs
    task_id = wire.task(await wire.send(http, url, ALICE, wire.message("alpha")))["id"]
    assert wire.task(await wire.get_task(http, url, ALICE_READ, task_id))["id"] == task_id
    listed = await wire.list_tasks(http, url, ALICE_READ)
    assert listed is not None and wire.listed_ids(listed) == [task_id]
    assert wire.is_task_not_found(await wire.get_task(http, url, BOB, task_id))


async def test_the_attacker_keeps_its_callers_apart_too(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    arena.settings = load_settings(api_tokens=TOKENS["api_tokens"])
    url = arena.add_attacker()
    wire, http = WIRES[0], arena.http
    # A message that is no match request parks the task in input-required, asking for one.
    parked = wire.task(await wire.send(http, url, ALICE, wire.message("hello")))
    assert wire.state(parked) == "input-required"
    foreign = await wire.get_task(http, url, BOB, parked["id"])
    missing = await wire.get_task(http, url, BOB, str(uuid.uuid4()))
    assert wire.is_task_not_found(foreign)
    assert shape(foreign, parked["id"])[2]["error"] == missing.json()["error"]
    assert wire.task(await wire.get_task(http, url, ALICE, parked["id"]))["id"] == parked["id"]


async def test_without_tokens_everyone_is_the_same_caller(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    wire, http = WIRES[0], arena.http
    first = wire.task(await http.post(f"{url}/", json=_send(wire, "alpha"), headers=wire.headers))
    async with httpx.AsyncClient(transport=http._transport, base_url=url) as other:  # another client
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": first["id"]}}
        assert wire.task(await other.post("/", json=body, headers=wire.headers))["id"] == first["id"]
        follow = {"message": wire.message("beta", context_id=first["contextId"])}
        body = {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": follow}
        answer = wire.task(await other.post("/", json=body, headers=wire.headers))
    assert reply(answer) == '[scripted] heard 2 user message(s): "alpha" | "beta"'


def _send(wire: CallerWire, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": wire.message(text)}}
