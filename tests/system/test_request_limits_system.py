"""A real defender process refuses oversized bodies with 413 and keeps serving.

``arena serve defender`` under uvicorn on loopback with ``ARENA_MAX_REQUEST_BYTES=4096``:
an oversized JSON-RPC body (declared, then chunked) and an oversized HTTP+JSON body get
413 with the limit in a JSON body, no traceback is logged, and the same process then
answers a normal message and its health check.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.local_services import LocalServices
from support.processes import clean_env

pytestmark = [pytest.mark.system, pytest.mark.timeout(120)]

LIMIT = 4096
V10 = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def _send(text: str, message_id: str) -> dict[str, object]:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def test_an_oversized_body_is_413_and_the_defender_keeps_serving(tmp_path: Path) -> None:
    with LocalServices(tmp_path, env=clean_env()) as services:
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "echo"])
        services.wait_ready(model, timeout_s=60)
        defender = services.start(
            "defender", env={"ARENA_MODEL_BASE_URL": f"{model.url}/v1", "ARENA_MAX_REQUEST_BYTES": str(LIMIT)}
        )
        services.wait_ready(defender, timeout_s=60)
        with httpx.Client(timeout=20.0) as http:
            # Declared too large (Content-Length).
            body = json.dumps(_send("x" * 20_000, "big")).encode()
            response = http.post(defender.url, content=body, headers=V10)
            assert response.status_code == 413, response.text
            error = response.json()["error"]
            assert error["code"] == -32600 and f"the limit is {LIMIT} bytes" in error["message"]
            assert error["data"] == {"limit_bytes": LIMIT}

            # Chunked (no Content-Length): counted while it arrives.
            def chunks() -> Iterator[bytes]:
                for _ in range(10):
                    yield b" " * 1_000

            response = http.post(f"{defender.url}/rest/message:send", content=chunks(), headers=V10)
            assert response.status_code == 413, response.text
            assert response.json()["error"]["code"] == 413
            assert f"limit of {LIMIT} bytes" in response.json()["error"]["message"]

            # Still serving: a normal turn and the health checks.
            response = http.post(defender.url, json=_send("still here?", "ok"), headers=V10)
            assert response.status_code == 200, response.text
            task = response.json()["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert "still here?" in json.dumps(task["status"]["message"])
            assert http.get(f"{defender.url}/healthz").status_code == 200
        assert defender.process.poll() is None
        assert "Traceback" not in defender.log_path.read_text(errors="replace")
