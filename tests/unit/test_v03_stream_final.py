"""``final: true`` on the interrupted status update that ends a 0.3 message stream (V03StreamFinal).

The middleware is driven here by a small ASGI app that answers with given SSE
body messages, so framing cases (events split across messages, several in
one, CR/LF/CRLF line ends, comments) can be chosen exactly. The real SDK
streams go through it in tests/integration/test_defender_streams.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from arena_core.a2a.v03_stream_final import V03StreamFinal, mark_final


def _jsonrpc_event(state: str, *, final: bool = False, kind: str = "status-update") -> dict[str, Any]:
    result = {"taskId": "t", "contextId": "c", "kind": kind, "status": {"state": state}, "final": final}
    return {"jsonrpc": "2.0", "id": 1, "result": result}


def _sse(document: Any, end: bytes = b"\r\n") -> bytes:
    return b"data: " + json.dumps(document, separators=(",", ":")).encode() + end + end


def _data(stream: bytes) -> list[Any]:
    """The JSON of each event's data (one data line per event in these tests)."""
    return [json.loads(line[5:]) for line in stream.splitlines() if line.startswith(b"data:")]


class _Answer:
    """An ASGI app that reads the request body and answers with ``chunks`` as body messages."""

    def __init__(self, chunks: list[bytes], *, media_type: bytes = b"text/event-stream") -> None:
        self.chunks = chunks
        self.media_type = media_type
        self.body = b""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        more = True
        while more:
            message = await receive()
            self.body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = [(b"content-type", self.media_type + b"; charset=utf-8")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for index, chunk in enumerate(self.chunks):
            await send(
                {"type": "http.response.body", "body": chunk, "more_body": index < len(self.chunks) - 1}
            )


async def _call(app: _Answer, path: str, body: bytes, *, method: str = "POST") -> tuple[bytes, list[Message]]:
    """The response body ``V03StreamFinal`` sends for a request, and the messages it sent."""
    middleware = V03StreamFinal(app, rpc_path="/", rest_prefix="/rest")
    requests = [{"type": "http.request", "body": body[:5], "more_body": True}]
    requests.append({"type": "http.request", "body": body[5:], "more_body": False})
    sent: list[Message] = []

    async def receive() -> Message:
        return requests.pop(0) if requests else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": []}
    await middleware(scope, receive, send)
    body_out = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert app.body == body, "the app reads the request body unchanged"
    return body_out, sent


def _rpc(method: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}}).encode()


@pytest.mark.asyncio
async def test_jsonrpc_message_stream_ending_in_input_required_is_final() -> None:
    working, parked = _jsonrpc_event("working"), _jsonrpc_event("input-required")
    app = _Answer(
        [_sse({"jsonrpc": "2.0", "id": 1, "result": {"kind": "task"}}), _sse(working), _sse(parked)]
    )
    body, _ = await _call(app, "/", _rpc("message/stream"))
    finals = [event["result"].get("final") for event in _data(body)]
    assert finals == [None, False, True]


@pytest.mark.asyncio
@pytest.mark.parametrize("state", ["input-required", "auth-required"])
async def test_only_the_final_flag_changes(state: str) -> None:
    event = _jsonrpc_event(state)
    event["result"]["status"]["message"] = {"parts": [{"kind": "text", "text": 'héllo "final":false'}]}
    body, _ = await _call(_Answer([_sse(event)]), "/", _rpc("message/stream"))
    expected = json.loads(json.dumps(event))
    expected["result"]["final"] = True
    assert _data(body) == [expected]
    assert body.endswith(b"\r\n\r\n") and body.count(b"\r\n\r\n") == 1


@pytest.mark.asyncio
async def test_rest_v03_stream_gets_final_on_its_interrupted_update() -> None:
    parked = {
        "statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}
    }
    working = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}
    app = _Answer([_sse({"task": {"id": "t"}}), _sse(working), _sse(parked)])
    body, _ = await _call(app, "/rest/v1/message:stream", b'{"message":{}}')
    updates = [event["statusUpdate"] for event in _data(body) if "statusUpdate" in event]
    assert [update.get("final") for update in updates] == [None, True]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/", _rpc("SendStreamingMessage")),  # 1.0: no final field at all
        ("/", _rpc("tasks/resubscribe")),  # a local subscription stays open across turns
        ("/", b"not json"),
        ("/rest/message:stream", b"{}"),  # 1.0 HTTP+JSON
        ("/rest/v1/tasks/t:subscribe", b"{}"),
        ("/elsewhere", _rpc("message/stream")),
    ],
)
@pytest.mark.asyncio
async def test_other_streams_pass_byte_for_byte(path: str, body: bytes) -> None:
    chunks = [
        _sse(_jsonrpc_event("input-required")),
        _sse({"statusUpdate": {"status": {"state": "TASK_STATE_INPUT_REQUIRED"}}}),
    ]
    out, _ = await _call(_Answer(list(chunks)), path, body)
    assert out == b"".join(chunks)


@pytest.mark.asyncio
async def test_a_json_answer_is_not_touched() -> None:
    answer = json.dumps(_jsonrpc_event("input-required")).encode()
    out, sent = await _call(_Answer([answer], media_type=b"application/json"), "/", _rpc("message/stream"))
    assert out == answer
    assert sent[0]["type"] == "http.response.start"


@pytest.mark.asyncio
async def test_get_requests_and_lifespan_pass_through() -> None:
    chunk = _sse(_jsonrpc_event("input-required"))
    out, _ = await _call(_Answer([chunk]), "/", b"", method="GET")
    assert out == chunk
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    async def never() -> Message:
        raise AssertionError("not read")

    async def drop(message: Message) -> None:
        raise AssertionError("not sent")

    await V03StreamFinal(app, rpc_path="/", rest_prefix="/rest")({"type": "lifespan"}, never, drop)
    assert seen == ["lifespan"]


@pytest.mark.asyncio
@pytest.mark.parametrize("end", [b"\r\n", b"\n", b"\r"])
@pytest.mark.parametrize("cut", [1, 7, 20, -3, -2, -1])
async def test_an_event_split_across_body_messages_is_rewritten_whole(end: bytes, cut: int) -> None:
    ping = b": ping" + end + end
    event = _sse(_jsonrpc_event("input-required"), end)
    stream = ping + event
    split = len(ping) + (cut if cut > 0 else len(event) + cut)
    app = _Answer([stream[:split], stream[split:]])
    body, sent = await _call(app, "/", _rpc("message/stream"))
    assert body.startswith(ping)
    assert [e["result"]["final"] for e in _data(body)] == [True]
    assert body.endswith(end + end)
    assert sent[-1] == {"type": "http.response.body", "body": sent[-1]["body"], "more_body": False}


@pytest.mark.asyncio
async def test_several_events_in_one_message_and_other_fields_are_kept() -> None:
    first = b"event: update\r\nid: 7\r\n" + _sse(_jsonrpc_event("working"))
    second = b"id: 8\r\n" + _sse(_jsonrpc_event("input-required"))
    body, _ = await _call(_Answer([first + second]), "/", _rpc("message/stream"))
    assert body.startswith(first)
    assert body[len(first) :].startswith(b"id: 8\r\ndata: ")
    assert [e["result"]["final"] for e in _data(body)] == [False, True]


def test_mark_final_handles_data_split_over_lines_and_leaves_unfinished_events() -> None:
    document = json.dumps(_jsonrpc_event("input-required"), indent=1).encode()
    event = b"".join(b"data: " + line + b"\n" for line in document.split(b"\n")) + b"\n"
    unfinished = b"data: " + json.dumps(_jsonrpc_event("auth-required")).encode() + b"\n"

    def mark(document: Any) -> bool:
        document["result"]["final"] = True
        return True

    marked = mark_final(event + unfinished, mark)
    assert marked.endswith(b"\n\n" + unfinished)
    assert [e["result"]["final"] for e in _data(marked[: -len(unfinished)])] == [True]
    untouched = _sse(_jsonrpc_event("working"))
    assert mark_final(untouched, mark) is untouched
