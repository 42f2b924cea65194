"""The response size limit (arena_core/a2a/client/response_limits.py) and the bounds on what is recorded.

Responses come from an httpx.MockTransport standing in for the network; the real sockets are
in tests/integration/test_target_response_limits.py.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import httpx
import pytest
from a2a.client import A2AClientError

from arena_core.a2a.client.response_limits import (
    ACCEPT_ENCODING,
    LimitedStream,
    ResponseRefusedError,
    ResponseTooLargeError,
    limit_response,
    refused_response_in,
)
from arena_core.errors import ArenaError
from arena_core.judges.verdict import JudgeVerdict
from arena_core.match_models import (
    MAX_ERROR_CHARS,
    MAX_RECORDED_REPLY_BYTES,
    MatchResult,
    TurnRecord,
    truncate_chars,
    truncate_utf8,
)

URL = "http://target.example:8080/rpc?token=t0ken"
ORIGIN = "http://target.example:8080"


async def fetch(
    respond: Callable[[httpx.Request], httpx.Response], limit: int
) -> tuple[httpx.Response, bytes]:
    """GET ``URL`` from a transport answering with ``respond``, reading the body under ``limit``."""
    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        response = await client.send(client.build_request("GET", URL), stream=True)
        try:
            limit_response(response, limit)
            return response, await response.aread()
        finally:
            await response.aclose()


def chunks(*parts: bytes) -> AsyncIterator[bytes]:
    async def stream() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    return stream()


def never_read() -> AsyncIterator[bytes]:
    async def stream() -> AsyncIterator[bytes]:
        raise AssertionError("the body was read")
        yield b""  # pragma: no cover

    return stream()


# --- the limit --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_body_up_to_the_limit_is_read_whole() -> None:
    _, body = await fetch(lambda _: httpx.Response(200, content=chunks(b"a" * 600, b"b" * 400)), 1000)
    assert body == b"a" * 600 + b"b" * 400


@pytest.mark.asyncio
async def test_one_byte_over_the_limit_fails_as_it_is_read_and_says_what_to_change() -> None:
    with pytest.raises(ResponseTooLargeError) as caught:
        await fetch(lambda _: httpx.Response(200, content=chunks(b"a" * 600, b"b" * 401)), 1000)
    error = caught.value
    assert str(error) == (
        f"target {ORIGIN} sent more than 1000 bytes in one response (ARENA_TARGET_MAX_RESPONSE_BYTES)"
    )
    assert "t0ken" not in str(error)  # the origin only, never the query
    assert error.message == str(error)
    # Neither an httpx error (the a2a-sdk would report a network failure) nor an arena error
    # (the target client turns it into a TargetProtocolError).
    assert not isinstance(error, (httpx.HTTPError, ArenaError))
    assert error.limit == 1000


@pytest.mark.asyncio
async def test_a_content_length_over_the_limit_is_refused_before_the_body_is_read() -> None:
    def respond(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": "5000"}, content=never_read())

    with pytest.raises(ResponseTooLargeError) as caught:
        await fetch(respond, 1000)
    assert str(caught.value) == (
        f"target {ORIGIN} announced a response of 5000 bytes, more than the 1000 bytes the attacker "
        "reads in one response (ARENA_TARGET_MAX_RESPONSE_BYTES)"
    )


@pytest.mark.asyncio
async def test_a_content_length_that_lies_low_does_not_help() -> None:
    def respond(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Length": "10"}, content=chunks(b"x" * 2000))

    with pytest.raises(ResponseTooLargeError):
        await fetch(respond, 1000)


@pytest.mark.asyncio
async def test_a_body_read_already_is_checked_too() -> None:
    # httpx reads a response made from bytes at once (mock transports do that).
    _, body = await fetch(lambda _: httpx.Response(200, content=b"x" * 1000), 1000)
    assert body == b"x" * 1000
    with pytest.raises(ResponseTooLargeError, match="more than 999 bytes"):
        await fetch(lambda _: httpx.Response(200, content=b"x" * 1000), 999)


@pytest.mark.asyncio
async def test_a_limit_already_set_is_lowered_in_place_never_raised() -> None:
    async with httpx.AsyncClient(
        transport=httpx.MockTransport(lambda _: httpx.Response(200, content=chunks(b"x" * 300)))
    ) as client:
        response = await client.send(client.build_request("GET", URL), stream=True)
        limit_response(response, 1000)
        stream = response.stream
        limit_response(response, 200)
        limit_response(response, 5000)
        assert response.stream is stream
        assert isinstance(stream, LimitedStream) and stream.limit == 200
        with pytest.raises(ResponseTooLargeError, match="more than 200 bytes"):
            await response.aread()
        await response.aclose()


# --- content codings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
        ("identity", lambda data: data),
    ],
)
@pytest.mark.asyncio
async def test_compressed_bodies_under_the_limit_are_decoded(
    coding: str, encode: Callable[[bytes], bytes]
) -> None:
    text = b'{"hello": "world"}' * 40

    def respond(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Encoding": coding}, content=chunks(encode(text)))

    response, body = await fetch(respond, 1000)
    assert body == text
    assert "content-encoding" not in response.headers or coding == "identity"


@pytest.mark.asyncio
async def test_decoded_bytes_count_so_a_small_bomb_cannot_expand() -> None:
    bomb = gzip.compress(b"\0" * 50_000_000)
    assert len(bomb) < 100_000
    seen: list[LimitedStream] = []

    def respond(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Encoding": "gzip"}, content=chunks(bomb))

    async with httpx.AsyncClient(transport=httpx.MockTransport(respond)) as client:
        response = await client.send(client.build_request("GET", URL), stream=True)
        limit_response(response, 100_000)
        assert isinstance(response.stream, LimitedStream)
        seen.append(response.stream)
        with pytest.raises(ResponseTooLargeError, match="more than 100000 bytes"):
            await response.aread()
        await response.aclose()
    # zlib was never asked for more than one byte past what the limit had left.
    assert seen[0].delivered <= 100_001


@pytest.mark.asyncio
@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, gzip", "compress"])
async def test_other_content_codings_are_refused(coding: str) -> None:
    def respond(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Encoding": coding}, content=never_read())

    with pytest.raises(ResponseRefusedError) as caught:
        await fetch(respond, 1000)
    assert not isinstance(caught.value, ResponseTooLargeError)
    assert str(caught.value) == (
        f"target {ORIGIN} sent a response in content coding {coding}, which the attacker does not read "
        f"(it asks for {ACCEPT_ENCODING} or none)"
    )


@pytest.mark.asyncio
async def test_a_corrupt_gzip_body_is_a_decoding_error() -> None:
    def respond(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Encoding": "gzip"}, content=chunks(b"not gzip at all"))

    with pytest.raises(httpx.DecodingError):
        await fetch(respond, 1000)


# --- finding the error behind a library's wrapping ----------------------------------------------


def test_a_refused_response_is_found_behind_wrappers() -> None:
    refused = ResponseTooLargeError(ORIGIN, 10)
    wrapped = A2AClientError("Network communication error")
    wrapped.__cause__ = refused
    outer = RuntimeError("outer")
    outer.__context__ = wrapped
    assert refused_response_in(outer) is refused
    assert refused_response_in(BaseExceptionGroup("group", [ValueError(), outer])) is refused
    assert refused_response_in(A2AClientError("something else")) is None


# --- what is recorded ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["a" * 5000, "é" * 3000, "€x" * 2000, "🙂" * 1500, "ok\ud800" * 1000])
@pytest.mark.parametrize("limit", [1, 30, 41, 1000, 4093])
def test_utf8_truncation_stays_under_the_limit_on_a_character_boundary(text: str, limit: int) -> None:
    cut = truncate_utf8(text, limit)
    data = cut.encode("utf-8", "surrogatepass")
    assert len(data) <= limit
    assert truncate_utf8(cut, limit) == cut  # bounded text passes unchanged
    kept = cut.split("\n[... truncated:")[0]
    assert text.startswith(kept)
    if limit >= 1000:
        omitted = len(text.encode("utf-8", "surrogatepass")) - len(kept.encode("utf-8", "surrogatepass"))
        assert cut.endswith(f"\n[... truncated: {omitted} more bytes]")


def test_short_texts_are_left_alone() -> None:
    assert truncate_utf8("short", 10) == "short"
    assert truncate_chars("short", 10) == "short"
    assert truncate_chars("x" * 100, 60) == "x" * 23 + "\n[... truncated: 77 more characters]"


def verdict() -> JudgeVerdict:
    return JudgeVerdict(judge="phrase", success=False, evidence=None, reason="r")


def turn(defender_text: str) -> TurnRecord:
    return TurnRecord(
        turn=1,
        context_id="c",
        task_id=None,
        new_conversation=True,
        attacker_text="hi",
        defender_text=defender_text,
        defender_state="completed",
        verdict=verdict(),
        started_at=datetime.now(UTC),
        duration_ms=1.0,
    )


def test_a_turn_records_at_most_the_reply_limit() -> None:
    huge = "word " * 1_000_000
    record = turn(huge)
    assert len(record.defender_text.encode()) <= MAX_RECORDED_REPLY_BYTES
    assert record.defender_text.startswith("word word")
    assert record.defender_text.endswith(" more bytes]")
    # Read back (orchestrator, Redis): the same text, not cut again.
    assert TurnRecord.model_validate_json(record.model_dump_json()).defender_text == record.defender_text
    assert turn("a short reply").defender_text == "a short reply"


def test_a_result_records_at_most_the_error_limit() -> None:
    now = datetime.now(UTC)
    result = MatchResult(
        match_id="m",
        target="http://t",
        objective={"phrase": "x"},  # type: ignore[arg-type]
        strategy="playbook",
        judge="phrase",
        seed=None,
        max_turns=1,
        outcome="error",
        started_at=now,
        finished_at=now,
        duration_ms=1.0,
        error="target failed: " + "x" * 1_000_000,
        error_kind="target_protocol_error",
    )
    assert result.error is not None
    assert len(result.error) <= MAX_ERROR_CHARS
    assert result.error.startswith("target failed: xxx")
    assert result.error.endswith(" more characters]")
    assert MatchResult.model_validate_json(result.model_dump_json()).error == result.error
