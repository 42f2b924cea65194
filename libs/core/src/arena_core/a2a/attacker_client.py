"""Ask an attacker agent to play a match over A2A and follow it turn by turn.

Used by ``arena demo``, ``arena match --attacker URL`` and, later, the
orchestrator. The match runs as a streaming task; each ``working`` status
update carries a :class:`~arena_core.match_models.TurnRecord`, the
``match-result`` artifact carries the :class:`~arena_core.match_models.MatchResult`.
If the stream breaks before the task ends, the task is polled until it does.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.helpers import new_data_part
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
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

from arena_core.a2a.egress_guard import EgressGuard, display_origin, guarded_client
from arena_core.a2a.target_client import SUPPORTED_BINDINGS, card_url_for, choose_interface, fetch_agent_card
from arena_core.errors import ArenaError, InvalidInputError, TargetProtocolError, TargetUnreachableError
from arena_core.match_models import (
    MATCH_RESULT_MEDIA_TYPE,
    TURN_MEDIA_TYPE,
    MatchRequest,
    MatchResult,
    TurnRecord,
)

TurnCallback = Callable[[TurnRecord], Awaitable[None]]
TaskCallback = Callable[[str], Awaitable[None]]
logger = logging.getLogger(__name__)
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


class _Follower:
    """Collects turns and the result from the events of one attacker task."""

    def __init__(self, on_turn: TurnCallback | None, on_task: TaskCallback | None = None) -> None:
        self._on_turn = on_turn
        self._on_task = on_task
        self.seen_turns: set[int] = set()
        self.result: MatchResult | None = None
        self.task_id: str | None = None
        self.state: int | None = None
        self.status_text = ""

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
) -> MatchResult:
    """Have the attacker at ``attacker_url`` play ``request``; return its result.

    ``on_task`` is called once with the attacker's task id as soon as it is
    known. When the caller is cancelled (``asyncio.CancelledError``), the
    attacker's task is canceled too (best effort, bounded by
    ``CANCEL_TIMEOUT_S``), so an abandoned match stops spending model calls.

    Raises :class:`InvalidInputError` when the attacker rejected the request
    (the message says why), TargetError subclasses when the attacker itself
    cannot be reached or misbehaves.

    ``guard`` (for attacker URLs that came from user input, such as a campaign's
    ``attackers[].url``): the attacker's URL and every interface its card lists
    that the client may use are checked before any request, and the client made
    here checks every request; a refusal raises TargetNotAllowedError.
    """
    if guard is not None:
        await guard.check_url(card_url_for(attacker_url), what="the attacker")
    owned = http is None
    timeout = httpx.Timeout(timeout_s, connect=10.0)
    client_http = http or (
        guarded_client(guard, timeout=timeout) if guard is not None else httpx.AsyncClient(timeout=timeout)
    )
    client: Client | None = None
    try:
        card, _ = await fetch_agent_card(attacker_url, client_http)
        choose_interface(card)
        if guard is not None:
            for interface in card.supported_interfaces:
                if interface.protocol_binding in SUPPORTED_BINDINGS:
                    await guard.check_url(
                        interface.url,
                        what=f"an interface the agent card of attacker {display_origin(attacker_url)} lists",
                    )
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=client_http)).create(card)
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[new_data_part(request.model_dump(mode="json", exclude_none=True))],
        )
        follower = _Follower(on_turn, on_task)
        try:
            async with asyncio.timeout(timeout_s):
                try:
                    async for event in client.send_message(SendMessageRequest(message=message)):
                        await follower.feed(event)
                except (A2AError, httpx.HTTPError) as exc:
                    if follower.task_id is None:
                        raise TargetUnreachableError(f"attacker {attacker_url} failed: {exc}") from exc
                # The stream ended or broke before the task did: poll the task to its end.
                while not follower.finished:
                    if follower.task_id is None:
                        raise TargetProtocolError(f"attacker {attacker_url} never created a task")
                    await asyncio.sleep(POLL_INTERVAL_S)
                    await follower.feed_task(await client.get_task(GetTaskRequest(id=follower.task_id)))
        except (asyncio.CancelledError, TimeoutError):
            if follower.task_id is not None and not follower.finished:
                await _cancel_quietly(client, follower.task_id)
            raise
        if follower.result is not None:
            return follower.result
        reason = follower.status_text or "no reason given"
        raise InvalidInputError(f"the attacker did not play the match: {reason}")
    except ArenaError:
        raise
    except TimeoutError as exc:
        raise TargetUnreachableError(
            f"attacker {attacker_url} did not finish within {timeout_s:g} s"
        ) from exc
    except A2AError as exc:  # client errors and the JSON-RPC errors the attacker answered
        raise TargetProtocolError(f"attacker {attacker_url} failed: {exc}") from exc
    except httpx.HTTPError as exc:  # the attacker went away while its task was being polled
        raise TargetUnreachableError(f"attacker {attacker_url} failed: {exc}") from exc
    finally:
        if client is not None:
            await client.close()
        if owned:
            await client_http.aclose()


async def _cancel_quietly(client: Client, task_id: str) -> None:
    """Ask the attacker to cancel ``task_id``; never raises (the match is being abandoned)."""
    try:
        async with asyncio.timeout(CANCEL_TIMEOUT_S):
            await client.cancel_task(CancelTaskRequest(id=task_id))
    except (TimeoutError, asyncio.CancelledError):
        return
    except Exception as exc:  # noqa: BLE001 - e.g. "not cancelable": the task already ended
        logger.debug("could not cancel attacker task %s: %s", task_id, exc)


__all__ = ["TaskCallback", "TurnCallback", "play_remote_match"]
