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

More guards have modules of their own:
:class:`arena_core.a2a.jsonrpc_params_guard.JsonRpcParamsGuard` (invalid 0.3
JSON-RPC params get -32602, not -32600),
:class:`arena_core.a2a.rest_content_type_guard.RestContentTypeGuard` (an
HTTP+JSON body not declared as JSON gets 415, on 1.0 and 0.3 alike),
:class:`arena_core.a2a.version_guard.A2aVersionGuard` (only 1.0 and 0.3 are
served, VersionNotSupportedError otherwise; a JSON-RPC method of the other
version gets -32601, not -32603; ``?A2A-Version=`` is read),
:class:`arena_core.a2a.v03_rest_message_guard.V03RestMessageGuard` (a 0.3
HTTP+JSON file sent as bytes, or a part without content, gets a 400, not 500)
and :class:`arena_core.a2a.rest_media_type.V10RestMediaType` (1.0 HTTP+JSON
errors are ``application/a2a+json`` like its successes). Their order is said
once, in :func:`arena_core.a2a.agent_app.build_agent_app`.

Every guard is an :class:`arena_core.a2a._asgi.RequestGuard`: any scope that is
not ``http`` (the ``lifespan`` scope in particular) goes straight to the app
before anything is looked at, or uvicorn would give up on the app's lifespan.
"""

from __future__ import annotations

import json
import logging

from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError
from google.protobuf.json_format import ParseError
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, is_rest_path, refuse_or_replay

logger = logging.getLogger(__name__)


class TextBodyGuard(RequestGuard):
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
        super().__init__(app)
        self.rpc_path = rpc_path
        self.rest_prefix = rest_prefix

    def applies(self, scope: Scope) -> bool:
        # Only POST bodies are read by the SDK (JSON-RPC and the HTTP+JSON writes); the body of any
        # other method is left to the server, never buffered here.
        path: str = scope["path"]
        return scope["method"] == "POST" and (path == self.rpc_path or is_rest_path(path, self.rest_prefix))

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        rpc = scope["path"] == self.rpc_path
        await refuse_or_replay(self.app, scope, receive, send, lambda body: _not_text(body, rpc=rpc))


def _not_text(body: bytes, *, rpc: bool) -> Response | None:
    """The binding's parse error for a ``body`` that does not decode as text, else None."""
    try:
        body.decode(json.detect_encoding(body) if rpc else "utf-8", "surrogatepass" if rpc else "strict")
    except UnicodeDecodeError as exc:
        reason = f"the body is not {'JSON' if rpc else 'UTF-8'} text ({exc.reason})"
        if rpc:
            error = {"code": -32700, "message": f"Parse error: {reason}"}
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error})
        payload = build_rest_error_payload(ParseError(f"Failed to load JSON: {reason}"))
        return JSONResponse(payload, status_code=payload["error"]["code"])
    return None


class V03RestStreamGuard(RequestGuard):
    """Turns an error raised before a 0.3 HTTP+JSON stream's first event into a JSON error response.

    a2a-sdk 1.3.0's 0.3 REST adapter (``a2a/compat/v0_3/rest_adapter.py``) starts
    the SSE response before it runs the request, so a bad ``message:stream`` body
    or an unknown task on ``tasks/{id}:subscribe`` raises out of the app after
    the headers. For those two endpoints this guard holds the response start
    until the first body bytes; an error before them is answered with the
    SDK's own REST error body and status (400, 404...), like the 1.0 endpoints.
    """

    def __init__(self, app: ASGIApp, *, rest_prefix: str) -> None:
        super().__init__(app)
        self.v03_prefix = f"{rest_prefix}/v1/"

    def applies(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return path.startswith(self.v03_prefix) and (path.endswith(":stream") or path.endswith(":subscribe"))

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
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
