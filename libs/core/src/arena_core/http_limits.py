"""Size limits on what crosses the HTTP boundary, and the ASGI middleware enforcing the body limit.

:class:`RequestLimits` holds the three settings (``ARENA_MAX_REQUEST_BYTES``,
``ARENA_MAX_MESSAGE_PARTS``, ``ARENA_MAX_MESSAGE_TEXT_BYTES``). The body limit is
enforced here, by :class:`BodySizeLimit`, for the agents and the orchestrator;
the message limits by the agents' request handler
(:mod:`arena_core.a2a.message_limits`).

A body over the limit is answered with HTTP 413 and a JSON body naming the
limit, before it is read in full: a ``Content-Length`` above the limit is
refused before any byte of the body is read; a body without one (chunked) is
counted while it arrives and refused as soon as it passes the limit. No more
than ``max_bytes`` are ever held. The response closes the connection (the
rest of the body is never read). On the JSON-RPC endpoint the 413 body is a
JSON-RPC error (-32600 Invalid Request, ``id`` null since the request was not
read); elsewhere it is what ``error_body`` builds (the agents' google.rpc.Status
shape by default, the orchestrator's own error shape there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from arena_core.settings import ArenaSettings

JSONRPC_INVALID_REQUEST = -32600
BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods never checked: health checks, cards, reports and other reads pass untouched."""


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """How much one request may carry. Defaults are the settings' defaults."""

    max_request_bytes: int = 1_000_000
    max_message_parts: int = 16
    max_message_text_bytes: int = 32_000

    @classmethod
    def from_settings(cls, settings: ArenaSettings) -> RequestLimits:
        """The limits ``ARENA_MAX_REQUEST_BYTES``, ``..._MESSAGE_PARTS``, ``..._MESSAGE_TEXT_BYTES`` set."""
        return cls(
            max_request_bytes=settings.max_request_bytes,
            max_message_parts=settings.max_message_parts,
            max_message_text_bytes=settings.max_message_text_bytes,
        )


ErrorBody = Callable[[str], dict[str, Any]]
"""Builds the JSON body of a 413 from its reason."""


def status_error_body(message: str) -> dict[str, Any]:
    """A google.rpc.Status body, the shape of the agents' HTTP+JSON errors.

    ``INVALID_ARGUMENT`` is what Google APIs answer for a payload over their limit.
    """
    return {"error": {"code": 413, "status": "INVALID_ARGUMENT", "message": message}}


class BodySizeLimit:
    """Answers 413 to a request whose body is larger than ``max_bytes``; other requests pass unchanged.

    The body of a checked request is read (up to the limit) before the app runs
    and replayed to it, so the refusal always comes before the app has started
    answering; messages after the body (``http.disconnect``) come from the
    server as usual, so streaming responses behave as before. ``jsonrpc_path``
    names the JSON-RPC endpoint (``POST`` there gets a JSON-RPC error body).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        jsonrpc_path: str | None = None,
        error_body: ErrorBody = status_error_body,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.jsonrpc_path = jsonrpc_path
        self.error_body = error_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in BODYLESS_METHODS:
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(scope, receive, send, declared)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, None)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, declared: int | None) -> None:
        limit = self.max_bytes
        if declared is None:  # chunked: counted up to the limit, the rest never read
            reason = f"Request too large: the request body is over the limit of {limit} bytes"
        else:
            reason = f"Request too large: the request body is {declared} bytes; the limit is {limit} bytes"
        headers = {"Connection": "close"}
        if self.jsonrpc_path is not None and scope["path"] == self.jsonrpc_path and scope["method"] == "POST":
            error = {
                "code": JSONRPC_INVALID_REQUEST,
                "message": reason,
                "data": {"limit_bytes": self.max_bytes},
            }
            body: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "error": error}
        else:
            body = self.error_body(reason)
        await JSONResponse(body, status_code=413, headers=headers)(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    """The declared body size, or None when absent or not a number (the server rejects those)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


__all__ = ["BODYLESS_METHODS", "BodySizeLimit", "ErrorBody", "RequestLimits", "status_error_body"]
