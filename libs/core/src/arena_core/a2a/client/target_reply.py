"""What a target said in one turn, read from the last event of its answer.

Agents end a turn with a bare Message or with a Task; a task's answer may be its status
message, its artifacts, or only its history. :func:`reply_from` reads all of them into one
:class:`TargetReply`, reporting an open task's artifacts once (in the turn that brought them).
A tool-calls artifact (:mod:`arena_core.tool_call_parts`) is not text the agent said: its
records go to :attr:`TargetReply.actions`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import Role, StreamResponse, Task, TaskState
from google.protobuf.json_format import MessageToDict

from arena_core.errors import TargetProtocolError
from arena_core.support_desk import ToolCallRecord
from arena_core.tool_call_parts import MAX_RECORDS_PER_TURN, is_tool_calls_artifact, records_in_artifact

_OPEN_STATES = frozenset(
    {
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_SUBMITTED,
    }
)
_STATE_NAMES = {
    TaskState.TASK_STATE_SUBMITTED: "submitted",
    TaskState.TASK_STATE_WORKING: "working",
    TaskState.TASK_STATE_INPUT_REQUIRED: "input-required",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_REJECTED: "rejected",
}


@dataclass(frozen=True, slots=True)
class TargetReply:
    """One answer from the target.

    ``text`` is what the agent said in this turn: a bare Message's text, or a task's status
    message followed by the artifacts this turn added (an open task's earlier artifacts are
    not repeated), or failing both the task's last agent message. ``state`` is the task state
    name (``input-required``, ``completed``, ``failed``, ...) or ``message`` when the agent
    answered with a bare Message. ``open`` tells whether the task accepts a follow-up with
    its taskId. ``actions`` are the tool calls the agent reported in this turn's tool-calls
    artifacts (none when it reports none).
    """

    text: str
    context_id: str
    task_id: str | None
    state: str
    open: bool
    metadata: dict[str, Any]
    actions: tuple[ToolCallRecord, ...] = ()


def _text_of(parts: Any) -> str:
    chunks: list[str] = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            chunks.append(part.text)
        elif kind == "data":
            # Sorted: a Struct's map order can change between two reads of one task.
            chunks.append(json.dumps(MessageToDict(part.data), separators=(",", ":"), sort_keys=True))
    return "\n".join(chunks)


def reply_from(
    event: StreamResponse, *, fallback_context: str | None, reported: frozenset[str]
) -> tuple[TargetReply, frozenset[str]]:
    """The reply in ``event`` and the artifacts of its task reported so far (``reported`` before)."""
    kind = event.WhichOneof("payload")
    if kind == "message":
        message = event.message
        reply = TargetReply(
            text=_text_of(message.parts),
            context_id=message.context_id or fallback_context or "",
            task_id=message.task_id or None,
            state="message",
            open=False,
            metadata=MessageToDict(message.metadata) if message.HasField("metadata") else {},
        )
        return reply, reported
    if kind == "task":
        return _reply_from_task(event.task, reported)
    raise TargetProtocolError(f"target answered a message with a '{kind}' event instead of a task or message")


def _reply_from_task(task: Task, reported: frozenset[str]) -> tuple[TargetReply, frozenset[str]]:
    """What the agent said in this turn: its status message, then every artifact not in ``reported``.

    Both, because agents that complete a task per turn often put the answer in an artifact
    and a formality ("Done.") in the status message: the judge must see the answer. A task
    that stays open (input-required) keeps its earlier artifacts, which were judged with the
    turn that brought them, hence ``reported``. With neither, the last agent message of the
    (bounded) history is the answer.
    """
    status = task.status
    chunks: list[str] = []
    metadata: dict[str, Any] = {}
    if status.HasField("message") and status.message.parts:
        status_text = _text_of(status.message.parts)
        if status_text:
            chunks.append(status_text)
        if status.message.HasField("metadata"):
            metadata = MessageToDict(status.message.metadata)
    seen = set(reported)
    actions: list[ToolCallRecord] = []
    for artifact in task.artifacts:
        artifact_text = _text_of(artifact.parts)
        key = _artifact_key(artifact.artifact_id, artifact_text)
        if key in seen:
            continue
        seen.add(key)
        if is_tool_calls_artifact(artifact):
            actions.extend(records_in_artifact(artifact))
            if len(actions) > MAX_RECORDS_PER_TURN:
                raise TargetProtocolError(
                    f"the defender reports more than {MAX_RECORDS_PER_TURN} tool calls in one reply"
                )
            continue
        if artifact_text and artifact_text not in chunks:
            chunks.append(artifact_text)
    text = "\n".join(chunks)
    if not text:
        for message in reversed(task.history):
            if message.role == Role.ROLE_AGENT:
                text = _text_of(message.parts)
                break
    reply = TargetReply(
        text=text,
        context_id=task.context_id,
        task_id=task.id,
        state=_STATE_NAMES.get(status.state, "unknown"),
        open=status.state in _OPEN_STATES,
        metadata=metadata,
        actions=tuple(actions),
    )
    return reply, frozenset(seen)


def _artifact_key(artifact_id: str, text: str) -> str:
    # The content counts too: an agent may extend an artifact under the same id.
    return f"{artifact_id}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


__all__ = ["TargetReply", "reply_from"]
