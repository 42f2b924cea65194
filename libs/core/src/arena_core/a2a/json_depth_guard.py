"""Request bodies nested deeper than :data:`~arena_core.json_depth.MAX_JSON_DEPTH` get a parse error.

a2a-sdk 1.3.0 parses a JSON-RPC body with ``json.loads`` and an HTTP+JSON body with
protobuf's ``json_format``; both recurse per nested array or object, so a body a few
thousand ``[`` deep raised ``RecursionError``, answered as -32603 Internal error
(JSON-RPC) or 500 (HTTP+JSON) with a traceback in the log. No A2A request nests
anywhere near 100 levels (a message's metadata and DataParts are the deepest parts).

:class:`JsonDepthGuard` measures the body first, without parsing it
(:func:`arena_core.json_depth.json_depth_exceeds`), and refuses one nested deeper
than the limit as the parse error it is, in the binding's own shape:

* JSON-RPC (``POST`` to the endpoint): HTTP 200, as the SDK answers every parse
  error, ``{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message":
  "Parse error: nesting deeper than 100"}}`` (``id`` null: the request was not read);
* HTTP+JSON (``POST`` under the prefix, both versions): 400 ``INVALID_ARGUMENT``,
  the SDK's own ``google.rpc.Status`` body for a body it cannot parse.

It sits outside every guard that parses a body (:func:`arena_core.a2a.agent_app.build_agent_app`),
so nothing parses such a body; a deep body is refused whatever else is wrong with
it. A JSON-RPC body that ``json.loads`` would read as UTF-16 or UTF-32 is measured
in UTF-8; one that does not decode at all is left to
:class:`arena_core.a2a.sdk_guards.TextBodyGuard`.
"""

from __future__ import annotations

import json
import logging

from a2a.utils.error_handlers import build_rest_error_payload
from google.protobuf.json_format import ParseError
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, is_rest_path, refuse_or_replay
from arena_core.json_depth import MAX_JSON_DEPTH, json_depth_exceeds

JSONRPC_PARSE_ERROR = -32700

logger = logging.getLogger(__name__)


def _as_utf8(body: bytes) -> bytes | None:
    """``body`` in UTF-8, as ``json.loads`` would decode it; None when it does not decode."""
    encoding = json.detect_encoding(body)
    if encoding == "utf-8":
        return body
    try:
        return body.decode(encoding).encode("utf-8", "surrogatepass")
    except UnicodeError:
        return None


class JsonDepthGuard(RequestGuard):
    """Answers a JSON-RPC or HTTP+JSON body nested deeper than ``max_depth`` with the binding's parse
    error (see the module doc), before anything parses it.

    Only ``POST`` bodies are looked at (the only ones the SDK reads). The body is read whole, so
    this guard must sit inside ``BodySizeLimit``, which bounds it.
    """

    def __init__(
        self, app: ASGIApp, *, rpc_path: str, rest_prefix: str, max_depth: int = MAX_JSON_DEPTH
    ) -> None:
        super().__init__(app)
        self.rpc_path = rpc_path
        self.rest_prefix = rest_prefix
        self.max_depth = max_depth

    def applies(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return scope["method"] == "POST" and (path == self.rpc_path or is_rest_path(path, self.rest_prefix))

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        rpc = scope["path"] == self.rpc_path
        await refuse_or_replay(self.app, scope, receive, send, lambda body: self._too_deep(body, rpc=rpc))

    def _too_deep(self, body: bytes, *, rpc: bool) -> Response | None:
        measured = _as_utf8(body) if rpc else body
        if measured is None or not json_depth_exceeds(measured, self.max_depth):
            return None
        reason = f"nesting deeper than {self.max_depth}"
        logger.debug("request body refused: %s", reason)
        if rpc:
            error = {"code": JSONRPC_PARSE_ERROR, "message": f"Parse error: {reason}"}
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error})
        payload = build_rest_error_payload(ParseError(f"Failed to load JSON: {reason}"))
        return JSONResponse(payload, status_code=payload["error"]["code"])


__all__ = ["JSONRPC_PARSE_ERROR", "JsonDepthGuard"]
