"""SendMessage (1.0) / message/send (0.3): responses, multi-turn conversations, the data model on the wire.

Turn-mode-dependent requirements use the defender in the mode where they apply:
``parking_agent`` (input-required: tasks stay open for follow-ups by taskId),
``completing_agent`` (complete: each turn's task is terminal).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.checks import message_problems, messages_in, non_camel_keys, part_problems, timestamp_problem
from conformance.spec import Requirement, on_wires
from conformance.wire import (
    A2A_JSON,
    ALL_WIRES,
    INTERRUPTED_STATES,
    JSONRPC_WIRES,
    REST_WIRES,
    TASK_NOT_FOUND,
    TERMINAL_STATES,
    UNSUPPORTED_OPERATION,
    V10_WIRES,
    Agent,
    Wire,
    error_seen,
    expect_error,
    explain,
)

pytestmark = pytest.mark.system


def first_turn(agent: Agent, text: str = "hello") -> dict[str, Any]:
    """Start a conversation; return its Task."""
    return agent.task_of(agent.say(text), "a new message must be answered with a Task")


RETURNS = Requirement("SendMessage returns a Task or a Message", "MUST", "3.1.1", "7.1")


@on_wires(RETURNS, ALL_WIRES)
def test_send_message_returns_a_task_or_a_message(agent: Agent, wire: Wire) -> None:
    exchange = agent.say("hello")
    payload = agent.result(exchange)
    if wire.version == "0.3" and wire.jsonrpc:
        assert isinstance(payload, dict) and payload.get("kind") in {"task", "message"}, explain(
            "0.3 7.1: the result is a Task or a Message (kind task/message)", exchange
        )
    else:
        present = [key for key in ("task", "message") if key in payload]
        assert len(present) == 1, explain(
            "1.0 9.4.1/10.4.1 (0.3 7.1): a SendMessageResponse holds exactly one of task, message", exchange
        )
    task = agent.task_in(payload, exchange)
    assert agent.reply_of(task) == "turn 1: hello", explain("the task answers this message", exchange)


BLOCKING = Requirement(
    "a blocking SendMessage returns the task in a terminal or interrupted state", "MUST", "3.2.2"
)


@on_wires(BLOCKING, V10_WIRES)
def test_blocking_send_waits_for_terminal_or_interrupted_state(agent: Agent) -> None:
    exchange = agent.say("wait for me")
    task = agent.task_of(exchange)
    state = agent.state_of(task)
    assert state in TERMINAL_STATES | INTERRUPTED_STATES, explain(
        f"returnImmediately unset: the answer must wait for a terminal or interrupted state, got {state}",
        exchange,
    )


RETURN_IMMEDIATELY = Requirement(
    "a non-blocking send returns the task in progress and processing continues",
    "MUST",
    "3.2.2",
    "7.1.1",
    level_v03="SHOULD",
)


@on_wires(RETURN_IMMEDIATELY, ALL_WIRES)
def test_non_blocking_send_returns_at_once_and_the_task_goes_on(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    configuration = {"returnImmediately": True} if wire.version == "1.0" else {"blocking": False}
    exchange = agent.send(agent.message("do not wait"), configuration)
    task = agent.task_of(exchange)
    state = agent.state_of(task)
    assert state in {"submitted", "working"}, explain(
        f"the task must come back while in progress (submitted/working), got {state}", exchange
    )
    deadline = time.monotonic() + 15
    while True:
        polled = agent.get_task(task["id"])
        if agent.state_of(agent.task_of(polled)) == "completed" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert agent.state_of(agent.task_of(polled)) == "completed", explain(
        "processing continues after the answer (1.0 3.1.1): the task completes", exchange, polled
    )


NEW_CONTEXT = Requirement(
    "a message without contextId gets a generated contextId in its Task", "MUST", "3.4.1", "6.1"
)


@on_wires(NEW_CONTEXT, ALL_WIRES)
def test_new_message_gets_a_context_id(agent: Agent) -> None:
    exchange = agent.say("new conversation")
    task = agent.task_of(exchange)
    assert isinstance(task.get("contextId"), str) and task["contextId"], explain(
        "the generated contextId must be in the Task", exchange
    )
    assert isinstance(task.get("id"), str) and task["id"], explain("the Task must have its id", exchange)


UNIQUE_TASK_IDS = Requirement("each new task gets a unique taskId", "MUST", "3.4.2", "6.1")


@on_wires(UNIQUE_TASK_IDS, ALL_WIRES)
def test_new_tasks_get_unique_ids(agent: Agent) -> None:
    first, second = agent.say("one"), agent.say("two")
    ids = {agent.task_of(first)["id"], agent.task_of(second)["id"]}
    assert len(ids) == 2, explain("two new tasks must not share an id", first, second)


UNKNOWN_TASK = Requirement(
    "a message naming an unknown taskId gets TaskNotFoundError", "MUST", "3.4.2", "8.2", level_v03="SHOULD"
)


@on_wires(UNKNOWN_TASK, ALL_WIRES)
def test_message_to_unknown_task_is_task_not_found(agent: Agent, wire: Wire) -> None:
    exchange = agent.say("anyone there?", task_id="no-such-task-conformance")
    expect_error(wire, exchange, TASK_NOT_FOUND, "a taskId MUST reference an existing task")


TASK_ONLY = Requirement(
    "a follow-up with taskId but no contextId continues the task in its context",
    "MUST",
    "3.4.3",
    "3.4.3(1.0)",
)


@on_wires(TASK_ONLY, ALL_WIRES)
def test_task_only_follow_up_infers_the_context(parking_agent: Agent) -> None:
    agent = parking_agent
    task = first_turn(agent, "one")
    assert agent.state_of(task) == "input-required", "the input-required defender parks its task"
    for turn, text in ((2, "two"), (3, "three")):
        exchange = agent.say(text, task_id=task["id"])
        follow = agent.task_of(exchange, f"turn {turn} (taskId only) must continue the task")
        assert (follow.get("id"), follow.get("contextId")) == (task["id"], task["contextId"]), explain(
            f"turn {turn}: the agent MUST infer contextId {task['contextId']} from task {task['id']}",
            exchange,
        )
        assert agent.state_of(follow) == "input-required", explain(
            f"turn {turn}: the task stays open", exchange
        )
        assert agent.reply_of(follow) == f"turn {turn}: {text}", explain(
            f"turn {turn}: the reply must come from the task's conversation (its turn {turn})", exchange
        )
        status_message = follow["status"]["message"]
        assert status_message.get("contextId") == task["contextId"], explain(
            "the reply belongs to the task's context", exchange
        )


MISMATCH = Requirement(
    "a message whose contextId differs from its task's is rejected", "MUST", "3.4.3", "3.4.3(1.0)"
)


@on_wires(MISMATCH, ALL_WIRES)
def test_mismatching_context_and_task_is_rejected(parking_agent: Agent, wire: Wire) -> None:
    agent = parking_agent
    task = first_turn(agent, "one")
    exchange = agent.say("two", task_id=task["id"], context_id="another-context-conformance")
    seen = error_seen(wire, exchange)
    assert seen is not None, explain("a contextId that is not the task's MUST be rejected", exchange)
    after = agent.get_task(task["id"])
    assert agent.reply_of(agent.task_of(after)) == "turn 1: one", explain(
        "the rejected message must not have been processed", exchange, after
    )


CONTEXT_ONLY = Requirement(
    "a follow-up with contextId only gets a new task in the same conversation, history kept",
    "SHOULD",
    "3.4.1",
    "3.4.1(1.0)",
)


@on_wires(CONTEXT_ONLY, ALL_WIRES)
def test_context_only_follow_up_is_a_new_task_in_the_conversation(agent: Agent) -> None:
    task = first_turn(agent, "one")
    exchange = agent.say("two", context_id=task["contextId"])
    follow = agent.task_of(exchange, "a contextId-only follow-up must be answered")
    assert follow.get("contextId") == task["contextId"], explain(
        "the follow-up stays in its context", exchange
    )
    assert follow.get("id") != task["id"], explain(
        "a contextId-only message starts a new task (1.0 3.4.3)", exchange
    )
    assert agent.reply_of(follow) == "turn 2: two", explain(
        "tasks of one contextId are one conversation: the model must see the first turn", exchange
    )


TERMINAL_REFUSES = Requirement(
    "a message to a task in a terminal state is refused (UnsupportedOperationError)", "MUST", "3.1.1", "7.1"
)


@on_wires(TERMINAL_REFUSES, ALL_WIRES)
def test_message_to_terminal_task_is_refused(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    task = first_turn(agent, "one")
    assert agent.state_of(task) == "completed", "the complete-mode defender completes each turn"
    exchange = agent.say("two", task_id=task["id"], context_id=task["contextId"])
    if wire.version == "1.0":
        expect_error(wire, exchange, UNSUPPORTED_OPERATION, "a completed task cannot accept further messages")
    else:
        assert error_seen(wire, exchange) is not None, explain(
            "0.3 7.1: sending a message to a terminal task will result in an error", exchange
        )


ENUMS = Requirement("task states and roles use the version's enum spelling", "MUST", "5.5", "6.3")


@on_wires(ENUMS, ALL_WIRES)
def test_states_and_roles_use_the_enum_spelling(agent: Agent, wire: Wire) -> None:
    exchange = agent.say("hello")
    task = agent.task_of(exchange)
    state = task.get("status", {}).get("state")
    assert state in {wire.state(s) for s in ("completed", "input-required")}, explain(
        f"state {state!r}: expected {wire.state('completed')!r} or {wire.state('input-required')!r}", exchange
    )
    roles = {where: message.get("role") for where, message in messages_in(task)}
    assert roles and set(roles.values()) <= {wire.role("user"), wire.role("agent")}, explain(
        f"roles {roles}: expected {wire.role('user')!r}/{wire.role('agent')!r}", exchange
    )


CAMEL_CASE = Requirement("response field names are camelCase", "MUST", "5.5", "6.1")


@on_wires(CAMEL_CASE, ALL_WIRES)
def test_response_field_names_are_camel_case(agent: Agent) -> None:
    exchange = agent.say("hello")
    bad = list(non_camel_keys(agent.result(exchange)))
    assert not bad, explain(f"field names that are not camelCase: {bad}", exchange)


TIMESTAMPS = Requirement("status timestamps are ISO 8601 (1.0: UTC, Z)", "MUST", "5.6.1", "6.2")


@on_wires(TIMESTAMPS, ALL_WIRES)
def test_status_timestamp_is_iso_8601(agent: Agent, wire: Wire) -> None:
    exchange = agent.say("hello")
    timestamp = agent.task_of(exchange)["status"].get("timestamp")
    problem = timestamp_problem(wire, timestamp)
    assert problem is None, explain(problem or "", exchange)


MESSAGES = Requirement(
    "messages have messageId, role and a non-empty list of well-formed parts", "MUST", "4.1.4", "6.4"
)


@on_wires(MESSAGES, ALL_WIRES)
def test_messages_are_well_formed(agent: Agent, wire: Wire) -> None:
    exchange = agent.say("hello")
    task = agent.task_of(exchange)
    problems: list[str] = []
    for where, message in messages_in(task):
        problems += message_problems(wire, where, message, "agent" if where == "status.message" else None)
    assert not problems, explain("\n".join(problems), exchange)


SERVER_MESSAGE_IDS = Requirement(
    "the agent's messages carry the contextId (and taskId) of their task", "MUST", "4.1.4"
)


@on_wires(SERVER_MESSAGE_IDS, V10_WIRES)
def test_agent_messages_carry_their_ids(agent: Agent) -> None:
    exchange = agent.say("hello")
    task = agent.task_of(exchange)
    message = task["status"].get("message") or {}
    assert (message.get("contextId"), message.get("taskId")) == (task["contextId"], task["id"]), explain(
        "1.0 4.1.4: for server messages, context_id must be provided, and task_id when a task was created",
        exchange,
    )


ARTIFACTS = Requirement("artifacts have an artifactId and at least one part", "MUST", "4.1.7", "6.7")


@on_wires(ARTIFACTS, ALL_WIRES)
def test_artifacts_are_well_formed(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    exchange = agent.say("hello")
    task = agent.task_of(exchange)
    artifacts = task.get("artifacts")
    assert isinstance(artifacts, list) and artifacts, explain(
        "a completed turn carries its reply artifact", exchange
    )
    problems = []
    ids = [artifact.get("artifactId") for artifact in artifacts]
    if not all(isinstance(i, str) and i for i in ids) or len(set(ids)) != len(ids):
        problems.append(f"artifactIds {ids}: required and unique within the task")
    for index, artifact in enumerate(artifacts):
        problems += part_problems(wire, f"artifacts[{index}].parts", artifact.get("parts"))
    assert not problems, explain("\n".join(problems), exchange)


SEND_HISTORY_LENGTH = Requirement("SendMessage honours historyLength (0: no history)", "MUST", "3.2.2")


@on_wires(SEND_HISTORY_LENGTH, V10_WIRES)
def test_send_message_honours_history_length(agent: Agent) -> None:
    exchange = agent.send(agent.message("hello"), {"historyLength": 0})
    task = agent.task_of(exchange)
    assert not task.get("history"), explain("historyLength 0: no messages (MUST NOT return more)", exchange)
    assert "history" not in task, explain(
        "historyLength 0: the history field SHOULD be omitted (3.2.4)", exchange
    )


UNKNOWN_FIELDS = Requirement("unrecognized request fields are ignored", "SHOULD", "5.7")


@on_wires(UNKNOWN_FIELDS, V10_WIRES)
def test_unrecognized_fields_are_ignored(agent: Agent) -> None:
    message = agent.message("hello") | {"conformanceFutureField": {"x": 1}}
    exchange = agent.send(message, {"conformanceFutureOption": True})
    task = agent.task_of(exchange, "a request with unknown fields must still be served")
    assert agent.reply_of(task) == "turn 1: hello", explain("the message must be answered", exchange)


JSONRPC_ENVELOPE = Requirement(
    "JSON-RPC responses carry jsonrpc 2.0, the request id and exactly one of result, error",
    "MUST",
    "9.3",
    "6.11.2",
)


@on_wires(JSONRPC_ENVELOPE, JSONRPC_WIRES)
def test_jsonrpc_envelope(agent: Agent, wire: Wire) -> None:
    method = "GetTask" if wire.version == "1.0" else "tasks/get"
    success = agent.rpc(method, {"id": agent.task_of(agent.say("hello"))["id"]}, request_id="conformance-7")
    failure = agent.rpc(method, {"id": "no-such-task-conformance"}, request_id=4242)
    for exchange, rid in ((success, "conformance-7"), (failure, 4242)):
        document = exchange.json()
        assert document.get("jsonrpc") == "2.0", explain('"jsonrpc" must be exactly "2.0"', exchange)
        assert document.get("id") == rid and type(document.get("id")) is type(rid), explain(
            f"the response id must be the request's {rid!r}", exchange
        )
        assert ("result" in document) != ("error" in document), explain(
            "exactly one of result and error", exchange
        )


JSONRPC_CONTENT_TYPE = Requirement("JSON-RPC responses are application/json", "MUST", "9.1", "3.2.1")


@on_wires(JSONRPC_CONTENT_TYPE, JSONRPC_WIRES)
def test_jsonrpc_content_type(agent: Agent, wire: Wire) -> None:
    success = agent.say("hello")
    failure = agent.get_task("no-such-task-conformance")
    for exchange in (success, failure):
        assert exchange.media_type == "application/json", explain(
            "JSON-RPC payloads are application/json (1.0 9.1; 0.3 3.2.1 MUST)", exchange
        )


REST_CONTENT_TYPE = Requirement(
    "HTTP+JSON responses use the binding's media type (1.0: application/a2a+json; 0.3: application/json)",
    "SHOULD",
    "11.1",
    "3.2.3",
    level_v03="MUST",
)


@on_wires(REST_CONTENT_TYPE, REST_WIRES)
def test_rest_content_type(agent: Agent, wire: Wire) -> None:
    expected = A2A_JSON if wire.version == "1.0" else "application/json"
    success = agent.say("hello")
    failure = agent.get_task("no-such-task-conformance")
    for exchange in (success, failure):
        assert exchange.media_type == expected, explain(f"expected Content-Type {expected}", exchange)


USAGE = Requirement(
    "reply metadata arena.usage holds camelCase integer token counts", "MUST", "arena", "arena"
)


def _usage_problems(metadata: Any) -> list[str]:
    usage = metadata.get("arena", {}).get("usage") if isinstance(metadata, dict) else None
    if not isinstance(usage, dict):
        return [f"metadata.arena.usage missing in {metadata!r}"]
    problems = []
    if set(usage) != {"promptTokens", "completionTokens"}:
        problems.append(f"usage keys {sorted(usage)}: expected promptTokens, completionTokens")
    problems += [
        f"usage.{name} = {value!r} is not a JSON integer"
        for name, value in usage.items()
        if not isinstance(value, int) or isinstance(value, bool)
    ]
    return problems


@on_wires(USAGE, ALL_WIRES)
def test_usage_metadata_is_camel_case_integers(agent: Agent) -> None:
    exchange = agent.say("hello")
    task = agent.task_of(exchange)
    problems = _usage_problems(task["status"]["message"].get("metadata"))
    streamed = agent.stream(agent.message("hello"))
    last = agent.event_body(agent.stream_payloads(streamed)[-1]) if streamed.events else {}
    problems += [
        f"stream: {p}" for p in _usage_problems((last.get("status") or {}).get("message", {}).get("metadata"))
    ]
    assert not problems, explain("\n".join(problems), exchange, streamed)
