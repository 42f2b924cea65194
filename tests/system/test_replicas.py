"""Defender replicas sharing one real Redis: any replica serves any turn.

Each test starts real processes on loopback: a scripted model server, two
defender replicas (``ARENA_REDIS_URL`` set, a namespace of their own) and
talks raw A2A 1.0 JSON-RPC to them, alternating replicas.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.local_services import LocalServices, ServiceProcess
from support.processes import clean_env
from support.redis_server import SKIP_REASON, RedisServer, find_redis_server

pytestmark = pytest.mark.system

V10 = {"A2A-Version": "1.0"}


@dataclass
class Replicas:
    a: ServiceProcess
    b: ServiceProcess
    services: LocalServices
    env: dict[str, str]


def _replicas(
    log_dir: Path, redis_url: str, namespace: str, *, latency_ms: int = 0, turn_mode: str = "input-required"
) -> Iterator[Replicas]:
    """Two defender replicas on one Redis. The parked turn mode by default: its tasks span turns,
    so every turn on the other replica continues a task that replica did not start."""
    with LocalServices(log_dir, env=clean_env()) as services:
        model = services.start(
            "model",
            extra_args=["--engine", "scripted", "--scripted-mode", "echo", "--latency-ms", str(latency_ms)],
        )
        services.wait_ready(model, timeout_s=60)
        env = {
            "ARENA_MODEL_BASE_URL": f"{model.url}/v1",
            "ARENA_REDIS_URL": redis_url,
            "ARENA_REDIS_NAMESPACE": namespace,
            "ARENA_REDIS_TIMEOUT_S": "1",
            "ARENA_DEFENDER_TURN_MODE": turn_mode,
        }
        a = services.start("defender", env=env)
        b = services.start("defender", env=env)
        services.wait_ready(a, timeout_s=60)
        services.wait_ready(b, timeout_s=60)
        yield Replicas(a, b, services, env)


@pytest.fixture
def replicas(tmp_path: Path, redis_server: RedisServer, redis_namespace: str) -> Iterator[Replicas]:
    yield from _replicas(tmp_path, redis_server.url, redis_namespace)


@pytest.fixture
def completing_replicas(
    tmp_path: Path, redis_server: RedisServer, redis_namespace: str
) -> Iterator[Replicas]:
    """Replicas in the default turn mode: every turn completes its task."""
    yield from _replicas(tmp_path, redis_server.url, redis_namespace, turn_mode="complete")


@pytest.fixture
def slow_replicas(tmp_path: Path, redis_server: RedisServer, redis_namespace: str) -> Iterator[Replicas]:
    yield from _replicas(tmp_path, redis_server.url, redis_namespace, latency_ms=1500)


def _rpc(url: str, method: str, params: dict[str, Any], *, timeout: float = 30) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(url, json=body, headers=V10, timeout=timeout)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def _send(url: str, text: str, task: dict[str, Any] | None = None, **config: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": f"m-{time.monotonic_ns()}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task is not None:
        message["contextId"] = task["contextId"]
        message["taskId"] = task["id"]
    params: dict[str, Any] = {"message": message}
    if config:
        params["configuration"] = config
    reply = _rpc(url, "SendMessage", params)
    assert "result" in reply, reply
    result: dict[str, Any] = reply["result"]["task"]
    return result


def _reply_text(task: dict[str, Any]) -> str:
    return str(task["status"]["message"]["parts"][0]["text"])


def test_a_conversation_alternating_replicas_keeps_the_whole_history(replicas: Replicas) -> None:
    task = _send(replicas.a.url, "turn 1")
    words = ["turn 1"]
    for number, replica in zip(range(2, 5), [replicas.b, replicas.a, replicas.b], strict=True):
        words.append(f"turn {number}")
        task = _send(replica.url, f"turn {number}", task)
        heard = " | ".join(json.dumps(w) for w in words)
        assert _reply_text(task) == f"[scripted] heard {number} user message(s): {heard}"
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def test_in_the_default_mode_a_conversation_alternating_replicas_keeps_the_whole_history(
    completing_replicas: Replicas,
) -> None:
    a, b = completing_replicas.a.url, completing_replicas.b.url
    first = _send(a, "turn 1")
    words = ["turn 1"]
    tasks = {first["id"]}
    for number, url in zip(range(2, 5), [b, a, b], strict=True):
        words.append(f"turn {number}")
        # A follow-up by contextId only: each turn is a task of its own.
        message = {"messageId": f"m{number}", "role": "ROLE_USER", "contextId": first["contextId"]}
        params = {"message": {**message, "parts": [{"text": words[-1]}]}}
        task = _rpc(url, "SendMessage", params)["result"]["task"]
        heard = " | ".join(json.dumps(w) for w in words)
        assert _reply_text(task) == f"[scripted] heard {number} user message(s): {heard}"
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["contextId"] == first["contextId"]
        tasks.add(task["id"])
    assert len(tasks) == 4


def test_a_task_running_on_a_streams_to_a_subscriber_on_b(slow_replicas: Replicas) -> None:
    task = _send(slow_replicas.a.url, "take your time", returnImmediately=True)
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    events: list[dict[str, Any]] = []
    body = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task["id"]}}
    with httpx.stream("POST", slow_replicas.b.url, json=body, headers=V10, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:])["result"])
    states = [(e.get("task") or e.get("statusUpdate") or {}).get("status", {}).get("state") for e in events]
    assert states[-1] == "TASK_STATE_INPUT_REQUIRED", events
    final = events[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
    assert final == '[scripted] heard 1 user message(s): "take your time"'


def test_cancel_on_b_cancels_the_task_running_on_a(slow_replicas: Replicas) -> None:
    task = _send(slow_replicas.a.url, "long job", returnImmediately=True)
    canceled = _rpc(slow_replicas.b.url, "CancelTask", {"id": task["id"]})
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
    # A's model call returns later; its write then loses to the cancel (compare-and-swap) and
    # A stops the task. Wait for that to be logged, then check both replicas agree.
    deadline = time.monotonic() + 30
    while "concurrent modification" not in slow_replicas.a.log_tail(400):
        assert time.monotonic() < deadline, slow_replicas.a.log_tail(40)
        time.sleep(0.1)
    for replica in (slow_replicas.a, slow_replicas.b):
        state = _rpc(replica.url, "GetTask", {"id": task["id"]})["result"]["status"]["state"]
        assert state == "TASK_STATE_CANCELED"
    late = _rpc(
        slow_replicas.a.url,
        "SendMessage",
        {
            "message": {
                "messageId": "late",
                "role": "ROLE_USER",
                "contextId": task["contextId"],
                "taskId": task["id"],
                "parts": [{"text": "are you there?"}],
            }
        },
    )
    assert "error" in late


def test_sigkill_a_replica_between_turns(replicas: Replicas) -> None:
    task = _send(replicas.a.url, "first")
    task = _send(replicas.b.url, "second", task)
    replicas.a.process.send_signal(signal.SIGKILL)
    replicas.a.process.wait(timeout=10)
    task = _send(replicas.b.url, "third", task)
    assert _reply_text(task) == '[scripted] heard 3 user message(s): "first" | "second" | "third"'


def test_redis_restart_with_aof_during_a_conversation(tmp_path: Path, redis_namespace: str) -> None:
    binary = find_redis_server()
    if binary is None:
        pytest.skip(SKIP_REASON)
    data_dir = tmp_path / "redis"
    data_dir.mkdir()
    server = RedisServer(binary, data_dir, aof=True)
    server.start()
    try:
        for replicas in _replicas(tmp_path / "logs", server.url, redis_namespace):
            task = _send(replicas.a.url, "before")
            task = _send(replicas.b.url, "still before", task)
            server.stop()
            started = time.monotonic()
            failed = _rpc(
                replicas.a.url,
                "SendMessage",
                {
                    "message": {
                        "messageId": "during",
                        "role": "ROLE_USER",
                        "contextId": task["contextId"],
                        "taskId": task["id"],
                        "parts": [{"text": "during the outage"}],
                    }
                },
            )
            assert time.monotonic() - started < 15, "a request hung while Redis was down"
            assert "error" in failed, failed
            assert "shared state unavailable" in failed["error"]["message"], failed
            ready = httpx.get(f"{replicas.b.url}/readyz", timeout=10)
            assert ready.status_code == 503
            assert "Redis" in ready.json()["reason"]
            server.start()
            _wait_ready(replicas.a.url)
            _wait_ready(replicas.b.url)
            task = _send(replicas.a.url, "after", task)
            assert _reply_text(task) == (
                '[scripted] heard 3 user message(s): "before" | "still before" | "after"'
            )
    finally:
        server.stop()


def _wait_ready(url: str) -> None:
    deadline = time.monotonic() + 30
    while httpx.get(f"{url}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline, "replica did not become ready again"
        time.sleep(0.1)


def test_an_attacker_on_redis_plays_a_match_against_the_replicas(replicas: Replicas) -> None:
    from support.processes import run_arena

    attacker = replicas.services.start("attacker", env=replicas.env)
    replicas.services.wait_ready(attacker, timeout_s=60)
    done = run_arena(
        ["match", "--target", replicas.a.url, "--attacker", attacker.url, "--max-turns", "3", "--json"]
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # The echo model repeats the playbook's first ask, phrase included: a deterministic win.
    assert result["outcome"] == "attacker_won"
    assert result["turns_used"] == 1
