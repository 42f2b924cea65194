"""The push checks' webhook: a small HTTP/1.1 server on loopback that records what it is sent.

A push check gives the target a webhook URL on the probe's own machine
(``http://127.0.0.1:PORT/<random path>``, one fresh path per use) and waits for the agent
to call it. :class:`WebhookListener` answers every request ``200 {}`` and keeps it (method,
path, lower-cased headers, the first :data:`KEPT_BODY_BYTES` of the body), the last
:data:`MAX_RECORDED` requests only.

Whoever calls it is untrusted (the target, or anything else on the machine), so it is
bounded like any server the arena runs: a request's head and body must arrive within
``read_timeout_s`` (5 s), a head is at most :data:`MAX_HEAD_BYTES`, a body at most
:data:`MAX_BODY_BYTES` (Content-Length or chunked), at most :data:`MAX_CONNECTIONS` at once;
anything else gets a 4xx (or the connection closed) and is not recorded. One request per
connection (``Connection: close``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass

HOST = "127.0.0.1"
MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 1024 * 1024
KEPT_BODY_BYTES = 64 * 1024
MAX_RECORDED = 200
MAX_CONNECTIONS = 64
_REASONS = {200: "OK", 400: "Bad Request", 408: "Request Timeout", 413: "Content Too Large", 431: "Too Large"}


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """One request the listener received."""

    method: str
    path: str
    """The request target's path, without the query."""
    query: str
    headers: dict[str, str]
    """Names lower-cased; a repeated header's values joined with ``, ``."""
    body: bytes
    """The first :data:`KEPT_BODY_BYTES` of the body."""
    received_at: float
    """``time.monotonic()`` when it was recorded."""

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class _BadRequestError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class WebhookListener:
    """An HTTP/1.1 server on ``127.0.0.1`` (an ephemeral port) recording the requests it gets.

    ``await start()`` before use, ``await stop()`` after (the runner does both); ``url()``
    gives a fresh webhook URL, ``wait_for(path)`` the requests sent to it.
    """

    def __init__(self, *, read_timeout_s: float = 5.0) -> None:
        self.read_timeout_s = read_timeout_s
        self.requests: deque[WebhookRequest] = deque(maxlen=MAX_RECORDED)
        self._server: asyncio.Server | None = None
        self._port = 0
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._arrived = asyncio.Condition()

    @property
    def port(self) -> int:
        if self._server is None:
            msg = "the webhook listener is not started"
            raise RuntimeError(msg)
        return self._port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, HOST, 0, limit=MAX_HEAD_BYTES)
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and end every open connection (within a second); calling it again is harmless."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._connections.values()):
            writer.close()  # a handler waiting for bytes sees the end of the stream and returns
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=1.0)
        for task in list(self._connections):
            task.cancel()
        await server.wait_closed()

    def url(self, path: str | None = None) -> str:
        """``http://127.0.0.1:PORT/<path>``; a fresh random path when none is given."""
        chosen = (path or f"hook-{secrets.token_hex(12)}").lstrip("/")
        return f"http://{HOST}:{self.port}/{chosen}"

    def received(self, path_or_url: str) -> list[WebhookRequest]:
        """The recorded requests to ``path_or_url`` (a path, or a URL from :meth:`url`), oldest first."""
        wanted = _path_of(path_or_url)
        return [request for request in self.requests if request.path == wanted]

    async def wait_for(self, path_or_url: str, timeout_s: float) -> list[WebhookRequest]:
        """The requests to ``path_or_url``, waiting up to ``timeout_s`` for the first; [] if none came."""
        async with self._arrived:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._arrived.wait_for(lambda: bool(self.received(path_or_url))), max(0.0, timeout_s)
                )
        return self.received(path_or_url)

    # -- serving ----------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or self._server is None or len(self._connections) >= MAX_CONNECTIONS:
            writer.close()
            return
        self._connections[task] = writer
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Only stop() cancels a handler (one that did not end when its connection was
            # closed); ending quietly keeps asyncio from reporting the cancel as an error.
            pass
        finally:
            del self._connections[task]
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(self.read_timeout_s):
                request = await _read_request(reader)
        except TimeoutError:
            await _answer(writer, 408)
            return
        except _BadRequestError as bad:
            await _answer(writer, bad.status)
            return
        if request is None:  # closed before sending anything
            return
        self.requests.append(request)
        async with self._arrived:
            self._arrived.notify_all()
        await _answer(writer, 200)


async def _read_request(reader: asyncio.StreamReader) -> WebhookRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as too_long:
        raise _BadRequestError(431) from too_long
    except asyncio.IncompleteReadError as cut:
        if not cut.partial.strip():
            return None
        raise _BadRequestError(400) from cut
    if len(head) > MAX_HEAD_BYTES:
        raise _BadRequestError(431)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith("HTTP/1."):
        raise _BadRequestError(400)
    method, target = parts[0].upper(), parts[1]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip() or " " in name:
            raise _BadRequestError(400)
        key = name.lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    body = await _read_body(reader, headers)
    split = urllib.parse.urlsplit(target)
    return WebhookRequest(
        method, split.path or "/", split.query, headers, body[:KEPT_BODY_BYTES], time.monotonic()
    )


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return await _read_chunked(reader)
    length_text = headers.get("content-length")
    if length_text is None:
        return b""
    if not length_text.isdigit():
        raise _BadRequestError(400)
    length = int(length_text)
    if length > MAX_BODY_BYTES:
        raise _BadRequestError(413)
    return await reader.readexactly(length)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        try:
            line = await reader.readuntil(b"\r\n")
        except asyncio.LimitOverrunError as too_long:
            raise _BadRequestError(400) from too_long
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as bad:
            raise _BadRequestError(400) from bad
        if size < 0 or len(body) + size > MAX_BODY_BYTES:
            raise _BadRequestError(413)
        if size == 0:
            break
        chunk = await reader.readexactly(size + 2)
        if chunk[-2:] != b"\r\n":
            raise _BadRequestError(400)
        body += chunk[:-2]
    trailer_bytes = 0
    while True:  # trailers, up to the empty line
        try:
            line = await reader.readuntil(b"\r\n")
        except asyncio.LimitOverrunError as too_long:
            raise _BadRequestError(400) from too_long
        trailer_bytes += len(line)
        if line == b"\r\n":
            return bytes(body)
        if trailer_bytes > MAX_HEAD_BYTES:
            raise _BadRequestError(431)


async def _answer(writer: asyncio.StreamWriter, status: int) -> None:
    if writer.is_closing():
        return
    body = b"{}" if status == 200 else b""
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(ConnectionError):
        writer.write(head.encode("ascii") + body)
        await writer.drain()


def _path_of(path_or_url: str) -> str:
    if "://" in path_or_url:
        return urllib.parse.urlsplit(path_or_url).path or "/"
    path = urllib.parse.urlsplit(path_or_url).path
    return path if path.startswith("/") else f"/{path}"


__all__ = [
    "KEPT_BODY_BYTES",
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "MAX_RECORDED",
    "WebhookListener",
    "WebhookRequest",
]
