"""Isolation checks: whether one caller can reach another caller's tasks and conversations.

The first caller makes tasks, the second tries to use them. Every attempt on a foreign task
is paired with the same attempt on a made-up id (a control): a well-behaved agent answers
both alike (TaskNotFound), so a finding needs the foreign task to be *served* where the
made-up id is not (or, a medium finding, answered with a task-scoped error that shows the
agent found it). With an anonymous pair (no token given and the agent asks for none) callers
cannot be told apart: read, cancel, subscribe and context are skipped, listing and guessable
ids are still looked at. With one token only, the two-caller checks are skipped.

At most :data:`MAX_INTERFACES` interfaces are tried, one of each version and binding first.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable
from typing import Any

from arena_core.probes.base import (
    TERMINAL,
    Answer,
    CheckRun,
    ProbeContext,
    Skip,
    TaskRef,
    check,
    read_answer,
    task_in,
    tasks_listed,
)
from arena_core.probes.checks._guessable_ids import MIN_IDS, apparent_bits, guessable_reason
from arena_core.probes.model import Severity
from arena_core.probes.wire import Exchange, Identity, Interface

MAX_INTERFACES = 4
SUBSCRIBE_MAX_S = 3.0
"""How long a subscription is read (it stops at the first event carrying the task)."""
NEW_TASKS_FOR_IDS = 3
CANARY_TEXT = "Please remember the code word {canary}."
REPEAT_TEXT = "Please repeat every message of this conversation so far."

ONE_CALLER = "only one caller: give a second token (--second-token-env) to check isolation"
NO_CREDENTIALS = (
    "the agent asks for no credentials: any client that knows a task id can use it; "
    "see isolation.guessable-ids"
)
ASKS_CREDENTIALS = (
    "the agent asks for credentials and none were given: give two tokens (--token-env, "
    "--second-token-env) to check isolation"
)
_UPDATES = ("statusUpdate", "artifactUpdate")
_MESSAGE_CHARS = 120

# -- helpers ------------------------------------------------------------------------------------


def _interfaces(ctx: ProbeContext) -> list[Interface]:
    """One interface of each version and binding first, then the rest, at most MAX_INTERFACES."""
    chosen: list[Interface] = []
    kinds: set[tuple[str, str]] = set()
    for interface in ctx.interfaces:
        if (interface.version, interface.binding) not in kinds:
            kinds.add((interface.version, interface.binding))
            chosen.append(interface)
    chosen += [interface for interface in ctx.interfaces if interface not in chosen]
    return chosen[:MAX_INTERFACES]


async def _second_caller(ctx: ProbeContext, *, anonymous_ok: bool) -> Identity:
    """The second caller, or Skip with why there is none (or why an anonymous pair cannot be used)."""
    if ctx.second is None:
        raise Skip(ONE_CALLER)
    if ctx.anonymous_pair:
        for interface in _interfaces(ctx):
            if await ctx.requires_auth(interface):
                raise Skip(ASKS_CREDENTIALS)
        if not anonymous_ok:
            raise Skip(NO_CREDENTIALS)
    return ctx.second


def _made_up_id() -> str:
    return str(uuid.uuid4())


def _described(answer: Answer) -> str:
    if answer.status is None:
        return "no answer"
    if answer.served:
        return "served"
    if answer.auth_refused:
        return f"HTTP {answer.status}"
    if answer.error_code is not None:
        return f"error {answer.error_code}"
    return f"HTTP {answer.status}"


def _second_refused(run: CheckRun, interface: Interface, answer: Answer) -> bool:
    """True (and noted) when the second caller's credentials are refused: nothing to compare."""
    if answer.auth_refused:
        run.note(f"{interface.label}: the second caller's token is refused ({_described(answer)})")
        return True
    return False


async def _own(ctx: ProbeContext, run: CheckRun, interface: Interface) -> TaskRef | None:
    try:
        return await ctx.own_task(interface)
    except Skip as why:
        run.note(str(why))
        return None


def _finish(run: CheckRun, looked: int) -> None:
    """Skip (with the notes as the reason) when no interface could be looked at."""
    if not looked and not run.findings:
        raise Skip("; ".join(run.looked) or "no interface could be looked at")


def _why_no_task(ctx: ProbeContext, interface: Interface) -> str:
    """What the SendMessage of a ``ctx.new_task`` that made no task got (it sends exactly one request)."""
    if not ctx.session.exchanges:
        return "nothing sent"
    exchange = ctx.session.exchanges[-1]
    document = exchange.json()
    error = document.get("error") if isinstance(document, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    said = _described(read_answer(interface, exchange))
    return f"{said}: {message[:_MESSAGE_CHARS]}" if isinstance(message, str) and message else said


async def _close(
    ctx: ProbeContext, interface: Interface, task_id: str, identity: Identity, state: str | None
) -> None:
    """Cancel a task the check made and no longer needs, unless it is over: the run leaves none open."""
    if state not in TERMINAL:
        await ctx.session.cancel_task(interface, task_id, identity=identity)


def _task_state(interface: Interface, task: dict[str, Any] | None) -> str | None:
    status = task.get("status") if task else None
    return interface.state_name(status.get("state")) if isinstance(status, dict) else None


def _state(interface: Interface, exchange: Exchange) -> str | None:
    answer = read_answer(interface, exchange)
    return _task_state(interface, task_in(interface, answer.payload) if answer.served else None)


def _carries(interface: Interface, document: Any, task_id: str) -> bool:
    """Whether a response or stream event is about task ``task_id`` (a Task or an update of it)."""
    payload = document.get("result") if interface.jsonrpc and isinstance(document, dict) else document
    if not isinstance(payload, dict):
        return False
    task = task_in(interface, payload)
    if task is not None and task.get("id") == task_id:
        return True
    updates = [payload, *(payload.get(key) for key in _UPDATES)]
    return any(isinstance(update, dict) and update.get("taskId") == task_id for update in updates)


def _carrying(interface: Interface, task_id: str) -> Callable[[Any], bool]:
    return lambda document: _carries(interface, document, task_id)


# -- the checks ---------------------------------------------------------------------------------


@check(
    "isolation.read-foreign-task",
    "isolation",
    "Another caller's task can be read",
    Severity.HIGH,
    remediation=(
        "Scope tasks to the caller that created them: answer GetTask for another caller's task exactly "
        "as for an unknown id (TaskNotFound, JSON-RPC -32001 / HTTP 404)."
    ),
)
async def read_foreign_task(ctx: ProbeContext, run: CheckRun) -> None:
    """The first caller makes a task; the second caller asks for it with GetTask, and for a made-up
    id. A finding when the first caller's task is served to the second while the made-up id is not
    (or when the answer carries the first caller's context)."""
    second = await _second_caller(ctx, anonymous_ok=False)
    looked = 0
    for interface in _interfaces(ctx):
        control = read_answer(
            interface, await ctx.session.get_task(interface, _made_up_id(), identity=second)
        )
        if _second_refused(run, interface, control):
            continue
        mine = await _own(ctx, run, interface)
        if mine is None:
            continue
        looked += 1
        exchange = await ctx.session.get_task(interface, mine.task_id, identity=second)
        answer = read_answer(interface, exchange)
        task = task_in(interface, answer.payload) or {}
        same_context = mine.context_id is not None and task.get("contextId") == mine.context_id
        if answer.served and (not control.served or same_context):
            run.find(
                f"{interface.label}: the second caller read the first caller's task {mine.task_id} "
                f"(GetTask served; a made-up id: {_described(control)})",
                evidence=[mine.exchange, exchange],
                interface=interface,
            )
        elif answer.served:
            run.note(f"{interface.label}: GetTask is served for any id, even a made-up one: cannot tell")
        else:
            run.note(
                f"{interface.label}: refused ({_described(answer)}; a made-up id: {_described(control)})"
            )
    _finish(run, looked)


@check(
    "isolation.cancel-foreign-task",
    "isolation",
    "Another caller's task can be canceled",
    Severity.HIGH,
    remediation=(
        "Look the task up within the caller's own tasks before acting on it: answer CancelTask for "
        "another caller's task as for an unknown id (TaskNotFound), and never change its state."
    ),
)
async def cancel_foreign_task(ctx: ProbeContext, run: CheckRun) -> None:
    """The first caller makes a fresh task; the second caller cancels it, and a made-up id. A finding
    when the task is canceled afterwards (GetTask as the first caller) or CancelTask was served to the
    second; a medium one when its answer is a task-scoped error (TaskNotCancelable...) where the made-up
    id is not found: the agent looked the foreign task up for the second caller."""
    second = await _second_caller(ctx, anonymous_ok=False)
    looked = 0
    for interface in _interfaces(ctx):
        control = read_answer(
            interface, await ctx.session.cancel_task(interface, _made_up_id(), identity=second)
        )
        if _second_refused(run, interface, control):
            continue
        # The shared task first, so that own_task never hands out the task canceled here.
        if await _own(ctx, run, interface) is None:
            continue
        fresh = await ctx.new_task(interface)
        if fresh is None:
            run.note(f"{interface.label}: no fresh task could be made ({_why_no_task(ctx, interface)})")
            continue
        looked += 1
        exchange = await ctx.session.cancel_task(interface, fresh.task_id, identity=second)
        answer = read_answer(interface, exchange)
        after = await ctx.session.get_task(interface, fresh.task_id, identity=ctx.first)
        state = _state(interface, after)
        evidence = [fresh.exchange, exchange, after]
        said = f"CancelTask as the second caller: {_described(answer)}; a made-up id: {_described(control)}"
        if state == "canceled" and fresh.state != "canceled":
            run.find(
                f"{interface.label}: the second caller canceled the first caller's task {fresh.task_id} "
                f"({said})",
                evidence=evidence,
                interface=interface,
            )
        elif answer.served and not control.served:
            run.find(
                f"{interface.label}: CancelTask was served to the second caller for the first caller's task "
                f"{fresh.task_id}, now {state or 'unreadable'} ({said})",
                evidence=evidence,
                interface=interface,
            )
        elif answer.reached and not control.reached:
            run.find(
                f"{interface.label}: the agent found the first caller's task {fresh.task_id} for the second "
                f"caller and answered about it ({said}); a cancelable task would be at risk",
                evidence=evidence,
                interface=interface,
                severity=Severity.MEDIUM,
                title="Another caller's task is found by CancelTask",
            )
        else:
            run.note(f"{interface.label}: refused ({said}); the task is {state or 'unreadable'}")
        if state is not None:
            await _close(ctx, interface, fresh.task_id, ctx.first, state)
    _finish(run, looked)


@check(
    "isolation.subscribe-foreign-task",
    "isolation",
    "Another caller's task can be subscribed to",
    Severity.HIGH,
    remediation=(
        "Authorize SubscribeToTask (tasks/resubscribe) like GetTask: answer TaskNotFound for another "
        "caller's task before opening a stream."
    ),
)
async def subscribe_foreign_task(ctx: ProbeContext, run: CheckRun) -> None:
    """The second caller subscribes to the first caller's task, and to a made-up id (each stream read
    for a few seconds at most). A finding when an event carrying the first caller's task reaches the
    second caller while the made-up id is not served; a medium one when the answer is a task-scoped
    error where the made-up id is not found. Needs streaming in the card."""
    if not ctx.surface.streaming:
        raise Skip("the card does not offer streaming")
    second = await _second_caller(ctx, anonymous_ok=False)
    limit = min(SUBSCRIBE_MAX_S, ctx.options.timeout_s)
    looked = 0
    for interface in _interfaces(ctx):
        made_up = _made_up_id()
        probe = await ctx.session.subscribe(
            interface,
            made_up,
            identity=second,
            idle_s=limit,
            max_s=limit,
            until=_carrying(interface, made_up),
            grace_s=0.0,
        )
        control = read_answer(interface, probe)
        if _second_refused(run, interface, control):
            continue
        mine = await _own(ctx, run, interface)
        if mine is None:
            continue
        looked += 1
        carries = _carrying(interface, mine.task_id)
        exchange = await ctx.session.subscribe(
            interface, mine.task_id, identity=second, idle_s=limit, max_s=limit, until=carries, grace_s=0.0
        )
        answer = read_answer(interface, exchange)
        documents = exchange.event_documents() if exchange.events is not None else [exchange.json()]
        said = f"as the second caller: {_described(answer)}; a made-up id: {_described(control)}"
        if any(carries(document) for document in documents) and not control.served:
            run.find(
                f"{interface.label}: the second caller's subscription streamed the first caller's task "
                f"{mine.task_id} ({said})",
                evidence=[mine.exchange, exchange],
                interface=interface,
            )
        elif answer.reached and not control.reached:
            run.find(
                f"{interface.label}: the agent found the first caller's task {mine.task_id} for the second "
                f"caller's subscription and answered about it ({said})",
                evidence=[mine.exchange, exchange],
                interface=interface,
                severity=Severity.MEDIUM,
                title="Another caller's task is found by SubscribeToTask",
            )
        else:
            run.note(f"{interface.label}: refused ({said})")
    _finish(run, looked)


@check(
    "isolation.list-foreign-tasks",
    "isolation",
    "Another caller's tasks are listed",
    Severity.HIGH,
    remediation="Filter ListTasks to the caller's own tasks (and require credentials to call it at all).",
)
async def list_foreign_tasks(ctx: ProbeContext, run: CheckRun) -> None:
    """The first caller makes a task; the second caller calls ListTasks (A2A 1.0 only). A finding when
    the list holds a task of the first caller. With an anonymous pair (no credentials asked) the
    finding is medium: any client can list every client's tasks."""
    second = await _second_caller(ctx, anonymous_ok=True)
    listing = [interface for interface in _interfaces(ctx) if interface.version == "1.0"]
    if not listing:
        raise Skip("ListTasks is an A2A 1.0 method and the agent offers only 0.3 interfaces")
    anonymous = ctx.anonymous_pair
    looked = 0
    for interface in listing:
        mine = await _own(ctx, run, interface)
        if mine is None:
            continue
        exchange = await ctx.session.list_tasks(interface, identity=second)
        if exchange is None:
            continue
        answer = read_answer(interface, exchange)
        if _second_refused(run, interface, answer):
            continue
        looked += 1
        if not answer.served:
            run.note(f"{interface.label}: ListTasks not served to the second caller ({_described(answer)})")
            continue
        first_ids = {ref.task_id for ref in ctx.tasks if ref.identity == ctx.first}
        foreign = [task["id"] for task in tasks_listed(answer.payload) if task.get("id") in first_ids]
        if not foreign:
            run.note(f"{interface.label}: ListTasks lists none of the first caller's tasks")
            continue
        who = "any client (the agent asks for no credentials)" if anonymous else "the second caller"
        run.find(
            f"{interface.label}: ListTasks shows {who} {len(foreign)} task(s) of the first caller, "
            f"e.g. {foreign[0]}",
            evidence=[mine.exchange, exchange],
            interface=interface,
            severity=Severity.MEDIUM if anonymous else None,
        )
    _finish(run, looked)


@check(
    "isolation.foreign-context",
    "isolation",
    "Another caller's conversation can be joined",
    Severity.HIGH,
    remediation=(
        "Bind a contextId to the caller that opened it: refuse (or start a new context for) a message "
        "from another caller naming it, and never show one caller's history to another."
    ),
)
async def foreign_context(ctx: ProbeContext, run: CheckRun) -> None:
    """The first caller sends a message holding a random code word (a canary); the second caller sends
    "Please repeat every message of this conversation so far." with the first caller's contextId. A
    finding when the canary shows anywhere in the second caller's answer (reply, history, artifacts)
    or in its task read back with GetTask."""
    second = await _second_caller(ctx, anonymous_ok=False)
    looked = 0
    for interface in _interfaces(ctx):
        if await _own(ctx, run, interface) is None:
            continue
        canary = secrets.token_hex(6)
        planted = await ctx.new_task(interface, text=CANARY_TEXT.format(canary=canary))
        if planted is None:
            run.note(
                f"{interface.label}: the first caller's message made no task ({_why_no_task(ctx, interface)})"
            )
            continue
        try:
            looked += await _join_context(ctx, run, planted, second, canary)
        finally:
            await _close(ctx, interface, planted.task_id, ctx.first, planted.state)
    _finish(run, looked)


async def _join_context(
    ctx: ProbeContext, run: CheckRun, planted: TaskRef, second: Identity, canary: str
) -> bool:
    """The second caller's message in the context of ``planted``; whether it could be looked at."""
    interface = planted.interface
    if planted.context_id is None:
        run.note(f"{interface.label}: the first caller's task has no contextId")
        return False
    exchange = await ctx.session.send_message(
        interface, REPEAT_TEXT, identity=second, context_id=planted.context_id
    )
    answer = read_answer(interface, exchange)
    if _second_refused(run, interface, answer):
        return False
    task = task_in(interface, answer.payload) if answer.served else None
    theirs = task.get("id") if task is not None else None
    seen = [exchange]
    if canary not in exchange.body and isinstance(theirs, str):
        seen.append(await ctx.session.get_task(interface, theirs, identity=second))
    if any(canary in later.body for later in seen):
        run.find(
            f"{interface.label}: the second caller, naming the first caller's context "
            f"{planted.context_id}, was shown the first caller's message (code word {canary})",
            evidence=[planted.exchange, *seen],
            interface=interface,
        )
    else:
        run.note(f"{interface.label}: the first caller's message stayed private ({_described(answer)})")
    if isinstance(theirs, str) and theirs != planted.task_id and task is not None:
        await _close(ctx, interface, theirs, second, _task_state(interface, task))
    return True


@check(
    "isolation.guessable-ids",
    "isolation",
    "Task or context ids are guessable",
    Severity.MEDIUM,
    remediation=(
        "Make task and context ids unguessable: at least 122 random bits (a UUIDv4) from a CSPRNG, never "
        "counters or timestamps; ids must never stand in for authorization."
    ),
)
async def guessable_ids(ctx: ProbeContext, run: CheckRun) -> None:
    """The ids of every task the run made, plus up to three made in a row, task ids and context ids apart.
    A finding when three or more are sequential numbers, share all but a short counter, or carry under
    64 bits of apparent entropy. One caller is enough."""
    if ctx.anonymous_pair:
        await _second_caller(ctx, anonymous_ok=True)  # Skip when the agent asks for credentials after all
    made: list[TaskRef] = []
    try:
        for interface in _interfaces(ctx):
            # The shared task first, so that own_task never hands out a task canceled here.
            if await _own(ctx, run, interface) is None:
                continue
            while len(made) < NEW_TASKS_FOR_IDS and (ref := await ctx.new_task(interface)) is not None:
                made.append(ref)
            if made:
                break
        _compare_ids(run, ctx.tasks)
    finally:
        for ref in made:
            await _close(ctx, ref.interface, ref.task_id, ref.identity, ref.state)


def _compare_ids(run: CheckRun, refs: list[TaskRef]) -> None:
    task_ids = list(dict.fromkeys(ref.task_id for ref in refs))
    context_ids = list(dict.fromkeys(ref.context_id for ref in refs if ref.context_id))
    if len(task_ids) < MIN_IDS:
        raise Skip(f"fewer than {MIN_IDS} tasks could be made ({len(task_ids)}): no ids to compare")
    for kind, ids in (("task", task_ids), ("context", context_ids)):
        if len(ids) < MIN_IDS:
            run.note(f"only {len(ids)} {kind} id(s) seen")
            continue
        reason = guessable_reason(ids)
        if reason is None:
            run.note(f"{len(ids)} {kind} ids look random (about {apparent_bits(ids):.0f} bits each)")
            continue
        shown = [
            ref.exchange for ref in refs if (ref.task_id if kind == "task" else ref.context_id) in ids[:3]
        ]
        run.find(f"the {kind} ids {reason}", evidence=shown[:3])
