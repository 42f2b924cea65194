"""A defender's actions read from the match's trace (for the ``action`` judge).

Any A2A agent that joins the match's trace through ``traceparent`` and exports its spans
leaves a record of what it did: an ``execute_tool`` span per tool call, with the GenAI
semantic-convention attributes ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and, where its
content-capture setting allows, ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``;
the span's status says whether the call failed. After a match whose target reports no tool
calls in its task, the attacker reads the trace from a Jaeger query API
(``ARENA_TRACE_QUERY_URL``, v1 JSON: ``GET /api/traces/{traceId}``) and rebuilds the calls as
:class:`~arena_core.support_desk.ToolCallRecord` objects.

Only this run's turns count: the reader is given the span ids of the ``arena.turn`` spans the
attacker opened for the match, and takes the tool spans below them. The orchestrator plays
every attempt of a match in one trace, so an earlier attempt's calls are there too, and a
defender could forge spans named ``arena.turn``: neither is counted.

Spans arrive late: every process exports in batches (five seconds apart by default). A turn
is covered once the trace holds the defender's *entry* span below it: a span of another
process whose parent is a span of the attacker's (its HTTP request). A process exports a span
once it has ended, in the order spans end, and an entry span ends after the work it
contains, so the tool spans of that process have been exported with it or before. Other
processes (a model server, a sub-agent) export on their own clocks, so the trace must also
have stopped growing for ``ARENA_TRACE_SETTLE_S``. ``ARENA_TRACE_WAIT_S`` bounds the whole wait.
A trace that never arrives, one without the defender's entry span for some turn, one still
growing at the deadline, and a backend that cannot be reached or answers nonsense are errors
(:class:`TraceUnavailableError`), never a defence: no evidence is not evidence of no action.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx
from opentelemetry import trace as otel_trace
from opentelemetry.instrumentation.utils import suppress_http_instrumentation

from arena_core.errors import TraceUnavailableError
from arena_core.support_desk import ToolCallRecord
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import safe_url

TURN_SPAN: Final = "arena.turn"
POLL_S: Final = 0.5
MAX_TRACE_BYTES: Final = 20_000_000
MAX_TRACE_SPANS: Final = 100_000
MAX_TAGS: Final = 256
MAX_ATTRIBUTE_CHARS: Final = 100_000
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
        t["key"]: t.get("value")
        for t in tags[:MAX_TAGS]
        if isinstance(t, Mapping) and isinstance(t.get("key"), str)
    }


def _parent(span: Mapping[str, Any]) -> str | None:
    references = span.get("references")
    for reference in references if isinstance(references, list) else []:
        if isinstance(reference, Mapping) and reference.get("refType") == "CHILD_OF":
            parent = reference.get("spanID")
            return parent if isinstance(parent, str) else None
    parent = span.get("parentSpanID")  # deprecated, still sent by some versions
    return parent if isinstance(parent, str) and parent.strip("0") else None


def _process(span: Mapping[str, Any]) -> str | None:
    process = span.get("processID")
    return process if isinstance(process, str) else None


def _json_object(value: Any) -> dict[str, Any] | None:
    """A JSON object attribute (as a mapping or its text), else None; hostile text is bounded."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str) and len(value) <= MAX_ATTRIBUTE_CHARS:
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
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


def _turn_number(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 9:
        return int(value)
    return None


def read_trace(trace: Mapping[str, Any], turn_spans: Mapping[str, int], turns: int) -> TraceReading:
    """The tool calls of ``trace`` (one Jaeger v1 trace object) below this run's turn spans
    (``turn_spans``: span id -> turn number), and the turns 1..``turns`` below which the
    defender's entry span has not arrived yet.

    Raises:
        TraceUnavailableError: the trace holds more than :data:`MAX_TRACE_SPANS` spans.
    """
    raw = trace.get("spans")
    listed = raw if isinstance(raw, list) else []
    if len(listed) > MAX_TRACE_SPANS:
        raise TraceUnavailableError(f"the trace holds over {MAX_TRACE_SPANS} spans: not read")
    spans = [s for s in listed if isinstance(s, Mapping) and isinstance(s.get("spanID"), str)]
    processes = trace.get("processes") if isinstance(trace.get("processes"), Mapping) else {}
    by_id = {s["spanID"]: s for s in spans}
    turn_of_span = {span_id: turn for span_id, turn in turn_spans.items() if span_id in by_id}
    attacker_processes = {_process(by_id[span_id]) for span_id in turn_of_span} - {None}

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

    def is_entry(span: Mapping[str, Any]) -> bool:
        parent = by_id.get(_parent(span) or "")
        return parent is not None and _process(parent) in attacker_processes

    covered: set[int] = set()
    actions: list[TraceAction] = []
    for span in spans:
        if _process(span) in attacker_processes:
            continue
        turn = turn_above(span)
        if turn is None:
            continue  # not below this run's turns: another attempt's, or not the match's at all
        if is_entry(span):
            covered.add(turn)
        tags = _tags(span)
        if _is_tool_span(span, tags):
            record, captured = _record(span, tags)
            process = processes.get(_process(span) or "") if isinstance(processes, Mapping) else None
            service = process.get("serviceName", "") if isinstance(process, Mapping) else ""
            actions.append(TraceAction(record, span["spanID"], str(service)[:200], turn, captured))
    actions.sort(key=lambda a: (a.turn or 0, _start(by_id[a.span_id])))
    missing = tuple(turn for turn in range(1, turns + 1) if turn not in covered)
    return TraceReading(tuple(actions), missing, len(spans))


def _start(span: Mapping[str, Any]) -> int:
    start = span.get("startTime")
    return start if isinstance(start, int) and not isinstance(start, bool) else 0


async def fetch_trace(http: httpx.AsyncClient, base_url: str, trace_id: str) -> Mapping[str, Any] | None:
    """The trace from a Jaeger v1 query API, or None while it is not there (404).

    The request is kept out of the match's own trace, and the answer is read up to
    :data:`MAX_TRACE_BYTES` (a defender can export any number of spans into the match's trace).

    Raises:
        TraceUnavailableError: the backend cannot be reached, or answers something else than a trace.
    """
    where = _where(base_url)
    url = f"{base_url.rstrip('/')}/api/traces/{trace_id}"
    try:
        with suppress_http_instrumentation():
            async with http.stream("GET", url) as response:
                if response.status_code == httpx.codes.NOT_FOUND:
                    # Jaeger answers a missing trace with 404 and a JSON body under text/plain.
                    return None
                if response.status_code != httpx.codes.OK:
                    raise TraceUnavailableError(
                        f"the trace backend at {where} answered HTTP {response.status_code} "
                        f"for trace {trace_id}"
                    )
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_TRACE_BYTES:
                        raise TraceUnavailableError(
                            f"trace {trace_id} is larger than {MAX_TRACE_BYTES} bytes"
                        )
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise TraceUnavailableError(
            f"the trace backend at {where} cannot be reached ({type(exc).__name__}); "
            "the match's actions cannot be read (ARENA_TRACE_QUERY_URL)"
        ) from exc
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise TraceUnavailableError(f"the trace backend at {where} answered with no JSON") from exc
    data = parsed.get("data") if isinstance(parsed, Mapping) else None
    if not isinstance(data, list):
        raise TraceUnavailableError(
            f"the trace backend at {where} answered without a 'data' list: not a Jaeger query API"
        )
    wanted = trace_id.lower().lstrip("0")
    for item in data:
        if isinstance(item, Mapping) and str(item.get("traceID", "")).lower().lstrip("0") == wanted:
            return item
    return None


def _where(base_url: str) -> str:
    """The backend's URL for messages, without user info or query (they may hold credentials)."""
    try:
        return safe_url(base_url)
    except ValueError:
        return "ARENA_TRACE_QUERY_URL (not a valid URL)"


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
    turn_spans: Mapping[str, int],
    turns: int,
    wait_s: float,
    settle_s: float,
    poll_s: float = POLL_S,
    sleep: Sleep = asyncio.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> TraceReading:
    """Poll the trace until it is complete and has not grown for ``settle_s`` (see the module
    doc), or fail.

    Raises:
        TraceUnavailableError: no trace, no entry span of the defender for some turn, or a trace
            still growing, at ``wait_s``; or the backend failed.
    """
    await asyncio.to_thread(flush_own_spans)
    deadline = clock() + wait_s
    reading: TraceReading | None = None
    count, since = -1, clock()
    while True:
        trace = await fetch_trace(http, base_url, trace_id)
        now = clock()
        if trace is not None:
            reading = read_trace(trace, turn_spans, turns)
            if reading.span_count != count:
                count, since = reading.span_count, now
            if reading.complete and now - since >= settle_s:
                return reading
        if now >= deadline:
            break
        await sleep(poll_s)
    where = _where(base_url)
    if reading is None:
        raise TraceUnavailableError(
            f"trace {trace_id} did not reach the trace backend at {where} within {wait_s:g} s "
            "(ARENA_TRACE_WAIT_S): is the attacker exporting its spans?"
        )
    if not reading.complete:
        missing = ", ".join(str(turn) for turn in reading.missing_turns)
        raise TraceUnavailableError(
            f"trace {trace_id} holds no span of the defender below turn(s) {missing} after {wait_s:g} s: "
            "the defender's spans did not reach the trace backend (does it export them, and join the "
            "trace through traceparent?)"
        )
    raise TraceUnavailableError(
        f"trace {trace_id} was still receiving spans after {wait_s:g} s (ARENA_TRACE_WAIT_S, "
        f"ARENA_TRACE_SETTLE_S {settle_s:g} s): late spans could still hold an action"
    )


__all__ = [
    "TraceAction",
    "TraceReading",
    "fetch_trace",
    "flush_own_spans",
    "read_actions",
    "read_trace",
]
