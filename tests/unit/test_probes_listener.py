"""The push checks' webhook listener: real HTTP in, what it records, and what it refuses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from arena_core.probes.base import ProbeOptions
from arena_core.probes.listener import (
    KEPT_BODY_BYTES,
    MAX_BODY_BYTES,
    MAX_HEAD_BYTES,
    MAX_RECORDED,
    WebhookListener,
)
from arena_core.probes.runner import run_probes


def _with_listener(
    body: Callable[[WebhookListener], Awaitable[None]], *, read_timeout_s: float = 5.0
) -> None:
    async def go() -> None:
        listener = WebhookListener(read_timeout_s=read_timeout_s)
        await listener.start()
        try:
            await body(listener)
        finally:
            await listener.stop()

    asyncio.run(go())


async def _raw(listener: WebhookListener, data: bytes, *, close_write: bool = True) -> bytes:
    """Send ``data`` on a fresh connection and read whatever comes back until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
    try:
        writer.write(data)
        await writer.drain()
        if close_write:
            writer.write_eof()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def test_it_records_a_notification_and_answers_200() -> None:
    async def body(listener: WebhookListener) -> None:
        url = listener.url()
        assert url.startswith(f"http://127.0.0.1:{listener.port}/hook-")
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                url + "?x=1",
                json={"id": "task-1", "status": {"state": "completed"}},
                headers={"X-A2A-Notification-Token": "tok-123", "Authorization": "Bearer abc"},
            )
        assert answer.status_code == 200
        assert answer.json() == {}
        (request,) = await listener.wait_for(url, 1.0)
        assert request.method == "POST"
        assert request.path == url.removeprefix(f"http://127.0.0.1:{listener.port}")
        assert request.query == "x=1"
        assert request.headers["x-a2a-notification-token"] == "tok-123"
        assert request.headers["authorization"] == "Bearer abc"
        assert request.headers["content-type"] == "application/json"
        assert '"completed"' in request.text()
        assert listener.received(request.path) == [request]

    _with_listener(body)


def test_every_url_has_its_own_path() -> None:
    async def body(listener: WebhookListener) -> None:
        first, second = listener.url(), listener.url()
        assert first != second
        assert listener.url("/fixed") == f"http://127.0.0.1:{listener.port}/fixed"
        async with httpx.AsyncClient() as client:
            await client.put(second, content=b"x")
        assert await listener.wait_for(first, 0.05) == []
        assert [r.method for r in await listener.wait_for(second, 0.05)] == ["PUT"]

    _with_listener(body)


def test_wait_for_returns_when_a_request_arrives() -> None:
    async def body(listener: WebhookListener) -> None:
        url = listener.url()

        async def later() -> None:
            await asyncio.sleep(0.2)
            async with httpx.AsyncClient() as client:
                await client.post(url, content=b"late")

        started = time.monotonic()
        sender = asyncio.create_task(later())
        requests = await listener.wait_for(url, 10.0)
        await sender
        assert [r.body for r in requests] == [b"late"]
        assert time.monotonic() - started < 5.0

    _with_listener(body)


def test_wait_for_gives_up_after_its_timeout() -> None:
    async def body(listener: WebhookListener) -> None:
        started = time.monotonic()
        assert await listener.wait_for(listener.url(), 0.2) == []
        assert await listener.wait_for(listener.url(), -1) == []
        assert time.monotonic() - started < 2.0

    _with_listener(body)


def test_bodies_are_kept_in_part_and_capped() -> None:
    async def body(listener: WebhookListener) -> None:
        url = listener.url()
        async with httpx.AsyncClient() as client:
            big = await client.post(url, content=b"a" * (KEPT_BODY_BYTES + 1000))
            assert big.status_code == 200
            too_big = await client.post(url, content=b"b" * (MAX_BODY_BYTES + 1))
            assert too_big.status_code == 413
        (kept,) = listener.received(url)
        assert kept.body == b"a" * KEPT_BODY_BYTES

    _with_listener(body)


def test_chunked_bodies_are_read_and_capped() -> None:
    async def chunks(size: int) -> AsyncIterator[bytes]:
        for _ in range(size // 1024):
            yield b"c" * 1024

    async def body(listener: WebhookListener) -> None:
        url = listener.url()
        async with httpx.AsyncClient() as client:
            assert (await client.post(url, content=chunks(10 * 1024))).status_code == 200
            assert (await client.post(url, content=chunks(MAX_BODY_BYTES + 1024))).status_code == 413
        (kept,) = listener.received(url)
        assert kept.body == b"c" * 10 * 1024

    _with_listener(body)


@pytest.mark.parametrize(
    ("data", "status"),
    [
        (b"\x00\xffgarbage\r\n\r\n", b"400"),
        (b"GET /x\r\n\r\n", b"400"),
        (b"GET /x HTTP/2.0\r\n\r\n", b"400"),
        (b"POST /x HTTP/1.1\r\nno-colon-here\r\n\r\n", b"400"),
        (b"POST /x HTTP/1.1\r\nContent-Length: abc\r\n\r\n", b"400"),
        (b"POST /x HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", b"413"),
        (b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b"400"),
        (b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort", b""),
        (b"GET /x HTTP/1.1\r\nX-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n\r\n", b"431"),
        (b"GET /x HTTP/1.1\r\nX-Big: " + b"a" * (4 * MAX_HEAD_BYTES), b"431"),
    ],
)
def test_garbage_is_refused_and_not_recorded(data: bytes, status: bytes) -> None:
    async def body(listener: WebhookListener) -> None:
        answer = await _raw(listener, data)
        assert answer.split(b" ")[1:2] == ([status] if status else [])
        assert not listener.requests
        async with httpx.AsyncClient() as client:  # still serving
            assert (await client.get(listener.url())).status_code == 200

    _with_listener(body)


def test_a_connection_closed_at_once_is_not_recorded() -> None:
    async def body(listener: WebhookListener) -> None:
        assert await _raw(listener, b"") == b""
        assert not listener.requests

    _with_listener(body)


def test_a_slow_client_is_cut_off() -> None:
    async def body(listener: WebhookListener) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", listener.port)
        try:
            started = time.monotonic()
            writer.write(b"POST /slow HTTP/1.1\r\nContent-Length: 100\r\n")
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 10)
            assert answer.startswith(b"HTTP/1.1 408")
            assert time.monotonic() - started < 5.0
        finally:
            writer.close()
        assert not listener.requests

    _with_listener(body, read_timeout_s=0.3)


def test_only_the_last_requests_are_kept() -> None:
    async def body(listener: WebhookListener) -> None:
        url = listener.url("/many")
        for number in range(MAX_RECORDED + 5):
            text = str(number).encode()
            answer = await _raw(
                listener, b"POST /many HTTP/1.1\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text)
            )
            assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        kept = listener.received(url)
        assert len(kept) == MAX_RECORDED
        assert kept[0].body == b"5"
        assert kept[-1].body == str(MAX_RECORDED + 4).encode()

    _with_listener(body)


def test_stop_closes_idle_connections_and_the_port() -> None:
    async def go() -> None:
        listener = WebhookListener()
        await listener.start()
        port = listener.port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /idle HTTP/1.1\r\n")  # and then nothing
        await writer.drain()
        started = time.monotonic()
        await listener.stop()
        assert time.monotonic() - started < 2.0
        with contextlib.suppress(ConnectionResetError):  # closed with bytes unread: a reset is a close too
            assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises(RuntimeError):
            listener.url()
        await listener.stop()  # twice is fine

    asyncio.run(go())


# -- the listener as the push checks use it ----------------------------------------------------


class FinishingAgent:
    """An in-process A2A 1.0 agent that ends every task at once and calls any webhook it is given
    (without its token): the push checks must carry the webhook in a new message to see it called."""

    CARD: dict[str, Any] = {  # noqa: RUF012 - read only
        "name": "finishing agent",
        "supportedInterfaces": [
            {"url": "http://agent.test/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"pushNotifications": True},
    }

    def __init__(self) -> None:
        self.configs: dict[tuple[str, str], dict[str, Any]] = {}
        self.deleted: list[tuple[str, str]] = []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/.well-known/agent-card.json":
            return httpx.Response(200, json=self.CARD)
        envelope = json.loads(await request.aread())
        params = envelope.get("params") or {}
        try:
            result = await self._answer(envelope["method"], params)
        except KeyError:
            error = {"code": -32001, "message": "not found"}
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": envelope["id"], "error": error})
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": envelope["id"], "result": result})

    async def _answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "SendMessage":
            task: dict[str, Any] = {
                "id": uuid.uuid4().hex,
                "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED"},
            }
            carried = (params.get("configuration") or {}).get("taskPushNotificationConfig")
            if carried is not None:
                self.configs[(task["id"], carried["id"])] = carried
                async with httpx.AsyncClient() as client:
                    await client.post(carried["url"], json=task)
            return {"task": task}
        if method == "CreateTaskPushNotificationConfig":
            config = {**params, "id": uuid.uuid4().hex}
            self.configs[(params["taskId"], config["id"])] = config
            return config
        if method == "DeleteTaskPushNotificationConfig":
            key = (params["taskId"], params["id"])
            del self.configs[key]
            self.deleted.append(key)
            return {}
        raise KeyError(method)


def test_an_agent_that_ends_tasks_at_once_is_given_the_webhook_in_a_message() -> None:
    agent = FinishingAgent()
    options = ProbeOptions(only=frozenset({"push"}), wait_s=5.0, rate_per_s=1000)
    report = asyncio.run(run_probes("http://agent.test/", options, transport=httpx.MockTransport(agent)))
    results = {result.check_id: result for result in report.results}
    assert {check: result.status for check, result in results.items()} == {
        "push.private-webhook": "failed",
        "push.ssrf": "failed",
        "push.webhook-unauthenticated": "failed",
    }, results
    (ssrf,) = results["push.ssrf"].findings
    assert "a new message carrying the webhook" in ssrf.detail
    assert '"taskPushNotificationConfig"' in ssrf.evidence[1].request
    assert len(agent.deleted) == 2  # the config on the ended task, and the one the message carried
    assert agent.configs == {}
