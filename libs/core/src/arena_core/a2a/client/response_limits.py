"""Cap the bytes the attacker reads from a target in one HTTP response.

A target is whatever agent the attacker is asked to red-team, so it may be hostile: an
endless body, a multi-gigabyte JSON reply, an event stream that never ends or a tiny gzip
bomb would otherwise be read into the attacker's memory in full (httpx and the a2a-sdk read
whole bodies). :func:`limit_response` wraps a response's stream, before anything of its
body is read, in a :class:`LimitedStream` that counts what comes out of it and raises
:class:`ResponseTooLargeError` as soon as the count passes the limit; a response whose
``Content-Length`` is already above the limit is refused before its body is read. The
whole body of one response counts, an event stream's included (every event of one
request).

Compression: bytes are counted after decoding, so a small compressed body cannot expand
past the limit. gzip and deflate are decoded here, never by more than what is left of the
limit at a time (httpx's own decoders have no bound); targets are asked for those only
(:data:`ACCEPT_ENCODING`), and a response in any other content coding is refused with a
:class:`ResponseRefusedError`.

The limit is ``ARENA_TARGET_MAX_RESPONSE_BYTES`` (``settings.target_max_response_bytes``);
the client (:class:`~arena_core.a2a.client.target_http_client.TargetHttpClient`) applies it
to every request of a target. The errors here are signals from inside httpx's reading, on
purpose neither httpx errors (the a2a-sdk would call them network failures, and a network
failure is worth a retry) nor arena errors: the client turns them into
:class:`~arena_core.errors.TargetProtocolError` (kind ``target_protocol_error``, which the
orchestrator does not retry) with the same message, digging them out of the SDK's wrapping
with :func:`refused_response_in`.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import httpx

from arena_core.a2a.egress_guard import display_origin
from arena_core.exception_chain import find_in_chain
from arena_core.settings import ArenaSettings

DEFAULT_MAX_RESPONSE_BYTES: int = ArenaSettings.model_fields["target_max_response_bytes"].default
"""The default of ``ARENA_TARGET_MAX_RESPONSE_BYTES`` (defined once, in the settings)."""
SETTING_NAME = "ARENA_TARGET_MAX_RESPONSE_BYTES"
ACCEPT_ENCODING = "gzip, deflate"
"""The content codings asked of targets: the ones :class:`LimitedStream` decodes itself."""
_DECODED = frozenset({"gzip", "x-gzip", "deflate"})


class ResponseRefusedError(Exception):
    """The attacker stopped reading a target's response (too large, or in a coding it won't decode).

    ``str(error)`` (also ``error.message``) says what the target did and, when too large, which
    setting to change.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ResponseTooLargeError(ResponseRefusedError):
    """A target's response is larger than the limit (announced, or counted while reading)."""

    def __init__(self, origin: str, limit: int, *, announced: int | None = None) -> None:
        if announced is None:
            message = f"target {origin} sent more than {limit} bytes in one response ({SETTING_NAME})"
        else:
            message = (
                f"target {origin} announced a response of {announced} bytes, more than the {limit} "
                f"bytes the attacker reads in one response ({SETTING_NAME})"
            )
        super().__init__(message)
        self.origin = origin
        self.limit = limit


class _Inflater:
    """A gzip or deflate decoder whose every call returns at most ``max_out`` bytes."""

    def __init__(self, coding: str) -> None:
        self._deflate = coding == "deflate"
        self._first = True
        # deflate is meant to be zlib-wrapped; some servers send it raw (httpx accepts both).
        self._obj = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)

    def decode(self, data: bytes, max_out: int) -> bytes:
        # max_out >= 1 (0 would mean "unbounded" to zlib).
        try:
            out = self._obj.decompress(data, max_out)
        except zlib.error:
            if not (self._deflate and self._first):
                raise
            self._obj = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._obj.decompress(data, max_out)
        self._first = False
        return out

    def flush(self, max_out: int) -> bytes:
        return self._obj.flush(max_out)


class LimitedStream(httpx.AsyncByteStream):
    """``inner`` decoded (``coding``: ``gzip``, ``deflate`` or None) and counted against ``limit``.

    Raises :class:`ResponseTooLargeError` once more than ``limit`` bytes came out (or came in).
    """

    def __init__(self, inner: httpx.AsyncByteStream, *, limit: int, origin: str, coding: str | None) -> None:
        self._inner = inner
        self.limit = limit
        self._origin = origin
        self._inflater = _Inflater(coding) if coding is not None else None
        self.received = 0
        """Bytes read from ``inner`` so far."""
        self.delivered = 0
        """Bytes handed on so far (after decoding)."""

    def _count(self, chunk: bytes) -> bytes:
        self.delivered += len(chunk)
        if self.delivered > self.limit:
            raise ResponseTooLargeError(self._origin, self.limit)
        return chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for raw in self._inner:
            self.received += len(raw)
            if self.received > self.limit:
                raise ResponseTooLargeError(self._origin, self.limit)
            if self._inflater is None:
                chunk = raw
            else:
                try:
                    chunk = self._inflater.decode(raw, self.limit - self.delivered + 1)
                except zlib.error as exc:
                    raise httpx.DecodingError(f"target {self._origin} sent a corrupt body: {exc}") from exc
            if chunk:
                yield self._count(chunk)
        if self._inflater is not None:
            tail = self._inflater.flush(self.limit - self.delivered + 1)
            if tail:
                yield self._count(tail)

    async def aclose(self) -> None:
        await self._inner.aclose()


def limit_response(response: httpx.Response, limit: int, *, url: httpx.URL | str | None = None) -> None:
    """Make reading ``response``'s body fail past ``limit`` bytes; refuse it now when it says it is larger.

    Call before anything of the body is read; ``url`` (by default the response's request's) is
    shown in errors as its origin only. On error the caller closes the response. A response
    already limited keeps its limit, lowered to ``limit`` when that is smaller.
    """
    stream = response.stream
    if isinstance(stream, LimitedStream):
        # Lowered in place: a second stream around it would only count what the first decoded.
        stream.limit = min(stream.limit, limit)
        return
    origin = display_origin(url if url is not None else response.request.url)
    if response.is_stream_consumed:
        # Read already (a response made from bytes, e.g. by a mock transport): only checked.
        if len(response.content) > limit:
            raise ResponseTooLargeError(origin, limit)
        return
    if not isinstance(stream, httpx.AsyncByteStream):
        raise TypeError("limit_response needs a response of an async client")
    announced = _content_length(response)
    if announced is not None and announced > limit:
        raise ResponseTooLargeError(origin, limit, announced=announced)
    codings = [
        value.strip().lower()
        for value in response.headers.get_list("content-encoding", split_commas=True)
        if value.strip() and value.strip().lower() != "identity"
    ]
    coding: str | None = None
    if codings:
        if len(codings) > 1 or codings[0] not in _DECODED:
            raise ResponseRefusedError(
                f"target {origin} sent a response in content coding {', '.join(codings)}, which the "
                f"attacker does not read (it asks for {ACCEPT_ENCODING} or none)"
            )
        coding = "deflate" if codings[0] == "deflate" else "gzip"
        # Decoded here, under the limit: httpx must not decode it again.
        del response.headers["content-encoding"]
        response.headers.pop("content-length", None)
    response.stream = LimitedStream(stream, limit=limit, origin=origin, coding=coding)


def _content_length(response: httpx.Response) -> int | None:
    value = response.headers.get("content-length")
    if value is None:
        return None
    try:
        return int(value.strip())
    except ValueError:
        return None


def refused_response_in(exc: BaseException) -> ResponseRefusedError | None:
    """The ResponseRefusedError behind ``exc``, or None (the a2a-sdk may have wrapped it)."""
    return find_in_chain(exc, ResponseRefusedError)


__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "SETTING_NAME",
    "LimitedStream",
    "ResponseRefusedError",
    "ResponseTooLargeError",
    "limit_response",
    "refused_response_in",
]
