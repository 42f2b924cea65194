"""SIGTERM with many parked tasks: one line says how many were released, not one warning per task.

A real defender process (``ARENA_DEFENDER_TURN_MODE=input-required``, so every reply parks its
task) and the scripted model. Before the fix, the event loop's teardown cancelled the SDK's
per-task asyncio tasks in no order and a2a-sdk logged "Dispatcher task is not running" (WARNING)
and "cancelled without calling EventQueue.close() first" (INFO, twice) for each parked task:
8,000 to 12,000 lines after a busy run. The agent's lifespan now releases them first
(:mod:`arena_core.a2a.agent_lifespan`) and says how many.
"""

from __future__ import annotations

import os
import re
import signal
import uuid
from collections.abc import Iterator

import httpx
import pytest

from arena.local_services import LocalServices
from support.processes import clean_env

pytestmark = [pytest.mark.system, pytest.mark.timeout(180)]

PARKED = 50
V10 = {"A2A-Version": "1.0"}
DISPATCHER_WARNING = "Dispatcher task is not running"
UNCLOSED_QUEUE = "without calling EventQueue.close() first"


@pytest.fixture
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServices]:
    with LocalServices(tmp_path_factory.mktemp("release-logs"), env=clean_env()) as started:
        yield started


def _new_conversation(http: httpx.Client, url: str, n: int) -> str:
    """Open a conversation; return the state its task is left in."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": f"hello {n}"}]}
    body = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message}}
    reply = http.post(url, json=body, headers=V10).json()
    return str(reply["result"]["task"]["status"]["state"])


def test_sigterm_releases_parked_tasks_with_one_line(services: LocalServices) -> None:
    model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "refuse"])
    services.wait_ready(model, timeout_s=60)
    settings = {
        "ARENA_MODEL_BASE_URL": f"{model.url}/v1",
        "ARENA_DEFENDER_TURN_MODE": "input-required",
        # No idle release during the test: every parked task is still held at SIGTERM.
        "ARENA_TASK_IDLE_TIMEOUT_S": "3600",
    }
    defender = services.start("defender", env=settings)
    services.wait_ready(defender, timeout_s=60)
    with httpx.Client(timeout=30) as http:
        states = {_new_conversation(http, f"{defender.url}/", n) for n in range(PARKED)}
    assert states == {"TASK_STATE_INPUT_REQUIRED"}

    os.kill(defender.process.pid, signal.SIGTERM)
    code = defender.process.wait(timeout=30)
    log = defender.log_path.read_text()
    assert code == 0, log
    # None of the SDK's per-task lines (the issue allows one; releasing first leaves none).
    assert log.count(DISPATCHER_WARNING) == 0, log
    assert log.count(UNCLOSED_QUEUE) == 0, log
    released = re.findall(r"shutdown: released (\d+) A2A task\(s\) held in memory", log)
    assert released == [str(PARKED)], log
    assert "shutdown hooks ran (" in log, log
