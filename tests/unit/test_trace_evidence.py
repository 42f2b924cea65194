"""Reading a defender's tool calls from a Jaeger v1 trace: parsing, waiting, and every failure."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from arena_attacker.trace_evidence import fetch_trace, missing_arguments, read_actions, read_trace
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


def test_tool_spans_become_records_under_their_turns() -> None:
    reading = read_trace(_trace(*ATTACKER, *DEFENDER_TURN_1, *DEFENDER_TURN_2), turns=2)
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
    # A failed call needs no arguments to be judged; only successful ones do.
    assert missing_arguments(reading.actions) == []


def test_turns_without_the_defenders_spans_are_missing() -> None:
    reading = read_trace(_trace(*ATTACKER, *DEFENDER_TURN_1), turns=2)
    assert reading.missing_turns == (2,)
    assert read_trace(_trace(*ATTACKER), turns=2).missing_turns == (1, 2)


def test_spans_without_arguments_are_flagged() -> None:
    bare = _span("1c", "execute_tool issue_refund", "p2", "1b", **{"gen_ai.tool.name": "issue_refund"})
    reading = read_trace(_trace(*ATTACKER[:2], ATTACKER[3], DEFENDER_TURN_1[0], bare), turns=1)
    assert [a.record.tool for a in missing_arguments(reading.actions)] == ["issue_refund"]


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
    http = _backend(
        [
            NOT_FOUND,
            _found(*ATTACKER),
            _found(*ATTACKER, *DEFENDER_TURN_1),
            _found(*ATTACKER, *DEFENDER_TURN_1, *DEFENDER_TURN_2),
            _found(*ATTACKER, *DEFENDER_TURN_1, *DEFENDER_TURN_2),
        ]
    )
    reading = await read_actions(
        http, "http://jaeger", TRACE_ID, turns=2, wait_s=10, sleep=clock.sleep, clock=clock
    )
    assert [a.record.tool for a in reading.actions] == ["issue_refund", "send_email"]
    assert clock.now == 2.0  # four polls apart


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("responses", "says"),
    [
        ([NOT_FOUND] * 30, "did not reach the trace backend"),
        ([_found(*ATTACKER, *DEFENDER_TURN_1)] * 30, "no span of the defender below turn(s) 2"),
        ([httpx.Response(500, text="boom")], "answered HTTP 500"),
        ([httpx.Response(200, text="<html>")], "answered with no JSON"),
        ([httpx.Response(200, json={"traces": []})], "not a Jaeger query API"),
    ],
)
async def test_no_evidence_is_an_error(responses: list[httpx.Response], says: str) -> None:
    clock = FakeClock()
    with pytest.raises(TraceUnavailableError, match=says.replace("(", r"\(").replace(")", r"\)")):
        await read_actions(
            _backend(responses), "http://jaeger", TRACE_ID, turns=2, wait_s=5, sleep=clock.sleep, clock=clock
        )


@pytest.mark.asyncio
async def test_an_unreachable_backend_is_an_error() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    http = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    with pytest.raises(TraceUnavailableError, match="cannot be reached"):
        await fetch_trace(http, "http://jaeger", TRACE_ID)
