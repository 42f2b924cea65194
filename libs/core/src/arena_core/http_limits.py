"""Size limits on what crosses the HTTP boundary, and the ASGI middleware enforcing the body limit.

:class:`RequestLimits` holds the three settings (``ARENA_MAX_REQUEST_BYTES``,
``ARENA_MAX_MESSAGE_PARTS``, ``ARENA_MAX_MESSAGE_TEXT_BYTES``). The body limit is
enforced here, by :class:`BodySizeLimit`, for the agents and the orchestrator;
the message limits by the agents' request handler
(:mod:`arena_core.a2a.message_limits`).

:class:`BodySizeLimit` reads the body of every HTTP request, whatever its
method (a ``GET`` may carry a body too), before the app runs, and answers
itself, with a JSON body of the same shape each time, when the body cannot be
taken in:

* **413** when the body is over ``max_bytes``. A ``Content-Length`` above the
  limit is refused before any byte of the body is read (a client that sent
  ``Expect: 100-continue`` then never sends it); a body without one (chunked)
  is counted while it arrives and refused as soon as it passes the limit. No
  more than ``max_bytes`` are ever held.
* **408** when the whole body has not arrived within ``read_timeout_s``
  (:data:`BODY_READ_TIMEOUT_S`, 30 s, by default), counted from the end of the
  headers: a client trickling its body, or declaring a ``Content-Length`` it
  never completes, cannot hold a request (and its memory) open. Reading stops
  there; the app never runs, so it never waits on that body. (Slow headers
  are before any ASGI app runs: the server's concern, not this one's.)
* **400** when ``Content-Length`` is not 1 to 20 ASCII digits, or when several
  ``Content-Length`` values disagree (the body's size is then unknown).

Every such answer carries ``Connection: close``: the server closes the
connection after it, without reading the rest of the body (but for the drain
below and what the server itself has buffered). A client still
sending when the connection closes may see the close as a reset (ECONNRESET or
EPIPE while it writes) rather than the answer, depending on its HTTP stack; to
let well-behaved clients read the 413, a body refused while it was being
counted is drained first (up to :data:`DRAIN_BYTES`, 64 KiB, more, read and
discarded, for at most :data:`DRAIN_TIMEOUT_S`), so a body that ends within
that margin is taken in whole and the connection closes cleanly. A declared
size over the limit is never drained (nothing is read at all); clients that
may send large bodies should send ``Expect: 100-continue`` or stay within
the limit.

On the JSON-RPC endpoint (``POST`` to ``jsonrpc_path``) the body is a JSON-RPC
error (-32600 Invalid Request, ``id`` null since the request was not read);
elsewhere it is what ``error_body_for`` (or, for compatibility, ``error_body``)
builds: the agents' google.rpc.Status shape by default, the orchestrator's own
error shape there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from arena_core.settings import ArenaSettings

JSONRPC_INVALID_REQUEST = -32600
BODY_READ_TIMEOUT_S = 30.0
"""Default time allowed to read a whole request body (``BodySizeLimit(read_timeout_s=...)``)."""
DRAIN_BYTES = 64 * 1024
"""How much more of a body over the limit is read (and dropped) before the 413, for a clean close."""
DRAIN_TIMEOUT_S = 1.0
"""The longest the drain before a 413 may take (it also stays within the read deadline)."""

_CONTENT_LENGTH = re.compile(rb"[0-9]{1,20}")
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 408: "DEADLINE_EXCEEDED", 413: "INVALID_ARGUMENT"}


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
StatusErrorBody = Callable[[str, int], dict[str, Any]]
"""Builds the JSON body of a refusal (400, 408 or 413) from its reason and HTTP status."""


def status_error_body(message: str, status: int = 413) -> dict[str, Any]:
    """A google.rpc.Status body, the shape of the agents' HTTP+JSON errors.

    ``INVALID_ARGUMENT`` is what Google APIs answer for a payload over their limit
    (413) or a malformed request (400); ``DEADLINE_EXCEEDED`` for a body that did
    not arrive in time (408).
    """
    return {"error": {"code": status, "status": _GOOGLE_STATUS.get(status, "UNKNOWN"), "message": message}}


class InvalidContentLengthError(ValueError):
    """A ``Content-Length`` that is not a size, or several that disagree."""


def replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that returns ``body`` as one message first, then what ``receive`` returns.

    For middlewares that read a body whole before the app does (this module's
    ``BodySizeLimit`` and the guards in :mod:`arena_core.a2a`): ``http.disconnect``
    still reaches the app afterwards.
    """
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class BodySizeLimit:
    """Answers 413, 408 or 400 to a request whose body is too large, too slow or of unknown size.

    Every other request passes unchanged. The body of every request (any
    method) is read (up to the limit, within ``read_timeout_s``) before the app
    runs and replayed to it, so the refusal always comes before the app has
    started answering; messages after the body (``http.disconnect``) come from
    the server as usual, so streaming responses behave as before.
    ``jsonrpc_path`` names the JSON-RPC endpoint (``POST`` there gets a
    JSON-RPC error body). ``error_body_for(reason, status)`` builds the other
    refusals' bodies; when it is not given, ``error_body(reason)`` builds them
    (the default builds a google.rpc.Status with the right code and status).
    ``read_timeout_s`` defaults to :data:`BODY_READ_TIMEOUT_S` as it is when
    the middleware is built.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        jsonrpc_path: str | None = None,
        error_body: ErrorBody = status_error_body,
        error_body_for: StatusErrorBody | None = None,
        read_timeout_s: float | None = None,
        drain_bytes: int = DRAIN_BYTES,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.jsonrpc_path = jsonrpc_path
        self.error_body = error_body
        if error_body_for is None:
            error_body_for = status_error_body if error_body is status_error_body else _legacy(error_body)
        self.error_body_for = error_body_for
        self.read_timeout_s = BODY_READ_TIMEOUT_S if read_timeout_s is None else read_timeout_s
        self.drain_bytes = drain_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            declared = content_length(scope)
        except InvalidContentLengthError as exc:
            await self._answer(scope, receive, send, 400, f"Bad request: {exc}")
            return
        limit = self.max_bytes
        if declared is not None and declared > limit:
            reason = f"Request too large: the request body is {declared} bytes; the limit is {limit} bytes"
            await self._answer(scope, receive, send, 413, reason)
            return
        chunks: list[bytes] = []
        size = 0
        over = ended = False
        with anyio.move_on_after(self.read_timeout_s) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away before sending its body
                chunk: bytes = message.get("body", b"")
                ended = not message.get("more_body", False)
                size += len(chunk)
                if size > limit:
                    over = True
                    break
                chunks.append(chunk)
                if ended:
                    break
        if deadline.cancelled_caught:
            chunks.clear()
            timeout = f"{self.read_timeout_s:g}"
            reason = f"Request timeout: the request body did not arrive within {timeout} seconds"
            await self._answer(scope, receive, send, 408, reason)
            return
        if over:
            chunks.clear()
            if not ended and not await self._drain(receive, deadline.deadline):
                return  # the client went away while its excess was drained
            reason = f"Request too large: the request body is over the limit of {limit} bytes"
            await self._answer(scope, receive, send, 413, reason)
            return
        await self.app(scope, replaying(b"".join(chunks), receive), send)

    async def _drain(self, receive: Receive, deadline: float) -> bool:
        """Reads and drops up to ``drain_bytes`` more of the body; False when the client went away."""
        drained = 0
        timeout = min(DRAIN_TIMEOUT_S, max(0.0, deadline - anyio.current_time()))
        with anyio.move_on_after(timeout):
            while drained < self.drain_bytes:
                message = await receive()
                if message["type"] != "http.request":
                    return False
                drained += len(message.get("body", b""))
                if not message.get("more_body", False):
                    break
        return True

    async def _answer(self, scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
        if self.jsonrpc_path is not None and scope["path"] == self.jsonrpc_path and scope["method"] == "POST":
            error: dict[str, Any] = {"code": JSONRPC_INVALID_REQUEST, "message": reason}
            if status == 413:
                error["data"] = {"limit_bytes": self.max_bytes}
            elif status == 408:
                error["data"] = {"timeout_s": self.read_timeout_s}
            body: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "error": error}
        else:
            body = self.error_body_for(reason, status)
        headers = {"Connection": "close"}
        await JSONResponse(body, status_code=status, headers=headers)(scope, receive, send)


def _legacy(error_body: ErrorBody) -> StatusErrorBody:
    """An ``error_body`` given alone builds every refusal's body (it only ever saw 413s before)."""
    return lambda message, status: error_body(message)


def content_length(scope: Scope) -> int | None:
    """The declared body size, or None when there is no ``Content-Length``.

    Raises :class:`InvalidContentLengthError` for a value that is not 1 to 20 ASCII
    digits (``str.isdigit`` would take ``"²"`` or Arabic-Indic digits, which
    ``int`` then rejects or reads) and for several values that disagree
    (repeated headers or a comma-separated list; identical ones are one size,
    as RFC 9110 section 8.6 allows).
    """
    sizes: set[int] = set()
    for name, value in scope.get("headers", ()):
        if name.lower() != b"content-length":
            continue
        for item in value.split(b","):
            text = item.strip(b" \t")
            if not _CONTENT_LENGTH.fullmatch(text):
                shown = value.decode("latin-1")
                raise InvalidContentLengthError(
                    f"the Content-Length header {shown!r} is not a size (1 to 20 ASCII digits)"
                )
            sizes.add(int(text))
    if len(sizes) > 1:
        listed = ", ".join(str(size) for size in sorted(sizes))
        raise InvalidContentLengthError(f"the request has conflicting Content-Length values ({listed})")
    return sizes.pop() if sizes else None


__all__ = [
    "BODY_READ_TIMEOUT_S",
    "DRAIN_BYTES",
    "DRAIN_TIMEOUT_S",
    "BodySizeLimit",
    "ErrorBody",
    "InvalidContentLengthError",
    "RequestLimits",
    "StatusErrorBody",
    "content_length",
    "replaying",
    "status_error_body",
]
