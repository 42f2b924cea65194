"""Which ``Content-Type`` the agents' HTTP+JSON binding accepts, and what it answers otherwise.

The A2A 1.0 specification says ``application/json`` for HTTP+JSON requests and
responses (section 11.1) while its examples (section 6) send ``application/a2a+json``,
the media type it registers (section 14.1); the A2A 0.3 specification says
``application/json``. a2a-sdk 1.3.0 does not look at the request's type at all:
``text/plain``, a form type or none at all were parsed as JSON, on both versions.

:class:`RestContentTypeGuard` makes both versions (1.0 under ``/rest/...``, 0.3
under ``/rest/v1/...``) answer the same:

* a request that carries a body must say ``application/json`` or
  ``application/a2a+json`` (any case; parameters allowed, but a ``charset`` must
  be UTF-8, the only encoding JSON has in A2A);
* anything else, a missing ``Content-Type`` included, gets **415 Unsupported
  Media Type** with a ``google.rpc.Status`` body, the shape of the binding's
  other errors, naming the type received and the two accepted, and an ``Accept``
  header listing them (RFC 9110 section 15.5.16), before the SDK reads the body;
* a request without a body (``GET``, a bodiless ``POST ...:cancel``) is not
  checked.

What the agents send: every 1.0 answer, success or error (this guard's 415
included), is ``application/a2a+json`` (the SDK labels 1.0 successes so;
:class:`arena_core.a2a.rest_media_type.V10RestMediaType` labels the errors), every
0.3 answer ``application/json``, streams ``text/event-stream``; errors are
``google.rpc.Status`` bodies. Clients should accept both JSON types. The JSON-RPC
endpoint has a guard of its own, with the same rule and a JSON-RPC error
(:mod:`arena_core.a2a.jsonrpc_content_type_guard`).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, is_rest_path

ACCEPTED_MEDIA_TYPES = ("application/json", "application/a2a+json")
"""The request media types the HTTP+JSON binding accepts, A2A 1.0 and 0.3 alike."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_UTF8 = frozenset({"utf-8", "utf8"})


def _rest_media_type(media_type: str) -> bool:
    return media_type in ACCEPTED_MEDIA_TYPES


def content_type_problem(
    content_type: str | None, *, accepts: Callable[[str], bool] = _rest_media_type
) -> str | None:
    """Why a body with this ``Content-Type`` is refused, or None when it is accepted.

    ``accepts`` says which media types (lowercased, without parameters) are; by default
    :data:`ACCEPTED_MEDIA_TYPES`. A ``charset`` parameter must name UTF-8 either way.
    """
    if content_type is None or not content_type.strip():
        return "the request has a body but no Content-Type"
    media_type, *parameters = (item.strip() for item in content_type.split(";"))
    if not accepts(media_type.lower()):
        return f"Content-Type {media_type!r} is not supported"
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in _UTF8:
            return f"charset {value.strip()!r} is not supported (JSON is UTF-8)"
    return None


def declares_body(headers: Headers) -> bool:
    """Whether a request says it carries a body (a ``Content-Length`` other than 0, or
    ``Transfer-Encoding``)."""
    length = headers.get("content-length")
    if length is not None:
        return length.strip() != "0"
    return "transfer-encoding" in headers


class RestContentTypeGuard(RequestGuard):
    """Answers 415 to an HTTP+JSON request whose body is not declared as JSON (see the module doc).

    Only http requests under ``rest_prefix`` with a body-carrying method (POST, PUT,
    PATCH) and a body (a ``Content-Length`` other than 0, or ``Transfer-Encoding``)
    are checked; the body itself is never read here.
    """

    def __init__(self, app: ASGIApp, *, rest_prefix: str) -> None:
        super().__init__(app)
        self.rest_prefix = rest_prefix

    def applies(self, scope: Scope) -> bool:
        return scope["method"] in _BODY_METHODS and is_rest_path(scope["path"], self.rest_prefix)

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        problem = content_type_problem(headers.get("content-type")) if declares_body(headers) else None
        if problem is None:
            await self.app(scope, receive, send)
            return
        accepted = " or ".join(ACCEPTED_MEDIA_TYPES)
        body = {
            "error": {
                "code": 415,
                "status": "INVALID_ARGUMENT",
                "message": f"Unsupported Media Type: {problem}; send {accepted} (UTF-8)",
            }
        }
        response = JSONResponse(body, status_code=415, headers={"Accept": ", ".join(ACCEPTED_MEDIA_TYPES)})
        await response(scope, receive, send)


__all__ = ["ACCEPTED_MEDIA_TYPES", "RestContentTypeGuard", "content_type_problem", "declares_body"]
