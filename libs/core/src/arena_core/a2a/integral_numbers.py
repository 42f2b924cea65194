"""Whole numbers in the agents' JSON are written as integers (``445``, not ``445.0``).

A2A carries free-form JSON (message and task ``metadata``, ``DataPart`` data) as
``google.protobuf.Struct``, whose numbers are doubles: a2a-sdk writes a token
count of 445 as ``445.0``, on both bindings and both protocol versions. JSON
does not tell the two apart, but typed clients do (Python's ``json`` reads a
float, a schema with ``"type": "integer"`` rejects it), and the A2A
specification's own examples write counts as integers.

:class:`IntegralNumbers` rewrites the JSON and Server-Sent-Events bodies the
agent sends so that every number with an integral value within the range
doubles hold exactly (|n| <= 2**53) is written without a fraction. Values do
not change. A body in which no number ends in ``.0`` is passed through
without being parsed, so most responses cost one byte scan.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_MAX_EXACT = 2**53
# A JSON number that ends in ".0" (possibly "-12.0"), followed by what may follow a value.
_FRACTION_ZERO = re.compile(rb"\d\.0+(?=[\s,}\]])")
_JSON_TYPES = (b"application/json", b"application/a2a+json")
_SSE_TYPE = b"text/event-stream"


def _integral(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) <= _MAX_EXACT else value
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


def integral_json(body: bytes) -> bytes:
    """``body`` with its integral floats written as integers; unchanged when it has none or is not JSON."""
    if not _FRACTION_ZERO.search(body):
        return body
    try:
        document = json.loads(body)
    except ValueError:
        return body
    return json.dumps(_integral(document), ensure_ascii=False, separators=(",", ":")).encode()


def integral_sse(chunk: bytes) -> bytes:
    """An SSE chunk with the JSON of each ``data:`` line passed through :func:`integral_json`."""
    if not _FRACTION_ZERO.search(chunk):
        return chunk
    lines = chunk.split(b"\n")
    for index, line in enumerate(lines):
        if line.startswith(b"data:"):
            payload = line[5:].strip(b" \r")
            ending = b"\r" if line.endswith(b"\r") else b""
            lines[index] = b"data: " + integral_json(payload) + ending
    return b"\n".join(lines)


def _media_type(headers: list[tuple[bytes, bytes]]) -> bytes:
    for name, value in headers:
        if name.lower() == b"content-type":
            return value.split(b";")[0].strip().lower()
    return b""


class IntegralNumbers:
    """ASGI middleware applying :func:`integral_json` / :func:`integral_sse` to response bodies.

    A JSON response is buffered whole (the SDK writes it in one message) and
    its ``Content-Length`` corrected; an event stream is rewritten event by
    event as it goes (the SDK writes one event per body message). Other
    responses, and scopes other than HTTP, pass straight through.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        kind = b""
        chunks: list[bytes] = []

        async def rewrite(message: Message) -> None:
            nonlocal start, kind
            if message["type"] == "http.response.start":
                kind = _media_type(message.get("headers", []))
                if kind in _JSON_TYPES:
                    start = message  # held until the body is known, for its Content-Length
                    return
                await send(message)
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            if kind == _SSE_TYPE:
                await send({**message, "body": integral_sse(message.get("body", b""))})
                return
            if start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = integral_json(b"".join(chunks))
            headers = MutableHeaders(raw=list(start.get("headers", [])))
            headers["content-length"] = str(len(body))
            await send({**start, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body, "more_body": False})

        await self.app(scope, receive, rewrite)


__all__ = ["IntegralNumbers", "integral_json", "integral_sse"]
