"""A defender's actions read from the match's trace (for the ``action`` judge).

Any A2A agent that joins the match's trace through ``traceparent`` and exports its spans
leaves a record of what it did: an ``execute_tool`` span per tool call, with the GenAI
semantic-convention attributes ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and, where its
content-capture setting allows, ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``;
the span's status says whether the call failed. After a match whose target reports no tool
calls in its task, the attacker reads the trace from a Jaeger query API
(``ARENA_TRACE_QUERY_URL``, v1 JSON: ``GET /api/traces/{traceId}``) and rebuilds the calls as
:class:`~arena_core.support_desk.ToolCallRecord` objects.

Spans arrive late: every process exports in batches (five seconds apart by default). The
reader polls until the trace holds, for every turn the attacker played (its ``arena.turn``
spans, flushed first), at least one span of another process below that turn, and the span
count has stayed the same over one more poll; ``ARENA_TRACE_WAIT_S`` bounds the wait. A trace
that never arrives, one without the defender's spans for some turn, and a backend that cannot
be reached or answers nonsense are errors (:class:`TraceUnavailableError`), never a defence:
no evidence is not evidence of no action.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx
from opentelemetry import trace as otel_trace

from arena_core.errors import TraceUnavailableError
from arena_core.support_desk import ToolCallRecord
from arena_core.telemetry import attributes as attrs

TURN_SPAN: Final = "arena.turn"
POLL_S: Final = 0.5
MAX_TRACE_BYTES: Final = 20_000_000
MAX_DEPTH: Final = 200

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class TraceAction:
    """One tool call found in the trace: its record, its span, its service and the turn above it."""

    record: ToolCallRecord
    span_id: str
    service: str
    turn: int | None
    arguments_captured: bool


@dataclass(frozen=True, slots=True)
class TraceReading:
    """What the trace showed: the tool calls, and the turns still missing the defender's spans."""

    actions: tuple[TraceAction, ...]
    missing_turns: tuple[int, ...]
    span_count: int

    @property
    def complete(self) -> bool:
        return not self.missing_turns


def _tags(span: Mapping[str, Any]) -> dict[str, Any]:
    tags = span.get("tags")
    if not isinstance(tags, list):
        return {}
    return {
        t["key"]: t.get("value") for t in tags if isinstance(t, Mapping) and isinstance(t.get("key"), str)
    }


def _parent(span: Mapping[str, Any]) -> str | None:
    for reference in span.get("references") or []:
        if isinstance(reference, Mapping) and reference.get("refType") == "CHILD_OF":
            parent = reference.get("spanID")
            return parent if isinstance(parent, str) else None
    parent = span.get("parentSpanID")  # deprecated, still sent by some versions
    return parent if isinstance(parent, str) and parent.strip("0") else None


def _json_object(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def _is_tool_span(span: Mapping[str, Any], tags: Mapping[str, Any]) -> bool:
    if tags.get(attrs.GEN_AI_OPERATION_NAME) == attrs.OPERATION_EXECUTE_TOOL:
        return True
    name = span.get("operationName")
    return isinstance(name, str) and name.startswith("execute_tool ")


def _record(span: Mapping[str, Any], tags: Mapping[str, Any]) -> tuple[ToolCallRecord, bool]:
    name = tags.get(attrs.GEN_AI_TOOL_NAME)
    if not isinstance(name, str) or not name:
        name = str(span.get("operationName", "")).removeprefix("execute_tool ").strip() or "unknown"
    arguments = _json_object(tags.get(attrs.GEN_AI_TOOL_CALL_ARGUMENTS))
    failed = tags.get("otel.status_code") == "ERROR" or tags.get("error") is True
    description = tags.get("otel.status_description")
    record = ToolCallRecord(
        tool=name[:100],
        call_id=str(tags.get(attrs.GEN_AI_TOOL_CALL_ID, ""))[:200],
        arguments=arguments or {},
        status="error" if failed else "ok",
        result=None if failed else _json_object(tags.get(attrs.GEN_AI_TOOL_CALL_RESULT)),
        error=str(description)[:2000] if failed and description else None,
    )
    return record, arguments is not None


def read_trace(trace: Mapping[str, Any], turns: int) -> TraceReading:
    """The tool calls of ``trace`` (one Jaeger v1 trace object) and the turns 1..``turns`` below
    which no span of another process than the attacker's has arrived yet."""
    spans = [
        s for s in trace.get("spans") or [] if isinstance(s, Mapping) and isinstance(s.get("spanID"), str)
    ]
    processes = trace.get("processes") if isinstance(trace.get("processes"), Mapping) else {}
    by_id = {s["spanID"]: s for s in spans}
    turn_of_span: dict[str, int] = {}
    attacker_processes: set[Any] = set()
    for span in spans:
        if span.get("operationName") == TURN_SPAN:
            number = _tags(span).get(attrs.ARENA_TURN)
            if isinstance(number, int | str) and str(number).isdigit():
                turn_of_span[span["spanID"]] = int(number)
                attacker_processes.add(span.get("processID"))

    def turn_above(span: Mapping[str, Any]) -> int | None:
        current: Mapping[str, Any] | None = span
        for _ in range(MAX_DEPTH):
            parent = _parent(current) if current is not None else None
            if parent is None:
                return None
            if parent in turn_of_span:
                return turn_of_span[parent]
            current = by_id.get(parent)
            if current is None:
                return None
        return None

    covered: set[int] = set()
    actions: list[TraceAction] = []
    for span in spans:
        if span.get("processID") in attacker_processes:
            continue
        turn = turn_above(span)
        if turn is not None:
            covered.add(turn)
        tags = _tags(span)
        if _is_tool_span(span, tags):
            record, captured = _record(span, tags)
            process = processes.get(span.get("processID")) if isinstance(processes, Mapping) else None
            service = process.get("serviceName", "") if isinstance(process, Mapping) else ""
            actions.append(TraceAction(record, span["spanID"], str(service), turn, captured))
    actions.sort(key=lambda a: (a.turn or 0, _start(by_id[a.span_id])))
    missing = tuple(turn for turn in range(1, turns + 1) if turn not in covered)
    return TraceReading(tuple(actions), missing, len(spans))


def _start(span: Mapping[str, Any]) -> int:
    start = span.get("startTime")
    return start if isinstance(start, int) else 0


async def fetch_trace(http: httpx.AsyncClient, base_url: str, trace_id: str) -> Mapping[str, Any] | None:
    """The trace from a Jaeger v1 query API, or None while it is not there (404).

    Raises:
        TraceUnavailableError: the backend cannot be reached, or answers something else than a trace.
    """
    url = f"{base_url.rstrip('/')}/api/traces/{trace_id}"
    try:
        response = await http.get(url)
    except httpx.HTTPError as exc:
        raise TraceUnavailableError(
            f"the trace backend at {base_url} cannot be reached ({type(exc).__name__}); "
            "the match's actions cannot be read (ARENA_TRACE_QUERY_URL)"
        ) from exc
    # Jaeger answers a missing trace with 404 and a JSON body under a text/plain content type.
    if response.status_code == httpx.codes.NOT_FOUND:
        return None
    if response.status_code != httpx.codes.OK:
        raise TraceUnavailableError(
            f"the trace backend at {base_url} answered HTTP {response.status_code} for trace {trace_id}"
        )
    if len(response.content) > MAX_TRACE_BYTES:
        raise TraceUnavailableError(f"trace {trace_id} is larger than {MAX_TRACE_BYTES} bytes")
    try:
        body = response.json()
    except ValueError as exc:
        raise TraceUnavailableError(f"the trace backend at {base_url} answered with no JSON") from exc
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, list):
        raise TraceUnavailableError(
            f"the trace backend at {base_url} answered without a 'data' list: not a Jaeger query API"
        )
    for item in data:
        if isinstance(item, Mapping) and str(item.get("traceID", "")).lower().lstrip("0") == trace_id.lstrip(
            "0"
        ):
            return item
    return None


def flush_own_spans(timeout_ms: int = 5000) -> None:
    """Export this process's finished spans now (the ``arena.turn`` spans the reader looks for)."""
    provider = otel_trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if callable(flush):
        flush(timeout_ms)


async def read_actions(
    http: httpx.AsyncClient,
    base_url: str,
    trace_id: str,
    *,
    turns: int,
    wait_s: float,
    poll_s: float = POLL_S,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> TraceReading:
    """Poll the trace until it is complete and settled (see the module doc), or fail.

    Raises:
        TraceUnavailableError: no trace, or no defender spans for some turn, within ``wait_s``;
            or the backend failed.
    """
    await asyncio.to_thread(flush_own_spans)
    deadline = clock() + wait_s
    settled_count = -1
    reading: TraceReading | None = None
    while True:
        trace = await fetch_trace(http, base_url, trace_id)
        if trace is not None:
            reading = read_trace(trace, turns)
            if reading.complete and reading.span_count == settled_count:
                return reading
            settled_count = reading.span_count if reading.complete else -1
        if clock() >= deadline:
            break
        await sleep(poll_s)
    if reading is None:
        raise TraceUnavailableError(
            f"trace {trace_id} did not reach the trace backend at {base_url} within {wait_s:g} s "
            "(ARENA_TRACE_WAIT_S): is the attacker exporting its spans?"
        )
    if not reading.complete:
        missing = ", ".join(str(turn) for turn in reading.missing_turns)
        raise TraceUnavailableError(
            f"trace {trace_id} holds no span of the defender below turn(s) {missing} after {wait_s:g} s: "
            "the defender's spans did not reach the trace backend (does it export them, and join the "
            "trace through traceparent?)"
        )
    return reading  # complete, still growing at the deadline: what arrived is what is judged


def missing_arguments(actions: Sequence[TraceAction]) -> list[TraceAction]:
    """The successful calls whose arguments the spans do not carry (content capture off)."""
    return [a for a in actions if a.record.status == "ok" and not a.arguments_captured]


__all__ = [
    "TraceAction",
    "TraceReading",
    "fetch_trace",
    "flush_own_spans",
    "missing_arguments",
    "read_actions",
    "read_trace",
]
