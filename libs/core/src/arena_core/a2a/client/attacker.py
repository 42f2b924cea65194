"""Ask an attacker agent to play a match over A2A and follow it turn by turn.

Used by ``arena demo``, ``arena match --attacker URL`` and the orchestrator. The match runs
as a streaming task; each ``working`` status update carries a
:class:`~arena_core.match_models.TurnRecord`, the ``match-result`` artifact carries the
:class:`~arena_core.match_models.MatchResult`. If the stream breaks before the task ends, the
task is polled until it does.

The attacker is connected to as a target is (:func:`~arena_core.a2a.client.connect.connect`):
JSON-RPC or HTTP+JSON, whichever its card offers, and only that one interface. A refusal of
the egress guard surfaces as :class:`~arena_core.errors.TargetNotAllowedError` however the
HTTP or A2A client wrapped it, so that it is never taken for an unreachable attacker (and
retried).

An attacker that refuses a match because it already plays as many as it may
(``ARENA_ATTACKER_MAX_ACTIVE_MATCHES``: its task fails at once with error kind
``attacker_busy`` in the status message's ``metadata.arena.error``) raises
:class:`~arena_core.errors.AttackerBusyError`: nothing was played, the caller may try
again later.

:func:`run_remote_probe` asks the attacker's ``probe`` skill the same way (a DataPart
``{"probe": {...}}``): the task streams a status per check and ends ``completed`` with the
``probe-report`` artifact, or ``failed`` when the run could not start (the status message
says why, ``metadata.arena.error`` the kind).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from a2a.client import Client
from a2a.helpers import new_data_part
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError

from arena_core.a2a.client.cancel import cancel_task_quietly
from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.client.card_resolver import card_url_for
from arena_core.a2a.client.connect import AgentRole, Connection, connect
from arena_core.a2a.client.credentials import TargetCredentials
from arena_core.a2a.client.error_translation import raise_not_allowed_in, raise_refusal_in, status_in_chain
from arena_core.a2a.client.response_limits import ResponseRefusedError, ResponseTooLargeError
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.errors import (
    ArenaError,
    AttackerBusyError,
    ConfigError,
    InvalidInputError,
    TargetAuthError,
    TargetNotAllowedError,
    TargetProtocolError,
    TargetUnreachableError,
)
from arena_core.match_models import (
    MATCH_RESULT_MEDIA_TYPE,
    MAX_RECORDED_REPLY_BYTES,
    TURN_MEDIA_TYPE,
    MatchRequest,
    MatchResult,
    TurnRecord,
)
from arena_core.probes.model import PROBE_REPORT_MEDIA_TYPE, ProbeReport

if TYPE_CHECKING:
    # Not at run time: arena_core.probes.request imports the probe runner, whose wire module
    # imports arena_core.a2a (and with it this module).
    from arena_core.probes.request import ProbeRequest

TurnCallback = Callable[[TurnRecord], Awaitable[None]]
TaskCallback = Callable[[str], Awaitable[None]]
CANCEL_TIMEOUT_S = 5.0

_TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
POLL_INTERVAL_S = 0.5
STALL_LIMIT_S = 60.0
"""A polled task whose status has not moved this long is given up (the attacker heartbeats every 10 s)."""
STREAM_BYTES_BASE = 4_000_000
STREAM_BYTES_PER_TURN = 16 * MAX_RECORDED_REPLY_BYTES
"""A campaign's own attacker (``attackers[].url``, user input) may send at most
``STREAM_BYTES_BASE + max_turns * STREAM_BYTES_PER_TURN`` bytes in one response: room for every
turn twice (its turn record and the final transcript), each with a full recorded reply and as
much again for the attacker's own text, escaped for JSON at worst (a control character takes 6
bytes). The operator's attacker is not capped."""


class _Follower:
    """Collects turns and the result from the events of one attacker task."""

    def __init__(self, on_turn: TurnCallback | None, on_task: TaskCallback | None = None) -> None:
        self._on_turn = on_turn
        self._on_task = on_task
        self.seen_turns: set[int] = set()
        self.result: MatchResult | None = None
        self.probe_report: ProbeReport | None = None
        self.task_id: str | None = None
        self.state: int | None = None
        self.status_text = ""
        self.error_kind: str | None = None
        """The ``metadata.arena.error`` of the latest status message that had one."""
        self.cancel_sent = False
        """True once this side asked the attacker to cancel the task."""

    async def feed(self, event: StreamResponse) -> None:
        known = self.task_id
        await self._feed(event)
        if known is None and self.task_id is not None and self._on_task is not None:
            await self._on_task(self.task_id)

    async def _feed(self, event: StreamResponse) -> None:
        kind = event.WhichOneof("payload")
        if kind == "task":
            await self.feed_task(event.task)
        elif kind == "status_update":
            update = event.status_update
            self.task_id = update.task_id or self.task_id
            await self._status(update.status)
        elif kind == "artifact_update":
            self.task_id = event.artifact_update.task_id or self.task_id
            self._artifact_parts(event.artifact_update.artifact.parts)

    async def feed_task(self, task: Task) -> None:
        self.task_id = task.id or self.task_id
        for message in task.history:
            await self._turns_in(message.parts)
        for artifact in task.artifacts:
            self._artifact_parts(artifact.parts)
        await self._status(task.status)

    async def _status(self, status: Any) -> None:
        self.state = status.state
        if status.HasField("message"):
            texts = [p.text for p in status.message.parts if p.HasField("text")]
            if texts:
                self.status_text = "\n".join(texts)
            kind = _error_kind(status.message)
            if kind is not None:
                self.error_kind = kind
            await self._turns_in(status.message.parts)

    async def _turns_in(self, parts: Any) -> None:
        for part in parts:
            if part.HasField("data") and part.media_type == TURN_MEDIA_TYPE:
                try:
                    record = TurnRecord.model_validate(MessageToDict(part.data))
                except ValidationError as exc:
                    raise TargetProtocolError(f"attacker sent a malformed turn record: {exc}") from exc
                if record.turn in self.seen_turns:
                    continue
                self.seen_turns.add(record.turn)
                if self._on_turn is not None:
                    await self._on_turn(record)

    def _artifact_parts(self, parts: Any) -> None:
        for part in parts:
            if part.HasField("data") and part.media_type == MATCH_RESULT_MEDIA_TYPE:
                try:
                    self.result = MatchResult.model_validate(MessageToDict(part.data))
                except ValidationError as exc:
                    raise TargetProtocolError(f"attacker sent a malformed match result: {exc}") from exc
            elif part.HasField("data") and part.media_type == PROBE_REPORT_MEDIA_TYPE:
                try:
                    self.probe_report = ProbeReport.model_validate(MessageToDict(part.data))
                except ValidationError as exc:
                    raise TargetProtocolError(f"attacker sent a malformed probe report: {exc}") from exc

    @property
    def finished(self) -> bool:
        return self.state in _TERMINAL


async def play_remote_match(
    attacker_url: str,
    request: MatchRequest,
    *,
    on_turn: TurnCallback | None = None,
    on_task: TaskCallback | None = None,
    http: httpx.AsyncClient | None = None,
    timeout_s: float = 3600.0,
    guard: EgressGuard | None = None,
    token: str | None = None,
    card_cache: CardCache | None = None,
) -> MatchResult:
    """Have the attacker at ``attacker_url`` play ``request``; return its result.

    ``on_task`` is called once with the attacker's task id as soon as it is
    known. When the caller is cancelled (``asyncio.CancelledError``), the
    attacker's task is canceled too (best effort, bounded by
    ``CANCEL_TIMEOUT_S``), so an abandoned match stops spending model calls.

    Raises :class:`InvalidInputError` when the attacker rejected the request
    (the message says why), :class:`AttackerBusyError` when it refused it for
    want of room (``attacker_busy``: retry later), TargetError subclasses when the
    attacker itself cannot be reached or misbehaves.

    ``guard`` (for attacker URLs that came from user input, such as a campaign's
    ``attackers[].url``): the attacker's URL and the interface chosen from its
    card (the only one the client uses) are checked before any request, and the
    client made here checks every request; a refusal raises
    TargetNotAllowedError, however deep a library wrapped it. Such an attacker's
    responses are read to a bound (:func:`stream_limit_for`).

    ``token`` (``ARENA_ATTACKER_TOKEN``, for the operator's own attacker only) is
    sent as ``Authorization: Bearer`` to the attacker's origin and its chosen
    interface's (never over a downgrade from https). A 401 or 403 from the
    attacker raises ConfigError naming the setting: retrying would not help.

    ``card_cache`` keeps the attacker's card between matches (as its ``Cache-Control`` allows);
    the entry is dropped when the attacker cannot be reached or misbehaves.
    """
    follower = await _drive(
        attacker_url,
        request.model_dump(mode="json", exclude_none=True),
        _Follower(on_turn, on_task),
        http=http,
        timeout_s=timeout_s,
        guard=guard,
        token=token,
        # A campaign's attacker (guarded: user input) is read to a bound, like a target.
        max_response_bytes=stream_limit_for(request) if guard is not None else None,
        card_cache=card_cache,
    )
    if follower.result is not None:
        return follower.result
    reason = follower.status_text or "no reason given"
    if follower.error_kind == AttackerBusyError.kind:
        raise AttackerBusyError(f"attacker {attacker_url} refused the match: {reason}")
    raise InvalidInputError(f"the attacker did not play the match: {reason}")


@dataclass(frozen=True, slots=True)
class RemoteProbe:
    """How an attacker's ``probe`` task ended: its report, or why there is none."""

    report: ProbeReport | None
    error_kind: str | None = None
    """The ``metadata.arena.error`` of a failed task (``target_unreachable``, ...); None with a report."""
    error: str | None = None
    """The failed task's status text."""


async def run_remote_probe(
    attacker_url: str,
    request: ProbeRequest,
    *,
    on_task: TaskCallback | None = None,
    http: httpx.AsyncClient | None = None,
    timeout_s: float = 3600.0,
    token: str | None = None,
    card_cache: CardCache | None = None,
) -> RemoteProbe:
    """Have the attacker at ``attacker_url`` run the protocol probes of ``request``.

    Returns the ``probe-report`` artifact, or, when the task ended without one (``failed``:
    a token variable not set, the target refused by the allowlist, no card), the kind and
    text of its last status. Only the operator's own attacker is asked (``token`` as in
    :func:`play_remote_match`); a cancel of the caller cancels the attacker's task. Raises
    :class:`AttackerBusyError` when the attacker refused for want of room, and what
    :func:`play_remote_match` raises when the attacker cannot be reached or misbehaves.
    """
    follower = await _drive(
        attacker_url,
        {"probe": request.model_dump(mode="json", exclude_none=True)},
        _Follower(None, on_task),
        http=http,
        timeout_s=timeout_s,
        guard=None,
        token=token,
        max_response_bytes=None,
        card_cache=card_cache,
    )
    if follower.probe_report is not None:
        return RemoteProbe(follower.probe_report)
    reason = follower.status_text or "no reason given"
    if follower.error_kind == AttackerBusyError.kind:
        raise AttackerBusyError(f"attacker {attacker_url} refused the probe run: {reason}")
    return RemoteProbe(None, follower.error_kind or InvalidInputError.kind, reason)


async def _drive(
    attacker_url: str,
    payload: dict[str, Any],
    follower: _Follower,
    *,
    http: httpx.AsyncClient | None,
    timeout_s: float,
    guard: EgressGuard | None,
    token: str | None,
    max_response_bytes: int | None,
    card_cache: CardCache | None,
) -> _Follower:
    """Send ``payload`` (a DataPart) to the attacker and follow its task to the end; the failures
    of reaching the attacker translated as :func:`play_remote_match` says. The attacker's card
    leaves ``card_cache`` when the attacker cannot be reached or misbehaves
    (:meth:`CardCache.forget_after`), so the next match reads it again."""
    credentials = TargetCredentials.bearer(token, card_url_for(attacker_url)) if token else None
    sent = credentials is not None
    connection: Connection | None = None
    try:
        try:
            connection = await connect(
                attacker_url,
                AgentRole.ATTACKER,
                timeout_s=timeout_s,
                http=http,
                credentials=credentials,
                guard=guard,
                max_response_bytes=max_response_bytes,
                card_cache=card_cache,
            )
            await _follow(connection.client, attacker_url, payload, follower, timeout_s, sent=sent)
            return follower
        except TargetAuthError as exc:  # the attacker's card itself asked for credentials
            raise ConfigError(
                f"attacker {attacker_url} refused to show its card ({exc.message}); "
                "ARENA_ATTACKER_TOKEN must be one of its ARENA_API_TOKENS"
            ) from exc
        except ArenaError as exc:
            if not isinstance(exc, TargetNotAllowedError):
                raise_not_allowed_in(exc)  # e.g. the card fetch's "unreachable" over a wrapped refusal
            raise
        except TimeoutError as exc:
            raise TargetUnreachableError(
                f"attacker {attacker_url} did not finish within {timeout_s:g} s"
            ) from exc
        except (A2AError, httpx.HTTPError) as exc:
            # A2AError: client errors and the JSON-RPC errors the attacker answered; an HTTP
            # error: the attacker went away while its task was being polled.
            _raise_known_failure_in(exc, attacker_url, sent=sent)
            failed = TargetProtocolError if isinstance(exc, A2AError) else TargetUnreachableError
            raise failed(f"attacker {attacker_url} failed: {exc}") from exc
        except Exception as exc:
            # e.g. a refusal inside an exception group, or a response refused from inside the
            # SDK's reading, unwrapped
            _raise_refusal_in(exc, attacker_url)
            raise
    except ArenaError as exc:  # as translated above
        if card_cache is not None:
            card_cache.forget_after(exc, card_url_for(attacker_url))
        raise
    finally:
        if connection is not None:
            await connection.close()


async def _follow(
    client: Client,
    attacker_url: str,
    payload: dict[str, Any],
    follower: _Follower,
    timeout_s: float,
    *,
    sent: bool,
) -> None:
    """Send ``payload`` to the attacker and feed its task's events to ``follower`` until it ends."""
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[new_data_part(payload)])
    try:
        async with asyncio.timeout(timeout_s):
            try:
                async for event in client.send_message(SendMessageRequest(message=message)):
                    await follower.feed(event)
            except (A2AError, httpx.HTTPError) as exc:
                _raise_known_failure_in(exc, attacker_url, sent=sent)
                if follower.task_id is None:
                    raise TargetUnreachableError(f"attacker {attacker_url} failed: {exc}") from exc
            # The stream ended or broke before the task did: poll the task to its end.
            await _poll_to_end(client, follower, attacker_url)
    except (asyncio.CancelledError, TimeoutError, ArenaError):
        # Abandoned (cancel, timeout, or a failure the worker will retry elsewhere): the
        # attacker must not go on playing it against the target.
        if follower.task_id is not None and not follower.finished and not follower.cancel_sent:
            await _cancel_quietly(client, follower.task_id, attacker_url)
        raise


async def _poll_to_end(client: Client, follower: _Follower, attacker_url: str) -> None:
    """Poll the task until it ends; a task that stops moving for STALL_LIMIT_S is given up.

    Our attacker refreshes a running task's status every few seconds (a heartbeat),
    so a status that stays the same that long means the process running the match
    is gone (killed, or stopped past its grace) while the task lives on in shared
    state. The task is canceled and the failure is retryable, so the match is
    played again elsewhere instead of waiting for the match timeout.
    """
    loop = asyncio.get_running_loop()
    seen: tuple[object, ...] | None = None
    changed_at = loop.time()
    while not follower.finished:
        if follower.task_id is None:
            raise TargetProtocolError(f"attacker {attacker_url} never created a task")
        await asyncio.sleep(POLL_INTERVAL_S)
        task = await client.get_task(GetTaskRequest(id=follower.task_id))
        await follower.feed_task(task)
        signature = (task.status.state, task.status.timestamp.ToNanoseconds(), len(task.history))
        if signature != seen:
            seen, changed_at = signature, loop.time()
        elif not follower.finished and loop.time() - changed_at > STALL_LIMIT_S:
            await _cancel_quietly(client, follower.task_id, attacker_url)
            follower.cancel_sent = True
            raise TargetUnreachableError(
                f"attacker {attacker_url}: task {follower.task_id} showed no progress for "
                f"{STALL_LIMIT_S:g} s after the stream broke (the process playing it is probably gone)"
            )


def _error_kind(message: Message) -> str | None:
    """The arena error kind an attacker put in a status message's metadata, if any."""
    if not message.HasField("metadata"):
        return None
    arena = MessageToDict(message.metadata).get("arena")
    kind = arena.get("error") if isinstance(arena, dict) else None
    return kind if isinstance(kind, str) else None


def _raise_if_refused(exc: BaseException, attacker_url: str, *, sent: bool) -> None:
    """A 401/403 from the attacker is a setting to fix, never worth a retry."""
    status = status_in_chain(exc)
    if status not in (401, 403):
        return
    reason = "401 Unauthorized" if status == 401 else "403 Forbidden"
    if not sent:
        fix = "it asks for a token: set ARENA_ATTACKER_TOKEN to one of the attacker's ARENA_API_TOKENS"
    elif status == 401:
        fix = "it refused the token sent: ARENA_ATTACKER_TOKEN must be one of the attacker's ARENA_API_TOKENS"
    else:
        fix = "the token sent is read-only there: ARENA_ATTACKER_TOKEN must be one of its ARENA_API_TOKENS"
    raise ConfigError(f"attacker {attacker_url} answered {reason}: {fix}") from exc


def stream_limit_for(request: MatchRequest) -> int:
    """The most bytes a campaign's own attacker may send in one response for ``request``."""
    return STREAM_BYTES_BASE + request.max_turns * STREAM_BYTES_PER_TURN


def _raise_known_failure_in(exc: BaseException, attacker_url: str, *, sent: bool) -> None:
    """Raise the refusal, the refused response or the 401/403 behind ``exc``, if any."""
    _raise_refusal_in(exc, attacker_url)
    _raise_if_refused(exc, attacker_url, sent=sent)


def _raise_refusal_in(exc: BaseException, attacker_url: str) -> None:
    """Raise the egress refusal behind ``exc`` (TargetNotAllowedError), or the response refused
    past the campaign attacker's bound (TargetProtocolError of that attacker: the worker tries it
    again, each try bounded the same way)."""

    def describe(refused: ResponseRefusedError) -> str:
        if isinstance(refused, ResponseTooLargeError):
            return (
                f"attacker {attacker_url} sent more than {refused.limit} bytes in one response, more "
                "than a match of this length can need (a campaign's attackers[].url is read to a bound)"
            )
        return f"attacker {attacker_url}: {refused.message}"

    raise_refusal_in(exc, describe=describe)


async def _cancel_quietly(client: Client, task_id: str, attacker_url: str) -> None:
    """Ask the attacker to cancel ``task_id``, for at most ``CANCEL_TIMEOUT_S``; raises only a
    cancel of the caller (the match is being abandoned)."""
    await cancel_task_quietly(client, task_id, who=f"attacker {attacker_url}", timeout_s=CANCEL_TIMEOUT_S)


__all__ = [
    "RemoteProbe",
    "TaskCallback",
    "TurnCallback",
    "play_remote_match",
    "run_remote_probe",
    "stream_limit_for",
]
