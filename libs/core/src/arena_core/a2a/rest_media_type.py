"""A2A 1.0 HTTP+JSON answers say ``application/a2a+json``, errors included (A2A 1.0 section 11.1).

a2a-sdk 1.3.0 labels a 1.0 HTTP+JSON success ``application/a2a+json`` but every
error ``application/json``, and so do the answers made before the SDK: a path or
method no route serves (404/405), an undeclared body type (415,
:mod:`arena_core.a2a.rest_content_type_guard`), a body that is not text (400,
:class:`arena_core.a2a.sdk_guards.TextBodyGuard`), an oversized or slow body
(413/408/400, :mod:`arena_core.http_limits`), a missing token (401/403,
:mod:`arena_core.http_auth`), an unsupported version (400,
:mod:`arena_core.a2a.version_guard`). :class:`V10RestMediaType` relabels them
all at once: an answer to a request under the HTTP+JSON prefix that is not read
as A2A 0.3 (:func:`arena_core.a2a.protocol_versions.requested_version`: it names
1.0, or a version the agents do not serve, whose VersionNotSupportedError is a
1.0 error) and that says ``application/json`` says ``application/a2a+json``
instead, its parameters kept. The body is the same JSON.

Left alone: requests read as 0.3 (0.3 section 3.2.3 says ``application/json``,
successes and errors alike), streams (``text/event-stream``), the JSON-RPC
endpoint (1.0 section 9.1: JSON-RPC is ``application/json`` in both versions),
the card and every path outside the prefix. Only the response's start message is
looked at; the body passes untouched.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, is_rest_path
from arena_core.a2a.protocol_versions import requested_version

A2A_JSON_MEDIA_TYPE = b"application/a2a+json"
_JSON_MEDIA_TYPE = b"application/json"
_CONTENT_TYPE = b"content-type"


def a2a_json_content_type(value: bytes) -> bytes:
    """``value`` (a ``Content-Type``) with ``application/json`` replaced by ``application/a2a+json``."""
    media_type, separator, parameters = value.partition(b";")
    if media_type.strip().lower() != _JSON_MEDIA_TYPE:
        return value
    return A2A_JSON_MEDIA_TYPE + separator + parameters


class V10RestMediaType(RequestGuard):
    """Labels the JSON answers to A2A 1.0 HTTP+JSON requests ``application/a2a+json`` (see the module
    doc). Sits outermost, so that the answers of every other middleware are relabeled too."""

    def __init__(self, app: ASGIApp, *, rest_prefix: str) -> None:
        super().__init__(app)
        self.rest_prefix = rest_prefix

    def applies(self, scope: Scope) -> bool:
        return is_rest_path(scope["path"], self.rest_prefix) and not requested_version(scope).is_v03

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def relabel(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, a2a_json_content_type(value) if name.lower() == _CONTENT_TYPE else value)
                    for name, value in message.get("headers", ())
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, relabel)


__all__ = ["A2A_JSON_MEDIA_TYPE", "V10RestMediaType", "a2a_json_content_type"]
