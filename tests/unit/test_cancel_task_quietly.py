"""Cancelling an abandoned task: the answer is only logged, a cancel of the caller is never swallowed."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest
from a2a.client import Client

from arena_core.a2a.client.attacker import _cancel_quietly
from arena_core.a2a.client.cancel import cancel_task_quietly

pytestmark = pytest.mark.asyncio


class _Agent:
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.asked: list[str] = []
        self.started = asyncio.Event()

    async def cancel_task(self, request: Any) -> None:
        self.asked.append(request.id)
        self.started.set()
        if self.behaviour == "refuse":
            raise RuntimeError("task not cancelable: secret-in-error")
        if self.behaviour == "hang":
            await asyncio.sleep(3600)


def _client(agent: _Agent) -> Client:
    return cast(Client, agent)


async def test_a_refusal_is_only_logged_redacted(caplog: pytest.LogCaptureFixture) -> None:
    agent = _Agent("refuse")
    with caplog.at_level(logging.DEBUG, logger="arena_core.a2a.client.cancel"):
        await cancel_task_quietly(
            _client(agent), "t-1", who="target http://t", redact=lambda text: text.replace("secret", "[x]")
        )
    assert agent.asked == ["t-1"]
    assert "target http://t did not cancel task t-1" in caplog.text
    assert "secret" not in caplog.text


async def test_a_cancel_of_the_caller_propagates() -> None:
    for call in (
        lambda agent: cancel_task_quietly(_client(agent), "t-2", who="target http://t"),
        lambda agent: _cancel_quietly(_client(agent), "t-2", "http://attacker"),
    ):
        agent = _Agent("hang")
        task = asyncio.ensure_future(call(agent))
        await asyncio.wait_for(agent.started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_the_attacker_cancel_gives_up_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("arena_core.a2a.client.attacker.CANCEL_TIMEOUT_S", 0.05)
    agent = _Agent("hang")
    await asyncio.wait_for(_cancel_quietly(_client(agent), "t-3", "http://attacker"), 5)
    assert agent.asked == ["t-3"]
