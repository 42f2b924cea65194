"""Which ``Content-Type`` the agents' JSON-RPC endpoint accepts, and what it answers otherwise.

A2A's JSON-RPC binding is ``application/json`` in both versions (1.0 section 9.1,
0.3 section 3.2.1). a2a-sdk 1.3.0 does not look at the request's type: a body sent
as ``text/plain``, as a form or with no ``Content-Type`` at all was parsed as JSON
and served. That matters beyond tidiness: ``text/plain`` and the form types are
what a web page may send to any origin without a CORS preflight, so a page open in
the operator's browser could drive an agent listening on loopback without tokens.

:class:`JsonRpcContentTypeGuard` holds the endpoint to the rule the HTTP+JSON
binding already follows (:mod:`arena_core.a2a.rest_content_type_guard`):

* a ``POST`` that carries a body must say ``application/json`` or another
  ``+json`` type (``application/a2a+json``...), any case; parameters are allowed,
  but a ``charset`` must be UTF-8;
* anything else, a missing ``Content-Type`` included, gets **415 Unsupported
  Media Type** with a JSON-RPC error body, -32600 Invalid Request with ``id``
  null (the request was not read) and a message naming the type received and
  the types accepted, and an ``Accept: application/json`` header, before any
  guard or the SDK parses the body;
* a bodiless ``POST`` is left to the SDK (its -32700 parse error).

The arena's own clients (a2a-sdk's, ``arena`` CLI's, the tests' raw wires) all
send ``application/json``.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard
from arena_core.a2a.rest_content_type_guard import content_type_problem, declares_body
from arena_core.http_limits import JSONRPC_INVALID_REQUEST

JSONRPC_MEDIA_TYPE = "application/json"
"""The media type of A2A's JSON-RPC binding; any other ``+json`` type is accepted too."""


def is_json_media_type(media_type: str) -> bool:
    """Whether ``media_type`` (lowercased, no parameters) is ``application/json`` or a ``+json`` type."""
    kind, slash, subtype = media_type.partition("/")
    return media_type == JSONRPC_MEDIA_TYPE or (
        bool(kind) and bool(slash) and subtype.endswith("+json") and len(subtype) > len("+json")
    )


def jsonrpc_content_type_problem(content_type: str | None) -> str | None:
    """Why a JSON-RPC body with this ``Content-Type`` is refused, or None when it is accepted."""
    return content_type_problem(content_type, accepts=is_json_media_type)


class JsonRpcContentTypeGuard(RequestGuard):
    """Answers 415 to a JSON-RPC request whose body is not declared as JSON (see the module doc).

    Only ``POST`` to ``rpc_path`` with a body (a ``Content-Length`` other than 0, or
    ``Transfer-Encoding``) is checked; the body itself is never read here.
    """

    def __init__(self, app: ASGIApp, *, rpc_path: str) -> None:
        super().__init__(app)
        self.rpc_path = rpc_path

    def applies(self, scope: Scope) -> bool:
        return bool(scope["method"] == "POST" and scope["path"] == self.rpc_path)

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        if not declares_body(headers):
            await self.app(scope, receive, send)
            return
        problem = jsonrpc_content_type_problem(headers.get("content-type"))
        if problem is None:
            await self.app(scope, receive, send)
            return
        message = (
            f"Unsupported Media Type: {problem}; JSON-RPC requests must be sent as "
            f"{JSONRPC_MEDIA_TYPE} (or another +json type), UTF-8"
        )
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": JSONRPC_INVALID_REQUEST, "message": message}}
        response = JSONResponse(body, status_code=415, headers={"Accept": JSONRPC_MEDIA_TYPE})
        await response(scope, receive, send)


__all__ = [
    "JSONRPC_MEDIA_TYPE",
    "JsonRpcContentTypeGuard",
    "is_json_media_type",
    "jsonrpc_content_type_problem",
]
