"""SendStreamingMessage (1.0) / message/stream (0.3): Server-Sent Events framing, order, final events.

A stream is read until the server closes it; one still open 5 s after its last byte is
recorded as not closed. How a stream must end depends on the turn mode, so those checks
run on the defender in each mode: ``completing_agent`` (the task ends completed, a
terminal state) and ``parking_agent`` (the task ends in input-required, an interrupted
state).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.checks import non_camel_keys
from conformance.spec import Requirement, on_wires
from conformance.wire import (
    ALL_WIRES,
    UNSUPPORTED_OPERATION,
    V03_WIRES,
    V10_WIRES,
    Agent,
    Exchange,
    Wire,
    error_seen,
    expect_error,
    explain,
)

pytestmark = pytest.mark.system


def streamed(agent: Agent, text: str = "stream me", **ids: str) -> tuple[Exchange, list[Any]]:
    exchange = agent.stream(agent.message(text, **ids), request_id="stream-conformance")
    assert exchange.status == 200 and exchange.is_stream, explain("expected an SSE stream", exchange)
    payloads = agent.stream_payloads(exchange)
    assert payloads, explain("the stream carried no event", exchange)
    return exchange, payloads


SSE_RESPONSE = Requirement(
    "a streaming send answers HTTP 200 with Content-Type text/event-stream", "MUST", "3.1.2", "3.3.1"
)


@on_wires(SSE_RESPONSE, ALL_WIRES)
def test_stream_is_an_event_stream(agent: Agent) -> None:
    exchange = agent.stream(agent.message("stream me"))
    assert exchange.status == 200, explain("HTTP 200 expected", exchange)
    assert exchange.media_type == "text/event-stream", explain(
        "Content-Type text/event-stream expected", exchange
    )


SSE_FRAMING = Requirement(
    "each SSE event's data is one complete JSON document of the binding's response type",
    "MUST",
    "9.4.2",
    "3.3.1",
)


@on_wires(SSE_FRAMING, ALL_WIRES)
def test_stream_framing(agent: Agent, wire: Wire) -> None:
    exchange, _ = streamed(agent)
    assert not exchange.unterminated, explain(
        "the stream ended inside an event (no blank line after it)", exchange
    )
    for index, event in enumerate(exchange.events or []):
        try:
            document = event.json()
        except ValueError:
            raise AssertionError(explain(f"event {index}: data is not one JSON document", exchange)) from None
        if wire.jsonrpc:
            # 1.0 9.4.2 / 0.3 3.3.1, 7.2.1: each data field is a complete JSON-RPC response to the request.
            assert isinstance(document, dict) and document.get("jsonrpc") == "2.0", explain(
                f"event {index}: not a JSON-RPC 2.0 response", exchange
            )
            assert document.get("id") == "stream-conformance", explain(
                f"event {index}: the response id must be the request's", exchange
            )
            assert "result" in document, explain(f"event {index}: expected a result", exchange)
        else:
            # 1.0 11.7: data holds a StreamResponse; 0.3 3.3.3: streaming "similar to JSON-RPC".
            assert isinstance(document, dict), explain(f"event {index}: not a JSON object", exchange)


STREAM_RESPONSE = Requirement(
    "each stream event holds exactly one of task, message, statusUpdate, artifactUpdate",
    "MUST",
    "3.2.3",
    "7.2.1",
)


@on_wires(STREAM_RESPONSE, ALL_WIRES)
def test_stream_events_are_stream_responses(agent: Agent) -> None:
    exchange, payloads = streamed(agent)
    kinds = [agent.event_kind(payload) for payload in payloads]
    assert None not in kinds, explain(
        f"event kinds {kinds}: each must be exactly one StreamResponse member", exchange
    )
    bad = [path for payload in payloads for path in non_camel_keys(payload)]
    assert not bad, explain(f"field names that are not camelCase (1.0 5.5): {bad}", exchange)


BEGINS_WITH_TASK = Requirement(
    "a task lifecycle stream begins with the Task, then status and artifact updates of that task",
    "MUST",
    "3.1.2",
)


@on_wires(BEGINS_WITH_TASK, V10_WIRES)
def test_stream_begins_with_the_task(agent: Agent) -> None:
    exchange, payloads = streamed(agent)
    kinds = [agent.event_kind(payload) for payload in payloads]
    if kinds[0] == "message":
        assert kinds == ["message"], explain("a message-only stream holds exactly one Message", exchange)
        return
    assert kinds[0] == "task", explain(f"event kinds {kinds}: the stream MUST begin with the Task", exchange)
    task = agent.event_body(payloads[0])
    assert set(kinds[1:]) <= {"statusUpdate", "artifactUpdate"}, explain(
        f"event kinds {kinds}: after the Task come status and artifact updates", exchange
    )
    for index, payload in enumerate(payloads[1:], start=1):
        body = agent.event_body(payload)
        assert (body.get("taskId"), body.get("contextId")) == (task["id"], task["contextId"]), explain(
            f"event {index}: updates carry the task's taskId and contextId (4.2.1, 4.2.2 required)", exchange
        )


UPDATE_IDS = Requirement("status and artifact updates carry taskId and contextId", "MUST", v03="7.2.2")


@on_wires(UPDATE_IDS, V03_WIRES)
def test_stream_updates_carry_ids(agent: Agent) -> None:
    exchange, payloads = streamed(agent)
    ids = {
        (agent.event_body(p).get("taskId"), agent.event_body(p).get("contextId"))
        for p in payloads
        if agent.event_kind(p) in {"statusUpdate", "artifactUpdate"}
    }
    first = agent.event_body(payloads[0])
    assert ids == {(first.get("id"), first.get("contextId"))}, explain(
        f"0.3 7.2.2/7.2.3: taskId and contextId are required and name the streamed task, got {ids}", exchange
    )


def _ends(agent: Agent, exchange: Exchange, payloads: list[Any], state: str, why: str) -> None:
    """The stream's last event is a status update to ``state`` and the server closed the stream."""
    last = agent.event_body(payloads[-1])
    assert agent.event_kind(payloads[-1]) == "statusUpdate", explain(
        f"{why}: the last event is a status update", exchange
    )
    assert agent.wire.state_name((last.get("status") or {}).get("state")) == state, explain(
        f"{why}: the last event reaches {state}", exchange
    )
    states = [
        agent.wire.state_name((agent.event_body(p).get("status") or {}).get("state"))
        for p in payloads
        if agent.event_kind(p) == "statusUpdate"
    ]
    assert states.index(state) == len(states) - 1, explain(f"{why}: nothing after {state}", exchange)
    assert exchange.closed, explain(f"{why}: the server must close the stream", exchange)


CLOSES_AT_TERMINAL = Requirement(
    "the stream closes when the task reaches a terminal state", "MUST", "3.1.2", "7.2.2"
)


@on_wires(CLOSES_AT_TERMINAL, ALL_WIRES)
def test_stream_closes_at_terminal_state(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    exchange, payloads = streamed(agent)
    _ends(agent, exchange, payloads, "completed", "complete mode")
    if wire.version == "0.3":
        finals = [
            bool(agent.event_body(p).get("final")) for p in payloads if agent.event_kind(p) == "statusUpdate"
        ]
        assert finals and finals[-1] and not any(finals[:-1]), explain(
            f"0.3 7.2.2/9.3: the last status update, and only it, says final: true (got {finals})", exchange
        )


CLOSES_AT_INTERRUPTED = Requirement(
    "the stream closes when the task reaches an interrupted state (input-required)",
    "MUST",
    "11.7",
    "7.2.2",
)


@on_wires(CLOSES_AT_INTERRUPTED, ALL_WIRES)
def test_stream_closes_at_interrupted_state(parking_agent: Agent, wire: Wire) -> None:
    """1.0 11.7 (and 5.1 for JSON-RPC: the same behaviour on every binding); 0.3: ``final`` marks it."""
    agent = parking_agent
    exchange, payloads = streamed(agent)
    _ends(agent, exchange, payloads, "input-required", "input-required mode")
    if wire.version == "0.3":
        finals = [
            bool(agent.event_body(p).get("final")) for p in payloads if agent.event_kind(p) == "statusUpdate"
        ]
        assert finals and finals[-1], explain(
            f"0.3 7.2.2: the update ending the stream (input-required) says final: true (got {finals})",
            exchange,
        )


FOLLOW_UP_STREAM = Requirement(
    "a streamed follow-up (taskId only) continues the task in its context", "MUST", "3.4.3", "3.4.3(1.0)"
)


def _task_ids(agent: Agent, payloads: list[Any]) -> set[tuple[Any, Any]]:
    """The (task id, context id) every event names (a Task its id, an update its taskId)."""
    ids = set()
    for payload in payloads:
        body = agent.event_body(payload)
        task_id = body.get("id") if agent.event_kind(payload) == "task" else body.get("taskId")
        ids.add((task_id, body.get("contextId")))
    return ids


@on_wires(FOLLOW_UP_STREAM, ALL_WIRES)
def test_streamed_task_only_follow_up(parking_agent: Agent) -> None:
    agent = parking_agent
    first = agent.task_of(agent.say("one"))
    exchange, payloads = streamed(agent, "two", task_id=first["id"])
    assert _task_ids(agent, payloads) == {(first["id"], first["contextId"])}, explain(
        f"every event must name task {first['id']} in its context {first['contextId']}", exchange
    )
    last = agent.event_body(payloads[-1])
    reply = agent.text_of((last.get("status") or {}).get("message"))
    assert reply == "turn 2: two", explain("the reply comes from the task's conversation", exchange)


FOLLOW_UP_BEGINS_WITH_TASK = Requirement(
    "a stream continuing an existing task also begins with the Task", "MUST", "3.1.2"
)


@on_wires(FOLLOW_UP_BEGINS_WITH_TASK, V10_WIRES)
def test_streamed_follow_up_begins_with_the_task(parking_agent: Agent) -> None:
    agent = parking_agent
    first = agent.task_of(agent.say("one"))
    exchange, payloads = streamed(agent, "two", task_id=first["id"], context_id=first["contextId"])
    kinds = [agent.event_kind(payload) for payload in payloads]
    assert kinds[0] == "task", explain(
        f"event kinds {kinds}: a task lifecycle stream MUST begin with the Task object (1.0 3.1.2), "
        "for a follow-up as for a new task",
        exchange,
    )


TERMINAL_STREAM = Requirement(
    "a streamed message to a terminal task is refused (UnsupportedOperationError)", "MUST", "3.1.2", "7.2"
)


@on_wires(TERMINAL_STREAM, ALL_WIRES)
def test_stream_to_terminal_task_is_refused(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    task = agent.task_of(agent.say("one"))
    exchange = agent.stream(agent.message("two", task_id=task["id"], context_id=task["contextId"]))
    if wire.version == "1.0":
        expect_error(wire, exchange, UNSUPPORTED_OPERATION, "a completed task cannot accept further messages")
    else:
        assert error_seen(wire, exchange) is not None, explain(
            "0.3 7.2: a message to a terminal task will result in an error", exchange
        )
