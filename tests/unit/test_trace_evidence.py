"""Reading a defender's tool calls from a Jaeger v1 trace: parsing, waiting, and every failure."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from arena_attacker.trace_evidence import (
    MAX_TRACE_BYTES,
    MAX_TRACE_SPANS,
    fetch_trace,
    read_actions,
    read_trace,
)
from arena_core.errors import TraceUnavailableError

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def _span(span_id: str, name: str, process: str, parent: str | None = None, **tags: Any) -> dict[str, Any]:
    return {
        "traceID": TRACE_ID,
        "spanID": span_id,
        "operationName": name,
        "references": [{"refType": "CHILD_OF", "traceID": TRACE_ID, "spanID": parent}] if parent else [],
        "startTime": int(span_id, 16),
        "duration": 1,
        "tags": [{"key": k, "type": "string", "value": v} for k, v in tags.items()],
        "processID": process,
    }


def _trace(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "traceID": TRACE_ID,
        "spans": list(spans),
        "processes": {"p1": {"serviceName": "arena-attacker"}, "p2": {"serviceName": "shop-agent"}},
    }


ATTACKER = [
    _span("0a", "invoke_agent arena-attacker", "p1"),
    _span("0b", "arena.turn", "p1", "0a", **{"arena.turn": 1}),
    _span("0c", "arena.turn", "p1", "0a", **{"arena.turn": 2}),
    _span("0d", "POST", "p1", "0b"),
    _span("0e", "POST", "p1", "0c"),
]
REFUND = _span(
    "1c",
    "execute_tool issue_refund",
    "p2",
    "1b",
    **{
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "issue_refund",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": json.dumps({"order_id": "7781", "amount_eur": 180}),
        "gen_ai.tool.call.result": json.dumps({"refunded": True}),
    },
)
FAILED_MAIL = _span(
    "2c",
    "execute_tool send_email",
    "p2",
    "2b",
    **{
        "gen_ai.tool.name": "send_email",
        "otel.status_code": "ERROR",
        "otel.status_description": "bad address",
    },
)
DEFENDER_TURN_1 = [_span("1b", "SendMessage", "p2", "0d"), REFUND]
DEFENDER_TURN_2 = [_span("2b", "SendMessage", "p2", "0e"), FAILED_MAIL]
TURN_SPANS = {"0b": 1, "0c": 2}
"""The span ids of this run's turn spans, as the match session recorded them."""


def test_tool_spans_become_records_under_their_turns() -> None:
    reading = read_trace(_trace(*ATTACKER, *DEFENDER_TURN_1, *DEFENDER_TURN_2), TURN_SPANS, turns=2)
    assert reading.complete and reading.span_count == 9
    refund, mail = reading.actions
    assert (refund.turn, refund.span_id, refund.service) == (1, "1c", "shop-agent")
    assert refund.record.arguments == {"order_id": "7781", "amount_eur": 180}
    assert (refund.record.call_id, refund.record.status, refund.record.result) == (
        "call_1",
        "ok",
        {"refunded": True},
    )
    assert (mail.turn, mail.record.status, mail.record.error) == (2, "error", "bad address")
    assert refund.arguments_captured and not mail.arguments_captured


def test_turns_without_the_defenders_entry_span_are_missing() -> None:
    reading = read_trace(_trace(*ATTACKER, *DEFENDER_TURN_1), TURN_SPANS, turns=2)
    assert reading.missing_turns == (2,)
    assert read_trace(_trace(*ATTACKER), TURN_SPANS, turns=2).missing_turns == (1, 2)
    # A span that arrived before the defender's entry span (a model call it made, exported by
    # another process) does not cover the turn: the entry span ends last, after the tools ran.
    early = _span("2d", "chat", "p3", "2b")
    assert read_trace(_trace(*ATTACKER, *DEFENDER_TURN_1, early), TURN_SPANS, turns=2).missing_turns == (2,)


def test_only_this_runs_turns_count() -> None:
    # An earlier attempt of the match left its turn 1 and a refund in the same trace.
    earlier = [
        _span("9a", "invoke_agent arena-attacker", "p1"),
        _span("9b", "arena.turn", "p1", "9a", **{"arena.turn": 1}),
        _span("9d", "POST", "p1", "9b"),
        _span("9e", "SendMessage", "p2", "9d"),
        _span("9f", "execute_tool issue_refund", "p2", "9e", **{"gen_ai.tool.name": "issue_refund"}),
    ]
    # A defender forging a span named arena.turn gains nothing either.
    forged = _span("8b", "arena.turn", "p2", "1b", **{"arena.turn": 2})
    reading = read_trace(_trace(*ATTACKER[:2], ATTACKER[3], *earlier, *DEFENDER_TURN_1, forged), {"0b": 1}, 1)
    assert [a.span_id for a in reading.actions] == ["1c"]
    assert reading.complete
    reading = read_trace(_trace(*ATTACKER[:2], ATTACKER[3], *earlier), {"0b": 1}, 1)
    assert reading.actions == () and reading.missing_turns == (1,)


def test_hostile_trace_data_is_read_within_bounds() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    odd = [
        _span(
            "1c",
            "execute_tool send_email",
            "p2",
            "1b",
            **{"gen_ai.tool.name": "send_email", "gen_ai.tool.call.arguments": deep},
        ),
        {**_span("1d", "execute_tool x", "p2", "1b"), "processID": ["unhashable"]},
        _span("0f", "arena.turn", "p1", "0a", **{"arena.turn": "²"}),
        {"spanID": 7, "references": "nonsense"},
    ]
    reading = read_trace(_trace(*ATTACKER, DEFENDER_TURN_1[0], *odd), TURN_SPANS, turns=1)
    mail, other = reading.actions
    assert mail.record.arguments == {} and not mail.arguments_captured
    assert (other.record.tool, other.service) == ("x", "")
    many = {"spans": [_span(f"{i:x}", "x", "p2") for i in range(MAX_TRACE_SPANS + 1)]}
    with pytest.raises(TraceUnavailableError, match="over 100000 spans"):
        read_trace(many, TURN_SPANS, turns=1)


def _backend(responses: list[httpx.Response]) -> httpx.AsyncClient:
    calls = iter(responses)

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == f"/api/traces/{TRACE_ID}"
        return next(calls)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://jaeger")


NOT_FOUND = httpx.Response(
    404, text=json.dumps({"data": None, "errors": [{"code": 404, "msg": "trace not found"}]})
)


def _found(*spans: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json={"data": [_trace(*spans)], "errors": None})


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.asyncio
async def test_the_reader_waits_for_late_spans_and_for_the_trace_to_settle() -> None:
    clock = FakeClock()
    complete = _found(*ATTACKER, *DEFENDER_TURN_1, *DEFENDER_TURN_2)
    http = _backend([NOT_FOUND, _found(*ATTACKER), _found(*ATTACKER, *DEFENDER_TURN_1), *[complete] * 10])
    reading = await read_actions(
        http,
        "http://jaeger",
        TRACE_ID,
        turn_spans=TURN_SPANS,
        turns=2,
        wait_s=10,
        settle_s=2,
        sleep=clock.sleep,
        clock=clock,
    )
    assert [a.record.tool for a in reading.actions] == ["issue_refund", "send_email"]
    # Complete at 1.5 s; returned once it had not grown for 2 s.
    assert clock.now == 3.5


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("responses", "says"),
    [
        ([NOT_FOUND] * 30, "did not reach the trace backend"),
        ([_found(*ATTACKER, *DEFENDER_TURN_1)] * 30, "no span of the defender below turn(s) 2"),
        (
            [
                _found(
                    *ATTACKER,
                    *DEFENDER_TURN_1,
                    *DEFENDER_TURN_2,
                    *[_span(f"5{i:x}", "x", "p3", "1b")] * (i + 1),
                )
                for i in range(30)
            ],
            "still receiving spans after 5 s",
        ),
        ([httpx.Response(500, text="boom")], "answered HTTP 500"),
        ([httpx.Response(200, text="<html>")], "answered with no JSON"),
        ([httpx.Response(200, text="[" * 100_000)], "answered with no JSON"),
        ([httpx.Response(200, json={"traces": []})], "not a Jaeger query API"),
        ([httpx.Response(200, content=b" " * (MAX_TRACE_BYTES + 1))], "is larger than 20000000 bytes"),
    ],
)
async def test_no_evidence_is_an_error(responses: list[httpx.Response], says: str) -> None:
    clock = FakeClock()
    with pytest.raises(TraceUnavailableError, match=says.replace("(", r"\(").replace(")", r"\)")):
        await read_actions(
            _backend(responses),
            "http://jaeger",
            TRACE_ID,
            turn_spans=TURN_SPANS,
            turns=2,
            wait_s=5,
            settle_s=1,
            sleep=clock.sleep,
            clock=clock,
        )


@pytest.mark.asyncio
async def test_an_unreachable_backend_is_an_error_that_quotes_no_credentials() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    with pytest.raises(TraceUnavailableError, match="cannot be reached") as caught:
        await fetch_trace(http, "http://user:s3cret@jaeger", TRACE_ID)
    assert "s3cret" not in str(caught.value)
    with pytest.raises(TraceUnavailableError, match="cannot be reached"):
        await fetch_trace(httpx.AsyncClient(), "http://[::1", TRACE_ID)
