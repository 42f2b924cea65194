"""0.3 message streams that stop at an interrupted state say so: ``final: true`` on their last update.

In A2A 0.3 a ``TaskStatusUpdateEvent`` carries ``final``: "if true, this is the
final event in the stream for this interaction" (0.3 section 7.2.2), and a 0.3
client reads a stream until it sees it. A2A 1.0 dropped the field (a stream
ends when the server closes it), so a2a-sdk 1.3.0 makes it up when it converts
a 1.0 event for a 0.3 client (``to_compat_task_status_update_event`` in
``a2a/compat/v0_3/conversions.py``): true for terminal states only. A stream
also stops at an interrupted state, ``input-required`` or ``auth-required``
(:class:`arena_core.a2a.request_handler.ArenaRequestHandler` ends it there), and
that last update goes out with ``final: false`` (JSON-RPC) or without
``final`` (HTTP+JSON, where false is the protobuf default): a 0.3 client
waiting for ``final`` waits until the connection drops.

The SDK offers no hook: its 0.3 adapters build their converting request
handler themselves, and the 1.0 event has no field to carry the flag. So
:class:`V03StreamFinal` rewrites the 0.3 stream on its way out: in the
responses to ``message/stream`` (JSON-RPC, read from the request body) and
``POST {rest_prefix}/v1/message:stream`` (HTTP+JSON), a status update in an
interrupted state gets ``final: true``. Everything else passes unchanged,
byte for byte: other events, other methods (``tasks/resubscribe``: a2a-sdk
keeps a local subscription open across turns, so its interrupted updates are
not its last), every 1.0 stream (1.0 events have no ``final``), every response
that is not an event stream.

Cost: a request is looked at only when it is a POST to one of those two
paths; the JSON-RPC body is kept (not copied) until the response starts and
parsed only when the response is an event stream. An event is parsed only when
its bytes name an interrupted state, so a stream costs one byte scan per
chunk. Events are rewritten whole: the stream is cut into events at blank
lines (CRLF, LF or CR line ends, as the SSE format allows), an event split
across body messages is held until its end arrives (sse-starlette sends one
event per message, so nothing waits in practice), and only the ``data``
field of a rewritten event changes, into one ``data:`` line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_SSE_TYPE = b"text/event-stream"
# Cheap test before parsing: the state names of both 0.3 encodings (JSON-RPC; the 0.3 protobuf's JSON).
_INTERRUPTED_BYTES = re.compile(rb"input-required|auth-required|INPUT_REQUIRED|AUTH_REQUIRED")
_JSONRPC_INTERRUPTED = frozenset({"input-required", "auth-required"})
_REST_INTERRUPTED = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
# An SSE line end is CRLF, a lone CR or LF; an event ends at an empty line.
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
_LINE = re.compile(rb"([^\r\n]*)(\r\n|\r|\n)")

Marker = Callable[[Any], bool]
"""Sets ``final: true`` on a parsed event's status update when it is due; says whether it did."""


def _mark_jsonrpc(document: Any) -> bool:
    result = document.get("result") if isinstance(document, dict) else None
    if not isinstance(result, dict) or result.get("kind") != "status-update":
        return False
    return _mark_final(result, _JSONRPC_INTERRUPTED)


def _mark_rest(document: Any) -> bool:
    return _mark_final(
        document.get("statusUpdate") if isinstance(document, dict) else None, _REST_INTERRUPTED
    )


def _mark_final(update: Any, interrupted: frozenset[str]) -> bool:
    """Set ``final: true`` on a status update in one of the ``interrupted`` states (not yet final)."""
    if not isinstance(update, dict) or update.get("final") is True:
        return False
    status = update.get("status")
    if not isinstance(status, dict) or status.get("state") not in interrupted:
        return False
    update["final"] = True
    return True


def _rewrite_event(event: bytes, mark: Marker) -> bytes:
    """``event`` (whole, ending with its empty line) with its data marked final when due."""
    lines = _LINE.findall(event)
    data = [content[5:] for content, _ in lines if content.startswith(b"data:")]
    if not data:
        return event
    payload = b"\n".join(value[1:] if value.startswith(b" ") else value for value in data)
    try:
        document = json.loads(payload)
    except ValueError:
        return event
    if not mark(document):
        return event
    rewritten = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    out: list[bytes] = []
    placed = False
    for content, end in lines:
        if content.startswith(b"data:"):
            if not placed:
                out.append(b"data: " + rewritten + end)
                placed = True
            continue
        out.append(content + end)
    return b"".join(out)


def mark_final(events: bytes, mark: Marker) -> bytes:
    """``events`` (whole SSE events) with each interrupted status update marked final by ``mark``."""
    if not _INTERRUPTED_BYTES.search(events):
        return events
    out: list[bytes] = []
    start = 0
    for end in _EVENT_END.finditer(events):
        event = events[start : end.end()]
        out.append(_rewrite_event(event, mark) if _INTERRUPTED_BYTES.search(event) else event)
        start = end.end()
    out.append(events[start:])  # a last event without its empty line is never dispatched: left as it is
    return b"".join(out)


class _EventStreamMarker:
    """Feeds a response's body messages through :func:`mark_final`, whole events at a time."""

    def __init__(self, mark: Marker) -> None:
        self._mark = mark
        self._pending = b""

    def feed(self, chunk: bytes, *, more: bool) -> bytes:
        data = self._pending + chunk
        if not more:
            self._pending = b""
            return mark_final(data, self._mark)
        # A CR at the end may be the first half of a CRLF: wait for what follows it.
        searched = data[:-1] if data.endswith(b"\r") else data
        cut = 0
        for end in _EVENT_END.finditer(searched):
            cut = end.end()
        self._pending = data[cut:]
        return mark_final(data[:cut], self._mark)


def _media_type(headers: list[tuple[bytes, bytes]]) -> bytes:
    for name, value in headers:
        if name.lower() == b"content-type":
            return value.split(b";")[0].strip().lower()
    return b""


def _has_length(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"content-length" for name, _ in headers)


def _jsonrpc_method(body: bytes) -> str | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    method = document.get("method") if isinstance(document, dict) else None
    return method if isinstance(method, str) else None


class V03StreamFinal:
    """ASGI middleware: ``final: true`` on the interrupted status update ending a 0.3 message stream.

    ``rpc_path`` is the JSON-RPC endpoint (``/``), ``rest_prefix`` the
    HTTP+JSON prefix (``/rest``; the 0.3 stream is ``{rest_prefix}/v1/message:stream``).
    See the module docstring for what is rewritten and what it costs.
    """

    def __init__(self, app: ASGIApp, *, rpc_path: str, rest_prefix: str) -> None:
        self.app = app
        self.rpc_path = rpc_path
        self.rest_stream_path = f"{rest_prefix}/v1/message:stream"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Any scope but http (lifespan in particular) goes straight through.
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == self.rest_stream_path:
            await self._serve(scope, receive, send, _mark_rest, body=None)
        elif path == self.rpc_path:
            await self._serve(scope, receive, send, _mark_jsonrpc, body=[])
        else:
            await self.app(scope, receive, send)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, mark: Marker, *, body: list[bytes] | None
    ) -> None:
        marker: _EventStreamMarker | None = None

        async def keep_body() -> Message:
            message = await receive()
            if body is not None and message["type"] == "http.request":
                body.append(message.get("body", b""))
            return message

        async def watch(message: Message) -> None:
            nonlocal marker
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if (
                    _media_type(headers) == _SSE_TYPE
                    and not _has_length(headers)
                    and (body is None or _jsonrpc_method(b"".join(body)) == "message/stream")
                ):
                    marker = _EventStreamMarker(mark)
                if body is not None:
                    body.clear()
            elif message["type"] == "http.response.body" and marker is not None:
                more = message.get("more_body", False)
                chunk = marker.feed(message.get("body", b""), more=more)
                if not chunk and more:
                    return
                message = {**message, "body": chunk}
            await send(message)

        await self.app(scope, keep_body if body is not None else receive, watch)


__all__ = ["V03StreamFinal", "mark_final"]
