"""GetTask, ListTasks, CancelTask and SubscribeToTask (0.3: tasks/get, tasks/cancel, tasks/resubscribe).

ListTasks exists in 1.0 only: A2A 0.3 has no ``tasks/list`` JSON-RPC method (its
method table says "gRPC/REST only") and a2a-sdk serves no 0.3 HTTP+JSON list route.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from conformance.spec import Requirement, on_wires
from conformance.wire import (
    ALL_WIRES,
    INVALID_PARAMS,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    V10_WIRES,
    Agent,
    Exchange,
    SseEvent,
    Wire,
    expect_error,
    explain,
)

pytestmark = pytest.mark.system

UNKNOWN = "no-such-task-conformance"


def conversation(agent: Agent, turns: int) -> tuple[dict[str, Any], list[Exchange]]:
    """``turns`` messages in one task (input-required mode: each follow-up names the task)."""
    exchanges = [agent.say("turn-1")]
    task = agent.task_of(exchanges[0])
    for turn in range(2, turns + 1):
        exchanges.append(agent.say(f"turn-{turn}", task_id=task["id"], context_id=task["contextId"]))
        agent.task_of(exchanges[-1], f"turn {turn} must continue the task")
    return task, exchanges


# --- GetTask ------------------------------------------------------------------------------------

GET_TASK = Requirement("GetTask returns the task's current state", "MUST", "3.1.3", "7.3")


@on_wires(GET_TASK, ALL_WIRES)
def test_get_task_returns_the_task(agent: Agent) -> None:
    sent = agent.task_of(agent.say("hello"))
    exchange = agent.get_task(sent["id"])
    task = agent.task_of(exchange)
    assert (task.get("id"), task.get("contextId")) == (sent["id"], sent["contextId"]), explain(
        "GetTask must return the task asked for", exchange
    )
    assert agent.state_of(task) == agent.state_of(sent), explain(
        "the state is the task's current one", exchange
    )
    assert agent.reply_of(task) == "turn 1: hello", explain("the status keeps the reply", exchange)


HISTORY_LENGTH = Requirement(
    "GetTask returns at most historyLength messages, the most recent",
    "MUST",
    "3.1.3",
    "7.3.1",
    level_v03="SHOULD",
)


@on_wires(HISTORY_LENGTH, ALL_WIRES)
def test_get_task_history_length_bounds_the_history(parking_agent: Agent) -> None:
    agent = parking_agent
    task, _ = conversation(agent, 2)
    full_exchange = agent.get_task(task["id"])
    full = agent.task_of(full_exchange).get("history") or []
    assert len(full) >= 3, explain("two turns keep at least 3 messages (user, agent, user)", full_exchange)
    for limit in (1, 2):
        exchange = agent.get_task(task["id"], history_length=limit)
        history = agent.task_of(exchange).get("history") or []
        assert len(history) <= limit, explain(f"historyLength {limit}: at most {limit} messages", exchange)
        assert history == full[-len(history) :], explain(
            f"historyLength {limit}: the most recent messages", full_exchange, exchange
        )


HISTORY_ZERO = Requirement("GetTask with historyLength 0 omits the history", "SHOULD", "3.2.4")


@on_wires(HISTORY_ZERO, V10_WIRES)
def test_get_task_history_length_zero_omits_history(agent: Agent) -> None:
    sent = agent.task_of(agent.say("hello"))
    exchange = agent.get_task(sent["id"], history_length=0)
    assert "history" not in agent.task_of(exchange), explain(
        "historyLength 0: the field SHOULD be omitted", exchange
    )


GET_UNKNOWN = Requirement(
    "GetTask of an unknown task gets TaskNotFoundError", "MUST", "3.1.3", "8.2", level_v03="SHOULD"
)


@on_wires(GET_UNKNOWN, ALL_WIRES)
def test_get_unknown_task_is_task_not_found(agent: Agent, wire: Wire) -> None:
    expect_error(wire, agent.get_task(UNKNOWN), TASK_NOT_FOUND, "GetTask of an unknown id")


# --- ListTasks (1.0) --------------------------------------------------------------------------------


def three_tasks(agent: Agent) -> tuple[str, list[str]]:
    """Three tasks in one new context (complete mode: each turn is a task); return it and their ids."""
    first = agent.task_of(agent.say("list-1"))
    ids = [first["id"]]
    for turn in (2, 3):
        ids.append(agent.task_of(agent.say(f"list-{turn}", context_id=first["contextId"]))["id"])
    return first["contextId"], ids


def listed(agent: Agent, exchange: Exchange) -> dict[str, Any]:
    page = agent.result(exchange, "ListTasks must succeed")
    assert isinstance(page, dict) and isinstance(page.get("tasks"), list), explain(
        "expected {tasks: [...]}", exchange
    )
    return page


LIST_SHAPE = Requirement(
    "ListTasks returns tasks, nextPageToken (always; empty on the last page), pageSize, totalSize",
    "MUST",
    "3.1.4",
)


@on_wires(LIST_SHAPE, V10_WIRES)
def test_list_tasks_response_fields(completing_agent: Agent) -> None:
    agent = completing_agent
    context, ids = three_tasks(agent)
    exchange = agent.list_tasks(contextId=context)
    page = listed(agent, exchange)
    assert page.get("nextPageToken") == "", explain(
        "the last page's nextPageToken MUST be present and empty", exchange
    )
    assert isinstance(page.get("pageSize"), int), explain("pageSize is required", exchange)
    assert page.get("totalSize") == len(ids), explain(
        f"totalSize: the {len(ids)} tasks of the context", exchange
    )


LIST_FILTER = Requirement("ListTasks filters by contextId and status", "MUST", "3.1.4")


@on_wires(LIST_FILTER, V10_WIRES)
def test_list_tasks_filters(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    context, ids = three_tasks(agent)
    by_context = agent.list_tasks(contextId=context)
    got = [task.get("id") for task in listed(agent, by_context)["tasks"]]
    assert sorted(got) == sorted(ids), explain(f"contextId filter: expected exactly {ids}", by_context)
    working = agent.list_tasks(contextId=context, status=wire.state("working"))
    assert listed(agent, working)["tasks"] == [], explain("no task of the context is working", working)
    completed = agent.list_tasks(contextId=context, status=wire.state("completed"))
    assert len(listed(agent, completed)["tasks"]) == len(ids), explain("all of them are completed", completed)


LIST_ORDER = Requirement("ListTasks sorts by status timestamp, most recent first", "MUST", "3.1.4")


@on_wires(LIST_ORDER, V10_WIRES)
def test_list_tasks_most_recent_first(completing_agent: Agent) -> None:
    agent = completing_agent
    context, ids = three_tasks(agent)
    exchange = agent.list_tasks(contextId=context)
    tasks = listed(agent, exchange)["tasks"]
    assert [task["id"] for task in tasks] == ids[::-1], explain(
        f"expected {ids[::-1]} (last updated first)", exchange
    )
    stamps = [task["status"].get("timestamp", "") for task in tasks]
    assert stamps == sorted(stamps, reverse=True), explain(f"timestamps {stamps} not descending", exchange)


LIST_PAGES = Requirement("ListTasks pages with pageSize and a pageToken cursor", "MUST", "3.1.4")


@on_wires(LIST_PAGES, V10_WIRES)
def test_list_tasks_cursor_pagination(completing_agent: Agent) -> None:
    agent = completing_agent
    context, ids = three_tasks(agent)
    seen: list[str] = []
    token: str | None = None
    pages: list[Exchange] = []
    for _ in range(len(ids) + 1):
        params: dict[str, Any] = {"contextId": context, "pageSize": 1}
        if token:
            params["pageToken"] = token
        pages.append(agent.list_tasks(**params))
        page = listed(agent, pages[-1])
        assert len(page["tasks"]) <= 1, explain("pageSize 1: at most one task per page", pages[-1])
        seen += [task["id"] for task in page["tasks"]]
        token = page.get("nextPageToken")
        assert isinstance(token, str), explain("nextPageToken MUST always be present", pages[-1])
        if token == "":
            break
    assert seen == ids[::-1], explain(f"the pages must walk all of {ids[::-1]} once, got {seen}", *pages)


LIST_PAGE_SIZE_LIMIT = Requirement("ListTasks refuses a pageSize over 100 (invalid params)", "MUST", "3.1.4")


@on_wires(LIST_PAGE_SIZE_LIMIT, V10_WIRES)
def test_list_tasks_page_size_limit(agent: Agent, wire: Wire) -> None:
    exchange = agent.list_tasks(pageSize=101)
    expect_error(
        wire, exchange, INVALID_PARAMS, "pageSize: the maximum value is 100 (3.3.2: validate every input)"
    )


LIST_ARTIFACTS = Requirement(
    "ListTasks omits artifacts unless includeArtifacts, then includes them", "MUST", "3.1.4"
)


@on_wires(LIST_ARTIFACTS, V10_WIRES)
def test_list_tasks_artifacts(completing_agent: Agent) -> None:
    agent = completing_agent
    context, _ = three_tasks(agent)
    default = agent.list_tasks(contextId=context)
    assert all("artifacts" not in task for task in listed(agent, default)["tasks"]), explain(
        "includeArtifacts false (the default): the field MUST be omitted entirely", default
    )
    included = agent.list_tasks(contextId=context, includeArtifacts=True)
    assert all(task.get("artifacts") for task in listed(agent, included)["tasks"]), explain(
        "includeArtifacts true: each completed turn's reply artifact (SHOULD be included)", included
    )


LIST_HISTORY = Requirement("ListTasks returns at most historyLength messages per task", "MUST", "3.1.4")


@on_wires(LIST_HISTORY, V10_WIRES)
def test_list_tasks_history_length(parking_agent: Agent) -> None:
    agent = parking_agent
    task, _ = conversation(agent, 2)
    for limit in (0, 1):
        exchange = agent.list_tasks(contextId=task["contextId"], historyLength=limit)
        tasks = listed(agent, exchange)["tasks"]
        assert tasks and all(len(t.get("history") or []) <= limit for t in tasks), explain(
            f"historyLength {limit}: at most {limit} messages per task (3.2.4)", exchange
        )


# --- CancelTask --------------------------------------------------------------------------------

CANCEL = Requirement("CancelTask of an open task returns it canceled", "MUST", "3.1.5", "7.4")


@on_wires(CANCEL, ALL_WIRES)
def test_cancel_open_task(parking_agent: Agent) -> None:
    agent = parking_agent
    task = agent.task_of(agent.say("cancel me"))
    exchange = agent.cancel(task["id"])
    canceled = agent.task_of(exchange, "CancelTask returns the updated Task")
    assert canceled.get("id") == task["id"] and agent.state_of(canceled) == "canceled", explain(
        "the returned task is the one canceled, in the canceled state", exchange
    )
    after = agent.get_task(task["id"])
    assert agent.state_of(agent.task_of(after)) == "canceled", explain(
        "the task stays canceled", exchange, after
    )


CANCEL_TERMINAL = Requirement(
    "CancelTask of a terminal task gets TaskNotCancelableError", "MUST", "3.1.5", "8.2", level_v03="SHOULD"
)


@on_wires(CANCEL_TERMINAL, ALL_WIRES)
def test_cancel_terminal_task_is_not_cancelable(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    task = agent.task_of(agent.say("done"))
    assert agent.state_of(task) == "completed"
    expect_error(wire, agent.cancel(task["id"]), TASK_NOT_CANCELABLE, "a completed task cannot be canceled")


CANCEL_UNKNOWN = Requirement(
    "CancelTask of an unknown task gets TaskNotFoundError", "MUST", "3.1.5", "8.2", level_v03="SHOULD"
)


@on_wires(CANCEL_UNKNOWN, ALL_WIRES)
def test_cancel_unknown_task_is_task_not_found(agent: Agent, wire: Wire) -> None:
    expect_error(wire, agent.cancel(UNKNOWN), TASK_NOT_FOUND, "CancelTask of an unknown id")


# --- SubscribeToTask ------------------------------------------------------------------------------

SUBSCRIBE = Requirement(
    "SubscribeToTask streams the task (1.0: the Task first) and ends when it reaches a terminal state",
    "MUST",
    "3.1.6",
    "7.9",
)


@on_wires(SUBSCRIBE, ALL_WIRES)
def test_subscribe_to_open_task(parking_agent: Agent, wire: Wire) -> None:
    agent = parking_agent
    task = agent.task_of(agent.say("watch me"))
    canceled: list[Exchange] = []

    def cancel_once_subscribed(_: SseEvent) -> None:
        canceled.append(agent.cancel(task["id"]))

    exchange = agent.subscribe(task["id"], after_first=cancel_once_subscribed)
    assert exchange.status == 200 and exchange.is_stream, explain(
        "SubscribeToTask answers an SSE stream", exchange
    )
    payloads = agent.stream_payloads(exchange)
    kinds = [agent.event_kind(payload) for payload in payloads]
    assert kinds, explain("the subscription carried no event", exchange)
    if wire.version == "1.0":
        assert kinds[0] == "task", explain(
            f"event kinds {kinds}: the first event MUST be the Task (3.1.6)", exchange
        )
        first = agent.event_body(payloads[0])
        assert first.get("id") == task["id"] and agent.state_of(first) == "input-required", explain(
            "the first event is the task in its current state", exchange
        )
    assert canceled and agent.state_of(agent.task_of(canceled[0])) == "canceled", explain(
        "the task was canceled during the subscription", *canceled
    )
    last = agent.event_body(payloads[-1])
    assert kinds[-1] == "statusUpdate" and agent.wire.state_name((last.get("status") or {}).get("state")) == (
        "canceled"
    ), explain("the subscriber sees the task reach canceled", exchange)
    assert exchange.closed, explain(
        "the stream MUST terminate when the task reaches a terminal state", exchange
    )
    if wire.version == "0.3":
        assert last.get("final") is True, explain(
            "0.3 7.2.2: the last status update says final: true", exchange
        )


BROADCAST = Requirement(
    "every open stream of a task gets the same events, in the same order", "MUST", "3.5.2"
)


@on_wires(BROADCAST, V10_WIRES)
def test_two_subscribers_get_the_same_events(parking_agent: Agent) -> None:
    agent = parking_agent
    task = agent.task_of(agent.say("watch me twice"))
    inner: list[Exchange] = []
    canceled: list[Exchange] = []

    def second_subscriber(_: SseEvent) -> None:
        def cancel(_: SseEvent) -> None:
            canceled.append(agent.cancel(task["id"]))

        inner.append(agent.subscribe(task["id"], after_first=cancel))

    outer = agent.subscribe(task["id"], after_first=second_subscriber)
    assert inner and canceled, explain("the second subscription and the cancel must have run", outer)
    streams = (outer, inner[0])
    updates = [
        [agent.event_body(p).get("status", {}).get("state") for p in agent.stream_payloads(s)[1:]]
        for s in streams
    ]
    assert updates[0] == updates[1] and updates[0][-1:] == [agent.wire.state("canceled")], explain(
        f"both streams must see the same updates ending in canceled: {updates}", *streams, *canceled
    )
    assert all(s.closed for s in streams), explain("both streams end at the terminal state", *streams)


SUBSCRIBE_TERMINAL = Requirement(
    "SubscribeToTask of a terminal task gets UnsupportedOperationError", "MUST", "3.1.6"
)


@on_wires(SUBSCRIBE_TERMINAL, V10_WIRES)
def test_subscribe_to_terminal_task_is_refused(completing_agent: Agent, wire: Wire) -> None:
    agent = completing_agent
    task = agent.task_of(agent.say("done"))
    exchange = agent.subscribe(task["id"])
    expect_error(wire, exchange, UNSUPPORTED_OPERATION, "a completed task cannot be subscribed to")


SUBSCRIBE_UNKNOWN = Requirement(
    "SubscribeToTask of an unknown task gets TaskNotFoundError", "MUST", "3.1.6", "8.2", level_v03="SHOULD"
)


@on_wires(SUBSCRIBE_UNKNOWN, ALL_WIRES)
def test_subscribe_to_unknown_task_is_task_not_found(agent: Agent, wire: Wire) -> None:
    exchange = agent.subscribe(f"{UNKNOWN}-{uuid.uuid4().hex[:6]}")
    expect_error(wire, exchange, TASK_NOT_FOUND, "SubscribeToTask of an unknown id")
