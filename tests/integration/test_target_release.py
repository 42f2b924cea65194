"""A2ATarget.close() releases the tasks a match left waiting for input, and never hangs on it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a import TargetConversation, connect_target
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio


async def _state(arena: InProcessArena, task_id: str) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    answer = await arena.http.post("http://defender/", json=body, headers={"A2A-Version": "1.0"})
    return str(answer.json()["result"]["status"]["state"])


def _defender(arena: InProcessArena) -> None:
    arena.add_model("model", mode="refuse")
    arena.add_defender("defender", model_host="model", defender_turn_mode="input-required")


async def test_close_cancels_every_task_left_waiting_for_input(arena: InProcessArena) -> None:
    _defender(arena)
    target = await connect_target("http://defender", http=arena.http)
    conversation = TargetConversation(target)
    first = await conversation.send("hello")
    await conversation.send("still there?")  # the same task, continued
    conversation.reset()
    second = await conversation.send("a new conversation")
    assert first.open and second.open and first.task_id != second.task_id
    assert await _state(arena, first.task_id or "") == "TASK_STATE_INPUT_REQUIRED"

    await target.close()

    assert await _state(arena, first.task_id or "") == "TASK_STATE_CANCELED"
    assert await _state(arena, second.task_id or "") == "TASK_STATE_CANCELED"


class _CancelRefusedOrStuck:
    """Passes everything to the defender, except CancelTask: answered 500, or never answered."""

    def __init__(self, inner: ASGIApp, *, stuck: bool) -> None:
        self._inner = inner
        self._stuck = stuck
        self.cancels = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            message = await receive()
            if b"CancelTask" in message.get("body", b""):
                self.cancels += 1
                if self._stuck:
                    await asyncio.Event().wait()
                await send({"type": "http.response.start", "status": 500, "headers": []})
                await send({"type": "http.response.body", "body": b"no"})
                return

            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if replayed:
                    return dict(await receive())
                replayed = True
                return dict(message)

            await self._inner(scope, replay, send)
            return
        await self._inner(scope, receive, send)


@pytest.mark.parametrize("stuck", [False, True], ids=["refused", "never-answered"])
async def test_a_target_that_refuses_or_ignores_the_cancel_does_not_hold_close(
    arena: InProcessArena, monkeypatch: pytest.MonkeyPatch, stuck: bool
) -> None:
    monkeypatch.setattr("arena_core.a2a.client.target.RELEASE_TIMEOUT_S", 0.5)
    _defender(arena)
    wrapper = _CancelRefusedOrStuck(arena.apps["defender"], stuck=stuck)
    arena.add("defender", wrapper)
    target = await connect_target("http://defender", http=arena.http)
    conversation = TargetConversation(target)
    reply = await conversation.send("hello")
    assert reply.open

    await asyncio.wait_for(target.close(), timeout=10)

    assert wrapper.cancels == 1
    assert await _state(arena, reply.task_id or "") == "TASK_STATE_INPUT_REQUIRED"


async def test_close_without_a_message_cancels_nothing(arena: InProcessArena) -> None:
    _defender(arena)
    wrapper = _CancelRefusedOrStuck(arena.apps["defender"], stuck=False)
    arena.add("defender", wrapper)
    target = await connect_target("http://defender", http=arena.http)
    await target.close()  # nothing was sent: nothing to release
    assert wrapper.cancels == 0
