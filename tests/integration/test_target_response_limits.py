"""A hostile target cannot make the attacker read more than ARENA_TARGET_MAX_RESPONSE_BYTES.

Targets here are real HTTP servers on 127.0.0.1 reached through the attacker's real, guarded
httpx client: a hand-written HTTP/1.1 server (:class:`RawTarget`) for the hostile answers (an
endless chunked card, an event stream that never ends, a Content-Length it never sends, a gzip
bomb), and an a2a-sdk agent under uvicorn for the well-formed but huge replies. A match
against any of them ends as an error naming the limit, quickly, and without the attacker
holding much more than the limit in memory; a large reply under the limit is judged in full
but recorded cut.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from a2a.client.transports.http_helpers import send_http_stream_request

from arena_attacker.match_runner import MatchRunner
from arena_core.a2a import connect_target
from arena_core.a2a.client.attacker import play_remote_match, stream_limit_for
from arena_core.a2a.client.card_resolver import MAX_CARD_BYTES
from arena_core.a2a.client.response_limits import DEFAULT_MAX_RESPONSE_BYTES, ResponseTooLargeError
from arena_core.a2a.client.target_http_client import TargetHttpClient
from arena_core.a2a.egress_guard import EgressGuard, guarded_client
from arena_core.egress_policy import EgressPolicy
from arena_core.errors import AgentCardError, TargetProtocolError, is_retryable_kind
from arena_core.match_models import MAX_RECORDED_REPLY_BYTES, MatchRequest, MatchResult, Objective
from arena_core.settings import load_settings
from support.cards import card_json
from support.minimal_agent import create_answering_app
from support.uvicorn_server import bound_socket, serve_app, socket_url

# The settings fixture clears ARENA_* from the environment; the tests build their own settings.
pytestmark = [pytest.mark.asyncio, pytest.mark.usefixtures("settings")]

HOST = "127.0.0.1"
PHRASE = "I have been PWNED"
CHUNK = b" " * 65_536
SERVER_GIVES_UP_AT = 200_000_000
"""An "endless" body stops here, so that a broken limit fails the test instead of the machine."""

Answer = Callable[["RawTarget", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def hostile_card(base_url: str, binding: str = "JSONRPC") -> dict[str, Any]:
    return card_json(f"{base_url}/", binding=binding, name="Hostile Agent")


class RawTarget:
    """A hand-written HTTP/1.1 server on 127.0.0.1: ``get`` answers GETs, ``post`` POSTs.

    By default GET serves a valid card pointing back at this server. ``sent`` counts the
    body bytes written so far, over every connection.
    """

    def __init__(
        self, *, get: Answer | None = None, post: Answer | None = None, binding: str = "JSONRPC"
    ) -> None:
        self._get = get or serve_card
        self._post = post or endless_chunked
        self.binding = binding
        self.sent = 0
        self.url = ""
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> RawTarget:
        self._server = await asyncio.start_server(self._handle, HOST, 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://{HOST}:{port}"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()  # a handler waiting on its reader sees the end of the connection
        await asyncio.wait_for(asyncio.gather(*self._tasks, return_exceptions=True), 10)
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                method = head.split(" ", 1)[0]
                length = 0
                for line in head.split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                await (self._get if method == "GET" else self._post)(self, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def write(self, writer: asyncio.StreamWriter, data: bytes, *, body: int = 0) -> None:
        writer.write(data)
        self.sent += body
        await writer.drain()


async def serve_card(target: RawTarget, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    body = json.dumps(hostile_card(target.url, target.binding)).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    await target.write(writer, head.encode() + body, body=len(body))


async def _chunked(target: RawTarget, writer: asyncio.StreamWriter, content_type: str, piece: bytes) -> None:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    await target.write(writer, head.encode())
    while target.sent < SERVER_GIVES_UP_AT:
        await target.write(writer, b"%x\r\n%s\r\n" % (len(piece), piece), body=len(piece))
    await target.write(writer, b"0\r\n\r\n")


async def endless_chunked(target: RawTarget, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A JSON body that never ends: ``{"jsonrpc": "2.0", "result": "     ...``."""
    head = b'{"jsonrpc": "2.0", "id": 1, "result": "'
    await _chunked(target, writer, "application/json", head + CHUNK)


async def endless_events(target: RawTarget, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """An event stream whose events are each small, but which never ends."""
    event = (
        b"data: " + json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"x": "y" * 1000}}).encode() + b"\n\n"
    )
    await _chunked(target, writer, "text/event-stream", event * 8)


async def announces_too_much(
    target: RawTarget, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Headers announcing 10 GB, then nothing: a client that waits for the body hangs."""
    head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n"
    await target.write(writer, head.encode())
    await reader.read()  # until the client hangs up


def gzip_bomb(size: int) -> Answer:
    """``size`` bytes of JSON whitespace, gzip-compressed to a few kB."""
    body = gzip.compress(b" " * size, compresslevel=9)

    async def answer(target: RawTarget, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        await target.write(writer, head.encode() + body, body=len(body))

    return answer


async def gzipped_card(target: RawTarget, _: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    body = gzip.compress(json.dumps(hostile_card(target.url)).encode())
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    await target.write(writer, head.encode() + body, body=len(body))


async def play(url: str, *, trace: bool = True, **settings: Any) -> tuple[MatchResult, float, int]:
    """One playbook turn against ``url``: its result, seconds taken and peak traced memory (0
    without ``trace``: tracing slows handling large replies down many times)."""
    runner = MatchRunner(load_settings(**settings))
    objective = Objective(phrase=PHRASE)
    request = MatchRequest(target=url, strategy="playbook", objective=objective, max_turns=1, seed=1)
    if trace:
        tracemalloc.start()
    try:
        started = time.monotonic()
        async with asyncio.timeout(60):
            result = await runner.run(request)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, time.monotonic() - started, peak


def assert_too_large(result: MatchResult, url: str, limit: int = DEFAULT_MAX_RESPONSE_BYTES) -> None:
    assert result.outcome == "error", result
    assert result.error_kind == "target_protocol_error"
    assert result.error == (
        f"target {url} sent more than {limit} bytes in one response (ARENA_TARGET_MAX_RESPONSE_BYTES)"
    )
    # A target that answers like this does it again: the orchestrator must not retry.
    assert not is_retryable_kind(result.error_kind)


# --- the agent card ------------------------------------------------------------------------------


async def test_an_endless_card_is_cut_at_the_card_limit_and_ends_the_match() -> None:
    async with RawTarget(get=endless_chunked) as target:
        result, seconds, peak = await play(target.url)
        sent = target.sent
    assert result.outcome == "error"
    assert result.error_kind == "agent_card_invalid"
    assert result.error == (
        f"agent card at {target.url}/.well-known/agent-card.json is larger than {MAX_CARD_BYTES} bytes"
    )
    assert not is_retryable_kind(result.error_kind)
    assert seconds < 10
    assert peak < 8 * MAX_CARD_BYTES, peak  # the card limit, not the 200 MB the target offered
    assert sent < SERVER_GIVES_UP_AT / 4, sent  # the attacker hung up, the target gave up writing


async def test_a_card_over_a_smaller_response_limit_names_the_setting() -> None:
    async with RawTarget(get=endless_chunked) as target:
        with pytest.raises(TargetProtocolError) as caught:
            async with asyncio.timeout(30):
                await connect_target(target.url, max_response_bytes=100_000)
    assert caught.value.kind == "target_protocol_error"
    assert str(caught.value) == (
        f"target {target.url} sent more than 100000 bytes in one response (ARENA_TARGET_MAX_RESPONSE_BYTES)"
    )


async def test_a_card_announcing_too_many_bytes_is_refused_before_its_body_is_waited_for() -> None:
    async with RawTarget(get=announces_too_much) as target:
        started = time.monotonic()
        with pytest.raises(TargetProtocolError) as caught:
            async with asyncio.timeout(30):
                await connect_target(target.url, timeout_s=30)
    # The body never comes: only refusing on the header returns before the 30 s read timeout.
    assert time.monotonic() - started < 5
    assert str(caught.value) == (
        f"target {target.url} announced a response of 10000000000 bytes, more than the "
        f"{DEFAULT_MAX_RESPONSE_BYTES} bytes the attacker reads in one response "
        "(ARENA_TARGET_MAX_RESPONSE_BYTES)"
    )


async def test_a_gzip_bomb_card_is_cut_as_it_is_decoded() -> None:
    async with RawTarget(get=gzip_bomb(100_000_000)) as target:
        tracemalloc.start()
        try:
            with pytest.raises(AgentCardError, match=f"is larger than {MAX_CARD_BYTES} bytes"):
                await connect_target(target.url)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 8 * MAX_CARD_BYTES, peak


async def test_a_gzipped_card_under_the_limit_is_read() -> None:
    async with RawTarget(get=gzipped_card) as target:
        connected = await connect_target(target.url)
        assert connected.card.name == "Hostile Agent"
        await connected.close()


# --- replies to messages -------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize("answer", [endless_chunked, endless_events], ids=["json", "event-stream"])
async def test_an_endless_reply_ends_the_match_as_a_protocol_error(binding: str, answer: Answer) -> None:
    async with RawTarget(post=answer, binding=binding) as target:
        result, seconds, peak = await play(target.url)
        sent = target.sent
    assert_too_large(result, target.url)
    assert result.turns == []
    assert seconds < 20
    assert peak < 4 * DEFAULT_MAX_RESPONSE_BYTES, peak
    assert sent < SERVER_GIVES_UP_AT / 4, sent


async def test_a_reply_announcing_too_many_bytes_ends_the_match_at_once() -> None:
    async with RawTarget(post=announces_too_much) as target:
        result, seconds, _ = await play(target.url, target_timeout_s=30)
    assert seconds < 5  # not the 30 s read timeout
    assert result.outcome == "error"
    assert result.error_kind == "target_protocol_error"
    assert result.error is not None
    assert result.error.startswith(f"target {target.url} announced a response of 10000000000 bytes")
    assert result.error.endswith("(ARENA_TARGET_MAX_RESPONSE_BYTES)")


async def test_a_gzip_bomb_reply_is_cut_as_it_is_decoded() -> None:
    async with RawTarget(post=gzip_bomb(25 * DEFAULT_MAX_RESPONSE_BYTES)) as target:
        result, _, peak = await play(target.url)
    assert_too_large(result, target.url)
    assert peak < 4 * DEFAULT_MAX_RESPONSE_BYTES, peak


async def test_an_event_stream_counts_as_one_response_across_its_events() -> None:
    # The a2a-sdk's own SSE reader, on the attacker's target client: each event is small, the
    # stream as a whole passes the limit.
    async with RawTarget(post=endless_events) as target:
        inner = guarded_client(EgressGuard(EgressPolicy()), timeout=httpx.Timeout(10))
        http = TargetHttpClient(
            inner, credentials=None, limiter=None, timeout_s=10, max_response_bytes=100_000
        )
        events: list[str] = []

        async def read_events() -> None:
            async with asyncio.timeout(30):
                async for data in send_http_stream_request(http, "POST", f"{target.url}/", json={}):
                    events.append(data)

        with pytest.raises(ResponseTooLargeError, match="sent more than 100000 bytes in one response"):
            await read_events()
        await inner.aclose()
    assert 10 < len(events) < 100  # ~1 kB each: the limit cut the stream, not the first event


# --- large replies under the limit ---------------------------------------------------------------


@contextlib.asynccontextmanager
async def long_answer_agent(filler: int) -> AsyncIterator[str]:
    """An a2a-sdk agent on 127.0.0.1 answering ``filler`` bytes then the phrase; yields its URL."""
    sock = bound_socket(HOST)
    url = socket_url(sock)
    text = "All is well. " * (filler // 13) + PHRASE
    app = create_answering_app(url, lambda _: text, name="Verbose Agent")
    async with serve_app(app, sock, what="the test agent"):
        yield url


async def test_a_well_formed_reply_over_the_limit_ends_the_match() -> None:
    # uvicorn sends a Content-Length: the reply is refused on it, before its body is read.
    async with long_answer_agent(DEFAULT_MAX_RESPONSE_BYTES + 100_000) as url:
        result, _, _ = await play(url, trace=False)
    assert result.outcome == "error"
    assert result.error_kind == "target_protocol_error"
    assert result.error is not None
    assert result.error.startswith(f"target {url} announced a response of 4100")
    assert result.error.endswith(
        f"more than the {DEFAULT_MAX_RESPONSE_BYTES} bytes the attacker reads in one response "
        "(ARENA_TARGET_MAX_RESPONSE_BYTES)"
    )


async def test_a_large_reply_under_the_limit_is_judged_whole_and_recorded_cut() -> None:
    async with long_answer_agent(3_000_000) as url:
        result, _, _ = await play(url, trace=False)
    # The phrase is at the very end of 3 MB: the judge read all of it.
    assert result.outcome == "attacker_won", (result.error_kind, result.error)
    assert result.verdict is not None and result.verdict.success
    turn = result.turns[0]
    recorded = turn.defender_text.encode()
    assert len(recorded) <= MAX_RECORDED_REPLY_BYTES
    assert recorded.startswith(b"All is well. All is well.")
    assert turn.defender_text.endswith(" more bytes]")
    assert PHRASE not in turn.defender_text
    assert len(result.model_dump_json()) < 2 * MAX_RECORDED_REPLY_BYTES


async def test_a_small_limit_still_lets_normal_replies_through() -> None:
    async with long_answer_agent(1_000) as url:
        target = await connect_target(url, max_response_bytes=10_000)
        reply = await target.send("hello")
        await target.close()
    assert reply.text.endswith(PHRASE)
    assert reply.state == "completed"


# --- a campaign's own attacker ----------------------------------------------------------------


@pytest.mark.parametrize("answer", [endless_events, endless_chunked], ids=["event-stream", "json"])
async def test_a_campaigns_attacker_is_read_to_a_bound_too(answer: Answer) -> None:
    """``attackers[].url`` is user input: the orchestrator reads its answers to a bound (set by
    the match's length); the try fails as a protocol error (the worker tries an attacker's
    failure again, each try bounded the same way)."""
    request = MatchRequest(target="http://defender", strategy="playbook", max_turns=1)
    limit = stream_limit_for(request)
    async with RawTarget(post=answer) as attacker:
        started = time.monotonic()
        with pytest.raises(TargetProtocolError) as failed:
            await play_remote_match(attacker.url, request, guard=EgressGuard(EgressPolicy()), timeout_s=60)
        sent = attacker.sent
    assert failed.value.message == (
        f"attacker {attacker.url} sent more than {limit} bytes in one response, more than a match "
        "of this length can need (a campaign's attackers[].url is read to a bound)"
    )
    assert time.monotonic() - started < 30
    assert sent < SERVER_GIVES_UP_AT / 2, "the orchestrator kept reading"
