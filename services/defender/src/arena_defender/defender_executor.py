"""The defender's A2A executor: one model turn per incoming message.

A conversation is a contextId; the model sees the kept history of the context
(:class:`arena_core.conversation_store.ConversationStore`) on every turn. How a
turn's task ends is the turn mode (``ARENA_DEFENDER_TURN_MODE``, ADR 0014):

* ``complete`` (default): every message gets a task of its own that completes
  with the reply (the status message, and the same text as the ``reply``
  artifact). A follow-up carries the ``contextId`` only, and gets a new task
  in the same conversation; the completed task refuses further messages.
* ``input-required`` (the original sample's convention): the task parks in
  ``input-required`` with the reply as the status message; a follow-up with
  its ``taskId`` (the ``contextId`` may be left out: it is inferred from the
  task) continues it, one with only the ``contextId`` opens a new task in the
  same conversation. Parked tasks are released after
  ``ARENA_TASK_IDLE_TIMEOUT_S``, or when the client cancels them.

A message without ``contextId``/``taskId`` starts a new conversation: the SDK
assigns both ids, and we publish the new ``Task`` first (the SDK requires a
Task as the first event of a new task). History expires after
``ARENA_CONVERSATION_TTL_S``. A failed model call fails the task with a
message saying why; the conversation itself stays usable with a new task.

Each reply's status message carries ``metadata.arena``: ``model``, ``usage``
(``promptTokens``, ``completionTokens``: integers),
``profile`` (the defender profile) and, when the output guard of the
``guarded`` profile replaced the reply, ``guard`` (the form it caught, see
:mod:`arena_defender.output_guard`). The attacker records ``guard`` per turn.

A message that plants secrets (the planted-secrets extension,
:mod:`arena_core.planted_secrets`) gets the deployment section of
:mod:`arena_defender.deployment` after the profile's prompt, with those secrets, for
that turn; the attacker plants the same ones on every message of a match. Malformed
planted secrets fail the task as invalid input. The ``guarded`` profile's output guard
blocks a reply holding one of them, as it blocks the phrase.

What the guard replaced is gone: the history keeps the safe sentence that
was sent, not the model's leaked reply. The client never saw the leak, and a
model that finds its own leak in the history is primed to say it again.
"""

from __future__ import annotations

import json
import logging
from typing import Literal

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, TaskState
from google.protobuf.json_format import MessageToDict
from opentelemetry.trace import Span

from arena_core.a2a.task_opening import open_task
from arena_core.conversation_store import ConversationStore
from arena_core.errors import ArenaError, InvalidInputError
from arena_core.planted_secrets import read_planted_secrets
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import tracer
from arena_defender.defender_model import DefenderModel
from arena_defender.deployment import with_deployment
from arena_defender.output_guard import OutputGuard

logger = logging.getLogger(__name__)

MAX_INPUT_CHARS = 32_000
REPLY_ARTIFACT = "reply"

TurnMode = Literal["complete", "input-required"]


def message_text(message: Message) -> str:
    """The text a model should see for an A2A message.

    Text parts are joined with newlines; data parts are included as compact
    JSON; files and raw bytes are named, not inlined.
    """
    chunks: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            chunks.append(part.text)
        elif kind == "data":
            chunks.append(json.dumps(MessageToDict(part.data), separators=(",", ":")))
        elif kind in ("raw", "url"):
            chunks.append(f"[attached file {part.filename or part.media_type or kind}]")
    return "\n".join(chunks)


class DefenderExecutor(AgentExecutor):
    """Answers each message with the model under the defender's system prompt.

    ``guard``, when given, checks every reply before it is sent or stored;
    ``profile`` is reported in each reply's metadata; ``turn_mode`` says how
    each turn's task ends (the module docstring).
    """

    def __init__(
        self,
        model: DefenderModel,
        conversations: ConversationStore,
        *,
        system_prompt: str,
        temperature: float,
        max_tokens: int,
        profile: str = "custom",
        guard: OutputGuard | None = None,
        turn_mode: TurnMode = "complete",
    ) -> None:
        self._model = model
        self._conversations = conversations
        self._system_prompt = system_prompt
        self._system = {"role": "system", "content": system_prompt}
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._profile = profile
        self._guard = guard
        self._turn_mode = turn_mode

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        opened = await open_task(context, event_queue)
        if opened is None:
            return
        message, updater = opened
        text = message_text(message).strip()
        if not text:
            await updater.failed(_agent_text(updater, "The message has no text to answer."))
            return
        if len(text) > MAX_INPUT_CHARS:
            await updater.failed(
                _agent_text(updater, f"The message is longer than {MAX_INPUT_CHARS} characters.")
            )
            return
        try:
            secrets = read_planted_secrets(MessageToDict(message.metadata) if message.metadata else None)
        except InvalidInputError as exc:
            await updater.failed(
                _agent_text(updater, f"The message's planted secrets are invalid: {exc.message}")
            )
            return
        system = self._system
        if secrets is not None:
            system = {
                "role": "system",
                "content": with_deployment(self._system_prompt, secrets, profile=self._profile),
            }
        with tracer().start_as_current_span(
            "invoke_agent arena-defender",
            attributes={
                attrs.GEN_AI_OPERATION_NAME: attrs.OPERATION_INVOKE_AGENT,
                attrs.GEN_AI_AGENT_NAME: "arena-defender",
                attrs.GEN_AI_CONVERSATION_ID: updater.context_id,
                attrs.ARENA_PROFILE: self._profile,
            },
        ) as span:
            await self._answer(updater, updater.context_id, text, span, system, secrets or {})

    async def _answer(
        self,
        updater: TaskUpdater,
        context_id: str,
        text: str,
        span: Span,
        system: dict[str, str],
        secrets: dict[str, str],
    ) -> None:
        user = {"role": "user", "content": text}
        guard_reason: str | None = None
        try:
            history = await self._conversations.load(context_id)
            reply = await self._model.complete(
                [system, *history, user],
                temperature=self._temperature,
                max_tokens=self._max_tokens,
            )
            said = reply.content
            if self._guard is not None:
                decision = self._guard.check(said, secrets)
                if not decision.allowed:
                    said, guard_reason = decision.text, decision.reason
                    logger.info("output guard replaced a reply in context %s (%s)", context_id, guard_reason)
            await self._conversations.append(context_id, [user, {"role": "assistant", "content": said}])
        except ArenaError as exc:
            # Model or shared-state failures: say which; the conversation stays usable.
            logger.warning("defender turn failed: %s", exc.message)
            span.set_attribute(attrs.ARENA_ERROR_KIND, exc.kind)
            await updater.failed(
                _agent_text(updater, f"The defender could not answer: {exc.message}", exc.kind)
            )
            return
        arena: dict[str, object] = {
            "model": reply.model_id,
            "usage": {
                "promptTokens": reply.usage.prompt_tokens,
                "completionTokens": reply.usage.completion_tokens,
            },
            "profile": self._profile,
        }
        if guard_reason is not None:
            arena["guard"] = guard_reason
            span.set_attribute(attrs.ARENA_GUARD, guard_reason)
        answer = updater.new_agent_message(parts=[Part(text=said)], metadata={"arena": arena})
        if self._turn_mode == "input-required":
            await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, message=answer)
            return
        # Clients of completed tasks read the result from the artifacts (promptfoo, most UIs), others
        # from the status message: give both the same text.
        await updater.add_artifact([Part(text=said)], name=REPLY_ARTIFACT)
        await updater.complete(message=answer)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        if task_id is None or context_id is None:
            return
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.cancel()


def _agent_text(updater: TaskUpdater, text: str, kind: str = "invalid_input") -> Message:
    return updater.new_agent_message(parts=[Part(text=text)], metadata={"arena": {"error": kind}})


__all__ = ["DefenderExecutor", "message_text"]
