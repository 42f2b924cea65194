"""A polled attacker task that stops moving is given up (retryable), one that moves is followed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from a2a.types.a2a_pb2 import GetTaskRequest, Task, TaskState

from arena_core.a2a.client import attacker
from arena_core.errors import TargetUnreachableError


class FrozenTaskClient:
    """The a2a client's two calls the poll uses; the task never changes (its attacker is gone)."""

    def __init__(self, *, moving: int = 0) -> None:
        self.task = Task(id="t1", context_id="c1")
        self.task.status.state = TaskState.TASK_STATE_WORKING
        self.task.status.timestamp.FromSeconds(1_000)
        self.moving = moving  # the first `moving` polls see the heartbeat advance
        self.polls = 0
        self.canceled: list[str] = []

    async def get_task(self, request: GetTaskRequest) -> Task:
        self.polls += 1
        if self.polls <= self.moving:
            self.task.status.timestamp.FromSeconds(1_000 + self.polls)
        if self.polls == self.moving and self.moving:
            self.task.status.state = TaskState.TASK_STATE_COMPLETED
        copy = Task()
        copy.CopyFrom(self.task)
        return copy

    async def cancel_task(self, request: Any) -> Task:
        self.canceled.append(request.id)
        return self.task


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(attacker, "POLL_INTERVAL_S", 0.001)
    monkeypatch.setattr(attacker, "STALL_LIMIT_S", 0.05)


def _follower() -> Any:
    follower = attacker._Follower(None)
    follower.task_id = "t1"
    return follower


def test_a_task_that_stops_moving_is_canceled_and_retryable(fast: None) -> None:
    client = FrozenTaskClient()
    with pytest.raises(TargetUnreachableError, match="no progress"):
        asyncio.run(attacker._poll_to_end(client, _follower(), "http://attacker"))  # type: ignore[arg-type]
    assert client.canceled == ["t1"]


def test_a_task_whose_heartbeat_moves_is_followed_to_its_end(
    fast: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(attacker, "STALL_LIMIT_S", 10.0)
    client = FrozenTaskClient(moving=5)
    follower = _follower()
    asyncio.run(attacker._poll_to_end(client, follower, "http://attacker"))  # type: ignore[arg-type]
    assert follower.finished
    assert client.canceled == []
