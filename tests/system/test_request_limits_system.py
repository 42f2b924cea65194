"""Real servers on loopback refuse oversized, slow and malformed bodies and keep serving.

``arena serve defender`` under uvicorn on loopback with ``ARENA_MAX_REQUEST_BYTES=4096``:
an oversized JSON-RPC body (declared, then chunked), an oversized HTTP+JSON body and
oversized bodies on reads (GET) get 413 with the limit in a JSON body, a body just over the
limit is drained so the client reads the 413 and a clean close (no reset), no traceback is
logged, and the same process then answers a normal message and its health check.

The read deadline (``BODY_READ_TIMEOUT_S``, 30 s) is shortened for a defender app served by
uvicorn in this process: clients that stall or trickle their body get 408 and the connection
closes, with no request left running in the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
import uvicorn

from arena.local_services import LocalServices
from support.processes import clean_env
from support.uvicorn_server import bound_socket, uvicorn_server

if TYPE_CHECKING:
    from conftest import InProcessArena

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
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert "still here?" in json.dumps(task["status"]["message"])
            assert http.get(f"{defender.url}/healthz").status_code == 200

            # Reads carry bodies too: counted and refused like any other (GET and HEAD used to pass).
            for path in ("/", "/healthz", "/rest/tasks/t-1", "/tenant/rest/tasks/t-1"):
                response = http.request("GET", f"{defender.url}{path}", content=b"x" * (LIMIT + 1))
                assert response.status_code == 413, (path, response.text)
                assert response.json()["error"]["code"] == 413
                assert response.headers["connection"] == "close"
                response = http.request("GET", f"{defender.url}{path}", content=chunks())
                assert response.status_code == 413, (path, response.text)
                assert f"limit of {LIMIT} bytes" in response.json()["error"]["message"]
            head = http.request("HEAD", f"{defender.url}/healthz", content=b"x" * (LIMIT + 1))
            assert head.status_code == 413
            port = int(defender.url.rsplit(":", 1)[1])

            # A body ending within the drain margin (64 KiB) past the limit is read to its end
            # before the 413: the client's writes all succeed, then it reads the 413 and a clean
            # close (no reset).
            for _ in range(3):
                assert _post_just_over_the_limit(port) == "413, then a clean close"

            assert http.post(defender.url, json=_send("still?", "ok2"), headers=V10).status_code == 200
        assert defender.process.poll() is None
        assert "Traceback" not in defender.log_path.read_text(errors="replace")


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _post_just_over_the_limit(port: int) -> str:
    """A chunked POST 34 KiB over the limit, sent in pauses; how the exchange ended for the client.

    The pauses let the server decide on the 413 before the rest is sent: without the drain it
    answers and closes then, so the client's next writes fail (EPIPE, ECONNRESET), the failure a
    client that writes its whole body before reading reports instead of the 413.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        try:
            head = b"POST /rest/message:send HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n"
            sock.sendall(head + _chunk(b" " * (LIMIT + 4096)))
            time.sleep(0.2)
            sock.sendall(_chunk(b" " * 30_000))
            time.sleep(0.1)
            sock.sendall(b"0\r\n\r\n")
        except OSError as exc:
            return f"write failed: {exc!r}"
        reply = b""
        try:
            while block := sock.recv(65536):
                reply += block
        except OSError as exc:
            return f"read failed after {reply[:12]!r}: {exc!r}"
    if not reply.startswith(b"HTTP/1.1 413 ") or b"connection: close" not in reply.lower():
        return f"unexpected reply: {reply[:300]!r}"
    return "413, then a clean close"


# --- the read deadline, on a real socket -----------------------------------------------------------

DEADLINE_S = 0.5


async def _read_reply(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], dict[str, object]]:
    """Reads one response to its end (the server closes the connection after it)."""
    raw = await asyncio.wait_for(reader.read(), 5)  # until EOF: the connection must close
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, json.loads(body)


async def _no_request_left(server: uvicorn.Server) -> None:
    """Every connection closed and no request task left running (nothing hangs on a body)."""
    for _ in range(100):
        if not server.server_state.connections and not server.server_state.tasks:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"still open: {server.server_state.connections}, {server.server_state.tasks}")


@pytest.mark.asyncio
async def test_slow_bodies_get_408_and_the_server_keeps_nothing_open(
    arena: InProcessArena, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("arena_core.http_limits.BODY_READ_TIMEOUT_S", DEADLINE_S)
    arena.add_model(mode="echo")
    arena.add_defender(max_request_bytes=LIMIT)
    sock = bound_socket()
    port = sock.getsockname()[1]
    async with uvicorn_server(arena.apps["defender"], sock) as server:
        # A declared Content-Length never completed: 10 bytes of 1000, then silence.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        started = time.monotonic()
        writer.write(b"POST / HTTP/1.1\r\nHost: d\r\nContent-Type: application/json\r\n")
        writer.write(b"A2A-Version: 1.0\r\nContent-Length: 1000\r\n\r\n" + b"{" * 10)
        await writer.drain()
        status, headers, body = await _read_reply(reader)
        assert DEADLINE_S <= time.monotonic() - started < DEADLINE_S + 3
        assert status == 408 and headers["connection"] == "close"
        assert body == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": f"Request timeout: the request body did not arrive within {DEADLINE_S:g} seconds",
                "data": {"timeout_s": DEADLINE_S},
            },
        }
        writer.close()

        # A trickle: a byte every 50 ms never stalls for long, but the whole body is late.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /rest/message:send HTTP/1.1\r\nHost: d\r\nContent-Length: 2000\r\n\r\n")
        started = time.monotonic()

        async def trickle() -> None:
            with contextlib.suppress(OSError):
                for _ in range(2000):
                    writer.write(b" ")
                    await writer.drain()
                    await asyncio.sleep(0.05)

        trickling = asyncio.create_task(trickle())
        status, headers, body = await _read_reply(reader)
        assert time.monotonic() - started < DEADLINE_S + 3
        assert status == 408 and headers["connection"] == "close"
        assert body["error"] == {
            "code": 408,
            "status": "DEADLINE_EXCEEDED",
            "message": f"Request timeout: the request body did not arrive within {DEADLINE_S:g} seconds",
        }
        trickling.cancel()
        writer.close()

        # Chunked, stalled after its first chunk, on a read (GET) too.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        status, headers, body = await _read_reply(reader)
        assert status == 408 and headers["connection"] == "close"
        writer.close()

        await _no_request_left(server)
        # And the agent still answers, on a new connection.
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(f"http://127.0.0.1:{port}/", json=_send("after", "a"), headers=V10)
            assert response.status_code == 200 and "after" in response.text
            response = await http.get(f"http://127.0.0.1:{port}/healthz")
            assert response.status_code == 200
