"""Resource checks: whether one caller can hold the agent's resources without bound.

A task parked in input-required that never expires, a stream the server keeps open after
its task's final event, any number of tasks open at once. The first JSON-RPC and the first
HTTP+JSON interface are looked at; what a check opens it closes again (its tasks are
canceled), so the run leaves no more behind than a client that gave up.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arena_core.probes.base import (
    INTERRUPTED,
    PROBE_TEXT,
    TERMINAL,
    Answer,
    CheckRun,
    ProbeContext,
    Skip,
    check,
    read_answer,
    task_in,
)
from arena_core.probes.model import Severity
from arena_core.probes.wire import Exchange, Interface

LIMIT_STATUSES = frozenset({429, 503})
_LIMIT_WORDS = re.compile(
    r"\b(?:limits?|limited|too many|quota|capacity|rate[- ]limit(?:ed)?|exceed(?:s|ed)?|overload(?:ed)?)\b",
    re.IGNORECASE,
)
_LIMIT_TEXT_CHARS = 2_000
_EXPIRY_KEY = re.compile(r"expir|ttl|deadline", re.IGNORECASE)
_UPDATES = ("statusUpdate", "artifactUpdate")


@dataclass
class _Parked:
    """A task of the probe's first caller left in input-required."""

    interface: Interface
    task_id: str
    exchange: Exchange
    fresh: bool
    state_after: str | None = None


def _interfaces(ctx: ProbeContext) -> list[Interface]:
    """The first JSON-RPC and the first HTTP+JSON interface (either may be missing)."""
    chosen: list[Interface] = []
    for binding in ("jsonrpc", "http+json"):
        chosen += [interface for interface in ctx.interfaces if interface.binding == binding][:1]
    return chosen


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


def _task(interface: Interface, exchange: Exchange) -> dict[str, Any] | None:
    answer = read_answer(interface, exchange)
    return task_in(interface, answer.payload) if answer.served else None


def _state_of(interface: Interface, task: dict[str, Any] | None) -> str | None:
    status = task.get("status") if task else None
    return interface.state_name(status.get("state")) if isinstance(status, dict) else None


def refused_for_limit(interface: Interface, exchange: Exchange) -> bool:
    """A 429 or 503, or an error (JSON-RPC or HTTP) whose text names a limit."""
    if exchange.status in LIMIT_STATUSES:
        return True
    answer = read_answer(interface, exchange)
    if answer.served or exchange.status is None:
        return False
    failed = answer.error_code is not None or exchange.status >= 400
    return failed and _LIMIT_WORDS.search(exchange.body[:_LIMIT_TEXT_CHARS]) is not None


def final_event(interface: Interface) -> Callable[[Any], bool]:
    """A predicate on a stream event's JSON: the task reached a terminal or interrupted state (or a
    0.3 ``final: true`` update, or the reply is a Message, which ends a stream by itself)."""

    def final(document: Any) -> bool:
        payload = document.get("result") if interface.jsonrpc and isinstance(document, dict) else document
        if not isinstance(payload, dict):
            return False
        if (
            payload.get("final") is True
            or payload.get("kind") == "message"
            or isinstance(payload.get("message"), dict)
        ):
            return True
        for item in (task_in(interface, payload), *(payload.get(key) for key in _UPDATES)):
            if isinstance(item, dict) and (
                item.get("final") is True or _state_of(interface, item) in TERMINAL | INTERRUPTED
            ):
                return True
        return False

    return final


def _streamed_task(interface: Interface, exchange: Exchange) -> tuple[str | None, str | None]:
    """The id of the task a stream was about, and the last state it showed."""
    task_id: str | None = None
    state: str | None = None
    for document in exchange.event_documents():
        payload = document.get("result") if interface.jsonrpc and isinstance(document, dict) else document
        if not isinstance(payload, dict):
            continue
        task = task_in(interface, payload)
        found = [(task, task.get("id"))] if task is not None else []
        for item in (payload, *(payload.get(key) for key in _UPDATES)):
            if isinstance(item, dict) and "taskId" in item:
                found.append((item, item.get("taskId")))
        for item, named in found:
            task_id = task_id or (named if isinstance(named, str) else None)
            state = _state_of(interface, item) or state
    return task_id, state


def _announces_expiry(task: dict[str, Any] | None) -> str | None:
    """A metadata key of the task or its status that speaks of expiry (``expiresAt``, ``ttl``...)."""
    if not task:
        return None
    status = task.get("status")
    for holder in (task, status if isinstance(status, dict) else {}):
        metadata = holder.get("metadata")
        for key in metadata if isinstance(metadata, dict) else {}:
            if isinstance(key, str) and _EXPIRY_KEY.search(key):
                return key
    return None


@check(
    "resources.parked-forever",
    "resources",
    "A task waiting for input never expires",
    Severity.LOW,
    remediation=(
        "Expire tasks left in input-required (or auth-required) after an idle timeout: move them to a "
        "terminal state (canceled or failed) and free what they hold."
    ),
)
async def parked_forever(ctx: ProbeContext, run: CheckRun) -> None:
    """A fresh task of the probe (the shared one when the agent refuses another), left in
    input-required, is read back after the run's wait (``wait_s``). A finding when it is still
    input-required and neither it nor its status names an expiry. Skipped when the agent does not
    park the probe's task in input-required."""
    parked: list[_Parked] = []
    others: list[str] = []
    try:
        for interface in _interfaces(ctx):
            found = await _parked_task(ctx, interface)
            if isinstance(found, str):
                others.append(f"{interface.label}: {found}")
            else:
                parked.append(found)
        if not parked:
            raise Skip(f"the agent did not leave the probe's task in input-required ({'; '.join(others)})")
        wait = ctx.options.wait_s
        left = ctx.session.time_left()
        if left <= wait:
            raise Skip(f"the run has {left:.1f} s left, less than the wait of {wait:g} s")
        await asyncio.sleep(wait)
        for task in parked:
            await _still_parked(ctx, run, task, wait)
    finally:
        for task in parked:
            if task.fresh and task.state_after not in TERMINAL:
                await ctx.session.cancel_task(task.interface, task.task_id, identity=ctx.first)


async def _parked_task(ctx: ProbeContext, interface: Interface) -> _Parked | str:
    """A fresh task in input-required (it is the run's own to cancel), else the shared one; or why none."""
    exchange = await ctx.session.send_message(interface, PROBE_TEXT, identity=ctx.first)
    task = _task(interface, exchange)
    if task is not None and isinstance(task.get("id"), str):
        state = _state_of(interface, task)
        if state == "input-required":
            return _Parked(interface, task["id"], exchange, fresh=True)
        if state not in TERMINAL:
            await ctx.session.cancel_task(interface, task["id"], identity=ctx.first)
        return f"a new task is {state or 'of no state'}"
    try:
        mine = await ctx.own_task(interface)
    except Skip as why:
        return str(why)
    if mine.state != "input-required":
        return f"the probe's task is {mine.state or 'of no state'}"
    return _Parked(interface, mine.task_id, mine.exchange, fresh=False)


async def _still_parked(ctx: ProbeContext, run: CheckRun, parked: _Parked, wait: float) -> None:
    interface = parked.interface
    exchange = await ctx.session.get_task(interface, parked.task_id, identity=ctx.first)
    answer = read_answer(interface, exchange)
    task = _task(interface, exchange)
    state = parked.state_after = _state_of(interface, task)
    expiry = _announces_expiry(task)
    if state == "input-required" and expiry is None:
        run.find(
            f"{interface.label}: the probe's task {parked.task_id} is still input-required after at least "
            f"{wait:g} s, with no sign that it will expire",
            evidence=[parked.exchange, exchange],
            interface=interface,
        )
    elif state == "input-required":
        run.note(
            f"{interface.label}: still input-required after {wait:g} s, but it names an expiry ({expiry})"
        )
    else:
        run.note(f"{interface.label}: after {wait:g} s the task is {state or _described(answer)}")


@check(
    "resources.stream-never-closes",
    "resources",
    "A stream is not closed after its task's final event",
    Severity.LOW,
    remediation=(
        "Close the SSE stream once the task reaches a terminal or interrupted state (the final event); "
        "bound every stream's lifetime."
    ),
)
async def stream_never_closes(ctx: ProbeContext, run: CheckRun) -> None:
    """SendStreamingMessage, read until the task's final event (a terminal or interrupted state; a 0.3
    ``final: true``), then ``stream_grace_s`` more. A finding when the server still holds the stream
    open after that. Needs streaming in the card."""
    if not ctx.surface.streaming:
        raise Skip("the card does not offer streaming")
    grace = ctx.options.stream_grace_s
    longest = grace + ctx.options.timeout_s
    looked = 0
    for interface in _interfaces(ctx):
        final = final_event(interface)
        exchange = await ctx.session.stream_message(
            interface,
            PROBE_TEXT,
            identity=ctx.first,
            until=final,
            grace_s=grace,
            max_s=longest,
            idle_s=longest,
        )
        answer = read_answer(interface, exchange)
        if exchange.events is None or not answer.served:
            run.note(f"{interface.label}: SendStreamingMessage not served ({_described(answer)})")
            continue
        looked += 1
        task_id, state = _streamed_task(interface, exchange)
        if not any(final(document) for document in exchange.event_documents()):
            run.note(f"{interface.label}: no final event within {longest:g} s")
        elif not exchange.closed:
            run.find(
                f"{interface.label}: the server still held the stream open {grace:g} s after the final event "
                f"(task {task_id or 'unknown'}, {state or 'state unknown'})",
                evidence=[exchange],
                interface=interface,
            )
        else:
            run.note(f"{interface.label}: closed after the final event")
        if task_id is not None and state not in TERMINAL:
            await ctx.session.cancel_task(interface, task_id, identity=ctx.first)
    if not looked:
        raise Skip("; ".join(run.looked) or "no JSON-RPC or HTTP+JSON interface")


@check(
    "resources.concurrent-tasks",
    "resources",
    "One caller can open any number of tasks at once",
    Severity.LOW,
    remediation=(
        "Limit the tasks one caller may hold open at once (and in total); answer beyond the limit with "
        "HTTP 429 or a JSON-RPC error saying so."
    ),
)
async def concurrent_tasks(ctx: ProbeContext, run: CheckRun) -> None:
    """``concurrent_tasks`` SendMessage requests from one caller, all at once. A finding when every one
    is served (none answered 429, 503 or with an error naming a limit). The tasks made are canceled."""
    count = ctx.options.concurrent_tasks
    looked = 0
    for interface in _interfaces(ctx):
        async with ctx.session.burst():
            outcomes = await asyncio.gather(
                *(ctx.session.send_message(interface, PROBE_TEXT, identity=ctx.first) for _ in range(count)),
                return_exceptions=True,
            )
        exchanges = [outcome for outcome in outcomes if isinstance(outcome, Exchange)]
        broke = next((outcome for outcome in outcomes if isinstance(outcome, BaseException)), None)
        try:
            if broke is not None:
                raise broke
            looked += _count(run, interface, exchanges, count)
        finally:
            await _cancel_made(ctx, interface, exchanges)
    if not looked:
        raise Skip("; ".join(run.looked) or "no JSON-RPC or HTTP+JSON interface")


def _count(run: CheckRun, interface: Interface, exchanges: list[Exchange], count: int) -> bool:
    """Served against refused; whether the answers say anything (some served, or refused for a limit)."""
    answers = [read_answer(interface, exchange) for exchange in exchanges]
    served = sum(answer.served for answer in answers)
    refused = [exchange for exchange in exchanges if refused_for_limit(interface, exchange)]
    kinds = ", ".join(sorted({_described(answer) for answer in answers}))
    if not served and not refused:
        run.note(f"{interface.label}: no task could be opened ({kinds})")
        return False
    if served == count:
        run.find(
            f"{interface.label}: {count} tasks opened at once by one caller were all accepted (no 429, no "
            "error naming a limit)",
            evidence=[exchanges[0], exchanges[-1]],
            interface=interface,
        )
    elif refused:
        run.note(f"{interface.label}: {len(refused)} of {count} refused for a limit, {served} served")
    else:
        run.note(f"{interface.label}: {served} of {count} served, none refused for a limit ({kinds})")
    return True


async def _cancel_made(ctx: ProbeContext, interface: Interface, exchanges: list[Exchange]) -> None:
    """Cancel, as the caller that made them, the tasks among ``exchanges`` that are not over."""
    for exchange in exchanges:
        task = _task(interface, exchange)
        if task is None or not isinstance(task.get("id"), str) or _state_of(interface, task) in TERMINAL:
            continue
        await ctx.session.cancel_task(interface, task["id"], identity=ctx.first)
