"""BodySizeLimit and TextBodyGuard at the ASGI level: every method counted, the read deadline,
strict ``Content-Length`` parsing, the drain before a 413, and ``Connection: close`` on refusals."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from arena_core.a2a.sdk_guards import TextBodyGuard
from arena_core.http_limits import (
    BODY_READ_TIMEOUT_S,
    DRAIN_BYTES,
    BodySizeLimit,
    InvalidContentLengthError,
    content_length,
    status_error_body,
)

LIMIT = 1024


async def _never_called(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("the app must not run")


class Served:
    """An app that reads the whole body and answers 200 with its size."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})


class Client:
    """Feeds ``messages`` to the middleware, then never answers again (a stalled client)."""

    def __init__(self, messages: list[Message] | None = None, *, endless: bytes | None = None) -> None:
        self.messages = list(messages or [])
        self.endless = endless
        self.received = 0
        self.bytes_read = 0
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        self.received += 1
        await asyncio.sleep(0)  # a real client's bytes take a turn of the loop to arrive
        if self.bytes_read > 10_000_000:
            raise AssertionError("the body was read far past any limit")
        if self.messages:
            message = self.messages.pop(0)
        elif self.endless is not None:
            message = {"type": "http.request", "body": self.endless, "more_body": True}
        else:
            await asyncio.Event().wait()  # stalls until cancelled
            raise AssertionError("unreachable")
        self.bytes_read += len(message.get("body", b""))
        return message

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.sent[0]["headers"])

    def json(self) -> Any:
        return json.loads(b"".join(m.get("body", b"") for m in self.sent[1:]))


def _scope(method: str = "POST", path: str = "/x", headers: list[tuple[bytes, bytes]] | None = None) -> Scope:
    return {"type": "http", "method": method, "path": path, "headers": headers or []}


def _chunk(body: bytes, more: bool = True) -> Message:
    return {"type": "http.request", "body": body, "more_body": more}


# --- every method is counted ---------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "DELETE", "POST"])
async def test_a_declared_size_over_the_limit_is_413_on_every_method(method: str) -> None:
    client = Client()
    scope = _scope(method, "/healthz", [(b"content-length", b"1025")])
    await BodySizeLimit(_never_called, max_bytes=LIMIT)(scope, client.receive, client.send)
    assert client.status == 413 and client.received == 0
    assert client.headers[b"connection"] == b"close"


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS", "DELETE"])
async def test_a_chunked_body_over_the_limit_is_413_on_every_method(method: str) -> None:
    client = Client(endless=b"x" * 512)
    await BodySizeLimit(_never_called, max_bytes=LIMIT, drain_bytes=0)(
        _scope(method, "/rest/tasks/t-1"), client.receive, client.send
    )
    assert client.status == 413
    assert client.bytes_read <= LIMIT + 512
    assert client.json()["error"]["message"] == (
        f"Request too large: the request body is over the limit of {LIMIT} bytes"
    )


@pytest.mark.asyncio
async def test_a_get_within_the_limit_reaches_the_app_with_its_body() -> None:
    app = Served()
    client = Client([_chunk(b"ab"), _chunk(b"cd", more=False)])
    await BodySizeLimit(app, max_bytes=LIMIT)(_scope("GET", "/healthz"), client.receive, client.send)
    assert client.status == 200 and app.bodies == [b"abcd"]


# --- strict Content-Length -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        b"\xb2",  # "²" in latin-1: str.isdigit() took it, int() raised (500)
        b"1\xb9",  # "1¹"
        "١٢".encode(),  # Arabic-Indic digits (as UTF-8)
        "١٢".encode("utf-16-le"),
        b"-1",
        b"+5",
        b"0x10",
        b"1e3",
        b"",
        b"12 34",
        b"1" * 21,
        b"5\n",
    ],
)
@pytest.mark.asyncio
async def test_an_invalid_content_length_is_400_with_a_json_body(value: bytes) -> None:
    for path, rpc in (("/x", False), ("/", True)):
        client = Client()
        scope = _scope("POST", path, [(b"content-length", value)])
        await BodySizeLimit(_never_called, max_bytes=LIMIT, jsonrpc_path="/")(
            scope, client.receive, client.send
        )
        assert client.status == 400 and client.received == 0
        assert client.headers[b"connection"] == b"close"
        body = client.json()
        if rpc:
            assert body["jsonrpc"] == "2.0" and body["id"] is None
            assert body["error"]["code"] == -32600
            message = body["error"]["message"]
        else:
            assert body["error"]["code"] == 400 and body["error"]["status"] == "INVALID_ARGUMENT"
            message = body["error"]["message"]
        assert message.startswith("Bad request: the Content-Length header")
        assert "is not a size (1 to 20 ASCII digits)" in message


@pytest.mark.asyncio
async def test_conflicting_content_lengths_are_400() -> None:
    for headers in (
        [(b"content-length", b"5"), (b"content-length", b"6")],
        [(b"content-length", b"5, 6")],
    ):
        client = Client()
        await BodySizeLimit(_never_called, max_bytes=LIMIT)(
            _scope(headers=headers), client.receive, client.send
        )
        assert client.status == 400
        assert client.json()["error"]["message"] == (
            "Bad request: the request has conflicting Content-Length values (5, 6)"
        )


def test_content_length_parsing() -> None:
    assert content_length(_scope()) is None
    assert content_length(_scope(headers=[(b"content-length", b" 12\t")])) == 12
    assert content_length(_scope(headers=[(b"content-length", b"0")])) == 0
    assert content_length(_scope(headers=[(b"content-length", b"9" * 20)])) == int("9" * 20)
    # Identical repeats are one size (RFC 9110 section 8.6).
    assert content_length(_scope(headers=[(b"content-length", b"7"), (b"content-length", b"7")])) == 7
    assert content_length(_scope(headers=[(b"content-length", b"7, 7")])) == 7
    with pytest.raises(InvalidContentLengthError):
        content_length(_scope(headers=[(b"content-length", "٣".encode())]))


@pytest.mark.asyncio
async def test_twenty_digits_over_the_limit_is_413_not_an_error() -> None:
    client = Client()
    scope = _scope(headers=[(b"content-length", b"9" * 20)])
    await BodySizeLimit(_never_called, max_bytes=LIMIT)(scope, client.receive, client.send)
    assert client.status == 413 and f"is {'9' * 20} bytes" in client.json()["error"]["message"]


# --- the read deadline ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_stalled_body_is_408_and_the_app_never_runs() -> None:
    client = Client([_chunk(b"x" * 10)])  # then nothing, forever
    scope = _scope(headers=[(b"content-length", b"1000")])
    await asyncio.wait_for(
        BodySizeLimit(_never_called, max_bytes=LIMIT, read_timeout_s=0.2)(scope, client.receive, client.send),
        5,
    )
    assert client.status == 408 and client.headers[b"connection"] == b"close"
    assert client.json() == {
        "error": {
            "code": 408,
            "status": "DEADLINE_EXCEEDED",
            "message": "Request timeout: the request body did not arrive within 0.2 seconds",
        }
    }


@pytest.mark.asyncio
async def test_a_trickled_body_is_408_even_though_bytes_keep_coming() -> None:
    """The deadline is for the whole body, not between chunks."""

    async def trickle() -> Message:
        await asyncio.sleep(0.02)
        return _chunk(b"x")

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    started = asyncio.get_running_loop().time()
    limit = BodySizeLimit(_never_called, max_bytes=LIMIT, jsonrpc_path="/", read_timeout_s=0.3)
    await asyncio.wait_for(limit(_scope("POST", "/"), trickle, send), 5)
    assert asyncio.get_running_loop().time() - started < 2
    assert sent[0]["status"] == 408
    body = json.loads(sent[1]["body"])
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600 and body["error"]["data"] == {"timeout_s": 0.3}
    assert body["error"]["message"].startswith("Request timeout")


@pytest.mark.asyncio
async def test_the_default_deadline_is_read_when_the_middleware_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert BodySizeLimit(_never_called, max_bytes=LIMIT).read_timeout_s == BODY_READ_TIMEOUT_S == 30.0
    monkeypatch.setattr("arena_core.http_limits.BODY_READ_TIMEOUT_S", 0.1)
    assert BodySizeLimit(_never_called, max_bytes=LIMIT).read_timeout_s == 0.1


@pytest.mark.asyncio
async def test_a_custom_error_body_shapes_every_refusal() -> None:
    def orchestrator_style(message: str, status: int) -> dict[str, Any]:
        return {"error": {"kind": f"k{status}", "message": message, "problems": []}}

    def legacy(message: str) -> dict[str, Any]:
        return {"error": {"kind": "too_large", "message": message, "problems": []}}

    for builder, kind in ((orchestrator_style, "k408"), (None, "too_large")):
        client = Client([_chunk(b"x")])
        limit = (
            BodySizeLimit(_never_called, max_bytes=LIMIT, error_body=legacy, read_timeout_s=0.05)
            if builder is None
            else BodySizeLimit(_never_called, max_bytes=LIMIT, error_body_for=builder, read_timeout_s=0.05)
        )
        await asyncio.wait_for(limit(_scope(), client.receive, client.send), 5)
        assert client.status == 408
        error = client.json()["error"]
        assert error["kind"] == kind and error["message"].startswith("Request timeout")


def test_the_default_error_body_keeps_its_413_shape() -> None:
    assert status_error_body("m") == {"error": {"code": 413, "status": "INVALID_ARGUMENT", "message": "m"}}


# --- the drain before a 413 ----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_rest_of_a_body_just_over_the_limit_is_drained_before_the_413() -> None:
    """A body ending within DRAIN_BYTES past the limit is read in whole, so the server closes cleanly."""
    client = Client([*(_chunk(b"x" * 512) for _ in range(40)), _chunk(b"", more=False)])
    events: list[str] = []

    async def receive() -> Message:
        events.append("receive")
        return await client.receive()

    async def send(message: Message) -> None:
        events.append("send")
        await client.send(message)

    await BodySizeLimit(_never_called, max_bytes=LIMIT)(_scope(), receive, send)
    assert client.status == 413 and client.messages == []  # all of the body was taken in
    assert events.index("send") == len(events) - 2  # ...before the answer


@pytest.mark.asyncio
async def test_the_drain_is_bounded_in_bytes_and_in_time() -> None:
    endless = Client(endless=b"x" * 512)
    await asyncio.wait_for(
        BodySizeLimit(_never_called, max_bytes=LIMIT)(_scope(), endless.receive, endless.send), 5
    )
    assert endless.status == 413
    assert LIMIT + DRAIN_BYTES <= endless.bytes_read <= LIMIT + DRAIN_BYTES + 1024
    stalled = Client([_chunk(b"x" * 2048)])  # over the limit, then nothing more
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(
        BodySizeLimit(_never_called, max_bytes=LIMIT)(_scope(), stalled.receive, stalled.send), 5
    )
    assert stalled.status == 413 and asyncio.get_running_loop().time() - started < 2


@pytest.mark.asyncio
async def test_a_client_gone_while_its_excess_is_drained_gets_no_answer() -> None:
    client = Client([_chunk(b"x" * 2048), {"type": "http.disconnect"}])
    await BodySizeLimit(_never_called, max_bytes=LIMIT)(_scope(), client.receive, client.send)
    assert client.sent == []


# --- TextBodyGuard reads POST bodies only --------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/rest/tasks/t-1", "/tenant/rest/tasks/t-1", "/rest/v1/tasks/t-1", "/"])
async def test_text_body_guard_leaves_bodies_it_does_not_check_unread(method: str, path: str) -> None:
    """a2a-sdk reads only POST bodies; the guard buffered any method's under /rest/ (unbounded)."""
    called: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        called.append(scope["method"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    client = Client(endless=b"\x80" * 512)  # endless and not UTF-8
    guard = TextBodyGuard(app, rpc_path="/", rest_prefix="/rest")
    await asyncio.wait_for(guard(_scope(method, path), client.receive, client.send), 5)
    assert called == [method] and client.received == 0 and client.status == 204


@pytest.mark.asyncio
async def test_text_body_guard_still_checks_posts() -> None:
    client = Client([_chunk(b"\x80", more=False)])
    guard = TextBodyGuard(_never_called, rpc_path="/", rest_prefix="/rest")
    await guard(_scope("POST", "/tenant/rest/message:send"), client.receive, client.send)
    assert client.status == 400
