"""The attacker's A2A executor: the "red-team a target" skill.

Input: a message holding a :class:`~arena_core.match_models.MatchRequest` as a DataPart (or a
text part of JSON), or a plain-text sentence naming the target
(:mod:`arena_attacker.match_request_input`). The task then streams one ``working`` status
update per turn (a text summary plus the :class:`~arena_core.match_models.TurnRecord` as a
DataPart), adds the :class:`~arena_core.match_models.MatchResult` as the ``match-result``
artifact and ends ``completed``, or ``failed`` when the match ended in error.

Input that is not a match: a structured request (DataPart, JSON) that is not valid fails the
task at once with a message naming every problem. A message with nothing to read, or a
sentence that cannot be read one way only or asks for a match this attacker cannot play,
parks the task in ``input-required`` with what to send (:mod:`arena_attacker.request_help`:
the two forms, the request's JSON schema, an example). A follow-up in that task (same taskId
and contextId) with a valid request, either form, starts the match in that task.

The ``probe`` skill: a DataPart ``{"probe": {...}}`` runs the protocol security probes against
its target instead of a match (:mod:`arena_attacker.probe_skill`), in one of the same places.

While a match runs, the task also gets a bare ``working`` status every
:data:`HEARTBEAT_S` seconds: a client following the task by polling (its stream
broke, e.g. the replica serving it died) sees the status timestamp move while
the match lives, and a task whose attacker was killed stops moving
(:data:`arena_core.a2a.client.attacker.STALL_LIMIT_S`).

One process plays at most ``max_active_matches`` matches at once
(``ARENA_ATTACKER_MAX_ACTIVE_MATCHES``). A valid request beyond that fails its task at
once, before anything is sent to the target, with error kind ``attacker_busy``
(``metadata.arena.error`` of the status message, as every refusal here) and a message naming
the setting; the orchestrator tries it again after a backoff. A match's place is given back
however it ends (result, error, cancel, the client gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from a2a.helpers import new_data_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, TaskState

from arena_attacker.match_request_input import is_structured, read_match_request, read_probe_request
from arena_attacker.match_runner import MatchRunner
from arena_attacker.plain_text_request import UnclearRequestError
from arena_attacker.probe_skill import run_probe_task
from arena_attacker.request_help import help_parts
from arena_core.a2a.task_opening import open_task
from arena_core.errors import ArenaError, AttackerBusyError, InvalidInputError
from arena_core.match_models import (
    MATCH_RESULT_MEDIA_TYPE,
    TURN_MEDIA_TYPE,
    MatchRequest,
    MatchResult,
    TurnRecord,
)

logger = logging.getLogger(__name__)

HEARTBEAT_S = 10.0


SUMMARY_TEXT_CHARS = 200
"""How much of each side's text a turn's status line quotes (the turn record has it all)."""


def turn_summary(record: TurnRecord) -> str:
    """One human-readable line per turn for status messages, quoting the start of each side."""
    mark = "WON" if record.verdict.success else "held"
    return (
        f"turn {record.turn}{' (new conversation)' if record.new_conversation else ''}: "
        f"attacker: {_quote(record.attacker_text)} / defender: {_quote(record.defender_text)} / "
        f"{record.verdict.judge} judge: {mark}"
    )


def _quote(text: str) -> str:
    if len(text) <= SUMMARY_TEXT_CHARS:
        return repr(text)
    return f"{text[:SUMMARY_TEXT_CHARS]!r}... ({len(text) - SUMMARY_TEXT_CHARS} more characters)"


def result_summary(result: MatchResult) -> str:
    """The final status line of a match."""
    if result.outcome == "error":
        return f"match error after {result.turns_used} turn(s): {result.error}"
    if result.outcome == "attacker_won":
        return f"attacker won in {result.turns_used} turn(s) ({result.resets} reset(s))"
    return f"defended: {result.turns_used} turn(s), {result.resets} reset(s), phrase never said"


class AttackerExecutor(AgentExecutor):
    """Runs one match per task with a shared :class:`MatchRunner`, at most
    ``max_active_matches`` at once (None: no limit)."""

    def __init__(self, runner: MatchRunner, *, max_active_matches: int | None = None) -> None:
        self._runner = runner
        self._max_active = max_active_matches
        self._active = 0

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        opened = await open_task(context, event_queue)
        if opened is None:
            return
        message, updater = opened
        try:
            probe = read_probe_request(message)
        except InvalidInputError as exc:
            await updater.failed(_text(updater, exc.message, exc.kind))
            return
        if probe is not None:
            await self._limited(updater, run_probe_task(probe, self._runner, updater))
            return
        try:
            request = read_match_request(message)
            self._runner.validate(request)
        except InvalidInputError as exc:
            if isinstance(exc, UnclearRequestError) or not is_structured(message):
                # A person or a generic agent: say what to send, and keep the task for the reply.
                await updater.requires_input(updater.new_agent_message(parts=help_parts(exc.message)))
                return
            await updater.failed(_text(updater, exc.message, exc.kind))
            return
        except ArenaError as exc:
            await updater.failed(_text(updater, exc.message, exc.kind))
            return
        await self._limited(updater, self._play(request, updater, updater.task_id))

    async def _limited(self, updater: TaskUpdater, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (a match or a probe run) in one of the ``max_active_matches`` places."""
        if self._max_active is not None and self._active >= self._max_active:
            work.close()
            busy = AttackerBusyError(
                f"this attacker is busy: it already plays {self._max_active} matches, its limit "
                "(ARENA_ATTACKER_MAX_ACTIVE_MATCHES); nothing was started, try again later"
            )
            await updater.failed(_text(updater, busy.message, busy.kind))
            return
        # Taken and given back without an await in between checks: one event loop, no lock needed.
        self._active += 1
        try:
            await work
        finally:
            self._active -= 1

    async def _play(self, request: MatchRequest, updater: TaskUpdater, task_id: str) -> None:
        await updater.start_work(
            _text(updater, f"red-teaming {request.target} with '{request.strategy}'", None)
        )

        async def on_turn(record: TurnRecord) -> None:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING,
                message=updater.new_agent_message(
                    parts=[
                        Part(text=turn_summary(record)),
                        new_data_part(record.model_dump(mode="json"), media_type=TURN_MEDIA_TYPE),
                    ]
                ),
            )

        heartbeat = asyncio.create_task(_heartbeat(updater), name=f"heartbeat-{task_id}")
        try:
            result = await self._runner.run(request, on_turn=on_turn)
        except ArenaError as exc:
            # Configuration problems found late, e.g. no API key for the attacker model.
            await _stop(heartbeat)
            await updater.failed(_text(updater, exc.message, exc.kind))
            return
        finally:
            await _stop(heartbeat)
        await updater.add_artifact(
            [new_data_part(result.model_dump(mode="json"), media_type=MATCH_RESULT_MEDIA_TYPE)],
            name="match-result",
        )
        summary = _text(updater, result_summary(result), result.error_kind)
        if result.outcome == "error":
            await updater.failed(summary)
        else:
            await updater.complete(summary)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        if task_id is None or context_id is None:
            return
        await TaskUpdater(event_queue, task_id, context_id).cancel()


async def _heartbeat(updater: TaskUpdater) -> None:
    """A bare ``working`` status every HEARTBEAT_S seconds, so pollers see the match is alive."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        try:
            await updater.update_status(TaskState.TASK_STATE_WORKING)
        except RuntimeError:  # the task reached a terminal state meanwhile
            return


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _text(updater: TaskUpdater, text: str, error_kind: str | None) -> Message:
    metadata = {"arena": {"error": error_kind}} if error_kind else None
    return updater.new_agent_message(parts=[Part(text=text)], metadata=metadata)


__all__ = ["AttackerExecutor", "result_summary", "turn_summary"]
