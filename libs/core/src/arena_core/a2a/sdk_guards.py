"""ASGI middlewares that keep a2a-sdk 1.3.0's answers to malformed requests within the spec.

Found by the fuzz suite (tests/fuzz); each guard names the SDK behaviour it
corrects and does nothing for requests the SDK handles well:

* :class:`TextBodyGuard`: a body that is not text gets -32700 Parse error on
  JSON-RPC (the SDK answers -32603 Internal error) and 400 on HTTP+JSON (the
  SDK answers 500);
* :class:`V03RestStreamGuard`: a 0.3 HTTP+JSON stream that fails before its
  first event (invalid message, unknown task) gets the JSON error response the
  non-streaming endpoints give (the SDK raises out of the ASGI app after the
  200 headers, so the server logs a crash and the client sees a cut stream).
"""

from __future__ import annotations

import json
import logging

from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)


class TextBodyGuard:
    """Answers a request body that is not text with the binding's parse error, before the SDK reads it.

    a2a-sdk 1.3.0 decodes bodies without catching ``UnicodeDecodeError``: its
    JSON-RPC dispatcher catches only ``JSONDecodeError`` around ``request.json()``,
    so bytes that are not UTF-8 (nor the UTF-16/32 ``json.loads`` detects), e.g.
    ``b"\\x80"``, get -32603 Internal error instead of -32700 Parse error; its
    HTTP+JSON handlers (1.0 and 0.3) hand the bytes to protobuf's
    ``json_format.Parse``, which decodes them as UTF-8, and answer 500. This
    guard decodes the body the way each binding does and, when that fails,
    answers what the SDK answers for any other unparsable body: -32700 on
    JSON-RPC, 400 ``INVALID_ARGUMENT`` on HTTP+JSON. Every other body reaches
    the SDK unchanged (the SDK reads whole bodies anyway). Only ``POST``
    requests are looked at, the only ones whose body the SDK reads; the body
    is buffered whole, so this guard must sit inside ``BodySizeLimit``, which
    bounds it.
    """

    def __init__(self, app: ASGIApp, *, rpc_path: str, rest_prefix: str) -> None:
        self.app = app
        self.rpc_path = rpc_path
        self.rest_prefix = f"{rest_prefix}/"

    def _is_rest(self, path: str) -> bool:
        # The SDK serves the 1.0 HTTP+JSON routes under /{tenant} too: /<tenant>/rest/...
        tenant_path = "/" + path.lstrip("/").partition("/")[2]
        return path.startswith(self.rest_prefix) or tenant_path.startswith(self.rest_prefix)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        rpc = path == self.rpc_path
        # Only POST bodies are read by the SDK (JSON-RPC and the HTTP+JSON writes); the body of any
        # other method is left to the server, never buffered here.
        if scope["method"] != "POST" or not (rpc or self._is_rest(path)):
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body.decode(json.detect_encoding(body) if rpc else "utf-8", "surrogatepass" if rpc else "strict")
        except UnicodeDecodeError as exc:
            reason = f"the body is not {'JSON' if rpc else 'UTF-8'} text ({exc.reason})"
            if rpc:
                error = {"code": -32700, "message": f"Parse error: {reason}"}
                response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error})
            else:
                payload = build_rest_error_payload(ParseError(f"Failed to load JSON: {reason}"))
                response = JSONResponse(payload, status_code=payload["error"]["code"])
            await response(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class V03RestStreamGuard:
    """Turns an error raised before a 0.3 HTTP+JSON stream's first event into a JSON error response.

    a2a-sdk 1.3.0's 0.3 REST adapter (``a2a/compat/v0_3/rest_adapter.py``) starts
    the SSE response before it runs the request, so a bad ``message:stream`` body
    or an unknown task on ``tasks/{id}:subscribe`` raises out of the app after
    the headers. For those two endpoints this guard holds the response start
    until the first body bytes; an error before them is answered with the
    SDK's own REST error body and status (400, 404...), like the 1.0 endpoints.
    """

    def __init__(self, app: ASGIApp, *, rest_prefix: str) -> None:
        self.app = app
        self.v03_prefix = f"{rest_prefix}/v1/"

    def _guarded(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return (
            scope["type"] == "http"
            and path.startswith(self.v03_prefix)
            and (path.endswith(":stream") or path.endswith(":subscribe"))
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._guarded(scope):
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        streaming = False

        async def hold_start(message: Message) -> None:
            nonlocal held, streaming
            if not streaming and message["type"] == "http.response.start":
                held = message
                return
            if not streaming and held is not None:
                streaming = True
                await send(held)
            await send(message)

        try:
            await self.app(scope, receive, hold_start)
        except Exception as exc:
            if streaming:
                raise
            error = _single(exc)
            if isinstance(error, A2AError):
                logger.warning("0.3 stream refused before its first event: %s", error)
            else:
                logger.exception("0.3 stream failed before its first event")
            payload = build_rest_error_payload(error)
            await JSONResponse(payload, status_code=payload["error"]["code"])(scope, receive, send)
            return
        if held is not None and not streaming:
            await send(held)  # a response without a body message (never sent by the SDK; kept correct)


def _single(exc: Exception) -> Exception:
    """The one error inside (nested) single-member exception groups, else ``exc``."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


__all__ = ["TextBodyGuard", "V03RestStreamGuard"]
