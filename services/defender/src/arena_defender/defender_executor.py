"""The defender's A2A executor: one model turn per incoming message.

A conversation is a contextId of one caller; the model sees the kept history of the
conversation (:class:`arena_core.conversation_store.ConversationStore`) on every turn.
History and back office are kept under the conversation's key, its caller (the
token's name, :mod:`arena_core.http_auth`) and contextId together
(:func:`arena_core.caller_scope.conversation_key`): a message from another caller
naming the same contextId starts a conversation of its own and never sees this one. How a
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

The ``support-desk`` profiles act (:mod:`arena_defender.support_desk_agent`): a turn is a
tool loop over the conversation's back office (:mod:`arena_core.shop_store`), made on the
conversation's first message with the documents that message plants (the planted-documents
extension, :mod:`arena_core.planted_documents`). ``metadata.arena.toolCalls`` counts the
turn's calls; with ``tool_call_parts`` the task also gets a ``tool-calls`` artifact holding
each call's record (:mod:`arena_core.tool_call_parts`), before the reply. The history keeps
the customer's message and the reply, not the tool exchanges; the back office keeps what the
tools did.

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
from arena_core.caller_scope import conversation_key
from arena_core.conversation_store import ConversationStore
from arena_core.errors import ArenaError, InvalidInputError
from arena_core.llm import Message as ChatMessage
from arena_core.llm import TokenUsage
from arena_core.planted_documents import read_planted_documents
from arena_core.planted_secrets import read_planted_secrets
from arena_core.shop_store import ShopStore
from arena_core.support_desk import ToolCallRecord, fresh_state
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import tracer
from arena_core.tool_call_parts import (
    TOOL_CALLS_ARTIFACT,
    TOOL_CALLS_EXTENSION,
    artifacts_of,
    tool_call_parts,
)
from arena_defender.defender_model import DefenderModel, tool_runner
from arena_defender.deployment import with_deployment
from arena_defender.output_guard import OutputGuard
from arena_defender.support_desk_agent import DeskSession, customer_texts

logger = logging.getLogger(__name__)

MAX_INPUT_CHARS = 32_000
REPLY_ARTIFACT = "reply"
OUT_OF_STEPS_REPLY = "Sorry, I could not finish that request. Could you put it another way?"
"""The support desk's reply when the model was still calling tools at the turn's last step."""

TurnMode = Literal["complete", "input-required"]


def message_text(message: Message) -> str:
    """The text a model should see for an A2A message.

    Text parts are joined with newlines; data parts are included as compact
    JSON; a text file sent inline (``text/*``, JSON, YAML, XML, up to
    :data:`MAX_INLINE_FILE_BYTES`) is read, as an agent that handles documents
    would; other files, and files by URL, are named, not fetched or inlined.
    The whole is bounded by :data:`MAX_INPUT_CHARS`: a longer message fails its
    task with that reason, whatever parts it came in.
    """
    chunks: list[str] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        name = part.filename or part.media_type or kind
        if kind == "text":
            chunks.append(part.text)
        elif kind == "data":
            chunks.append(json.dumps(MessageToDict(part.data), separators=(",", ":")))
        elif kind == "raw" and _readable(part.media_type) and len(part.raw) <= MAX_INLINE_FILE_BYTES:
            chunks.append(f"[attached file {name}]\n{part.raw.decode('utf-8', 'replace')}")
        elif kind in ("raw", "url"):
            chunks.append(f"[attached file {name}]")
    return "\n".join(chunks)


MAX_INLINE_FILE_BYTES = 32_000
_TEXT_TYPES = frozenset({"application/json", "application/yaml", "application/xml", "application/x-yaml"})


def _readable(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return base.startswith("text/") or base in _TEXT_TYPES


class DefenderExecutor(AgentExecutor):
    """Answers each message with the model under the defender's system prompt.

    ``guard``, when given, checks every reply before it is sent or stored;
    ``profile`` is reported in each reply's metadata; ``turn_mode`` says how
    each turn's task ends (the module docstring). ``shops`` makes it a support desk: each
    turn runs the desk's tools over the conversation's back office kept there
    (``desk_hardened``: with the hardened profile's guard), for at most ``max_tool_steps``
    model calls; ``tool_call_parts`` adds the record of the calls to the task.
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
        shops: ShopStore | None = None,
        desk_hardened: bool = False,
        max_tool_steps: int = 6,
        tool_call_parts: bool = False,
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
        self._shops = shops
        self._desk_hardened = desk_hardened
        self._max_tool_steps = max_tool_steps
        self._tool_call_parts = tool_call_parts

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
        metadata = MessageToDict(message.metadata) if message.metadata else None
        what = "secrets"
        try:
            secrets = read_planted_secrets(metadata)
            what = "documents"
            documents = read_planted_documents(metadata) if self._shops is not None else None
        except InvalidInputError as exc:
            await updater.failed(
                _agent_text(updater, f"The message's planted {what} are invalid: {exc.message}")
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
            key = conversation_key(updater.context_id, context.call_context)
            await self._answer(updater, key, text, span, system, secrets or {}, documents)

    async def _answer(
        self,
        updater: TaskUpdater,
        key: str,
        text: str,
        span: Span,
        system: dict[str, str],
        secrets: dict[str, str],
        documents: dict[str, str] | None,
    ) -> None:
        user = {"role": "user", "content": text}
        guard_reason: str | None = None
        records: list[ToolCallRecord] = []
        try:
            history = await self._conversations.load(key)
            messages = [system, *history, user]
            if self._shops is None:
                reply = await self._model.complete(
                    messages, temperature=self._temperature, max_tokens=self._max_tokens
                )
                said, model_id, usage = reply.content, reply.model_id, reply.usage
            else:
                said, model_id, usage = await self._desk_turn(
                    self._shops, key, messages, history, text, documents, records
                )
            if self._guard is not None:
                decision = self._guard.check(said, secrets)
                if not decision.allowed:
                    said, guard_reason = decision.text, decision.reason
                    logger.info(
                        "output guard replaced a reply in context %s (%s)", updater.context_id, guard_reason
                    )
            await self._conversations.append(key, [user, {"role": "assistant", "content": said}])
        except ArenaError as exc:
            # Model or shared-state failures: say which; the conversation stays usable.
            logger.warning("defender turn failed: %s", exc.message)
            span.set_attribute(attrs.ARENA_ERROR_KIND, exc.kind)
            await self._report_calls(updater, records)  # what the tools did before the failure
            await updater.failed(
                _agent_text(updater, f"The defender could not answer: {exc.message}", exc.kind)
            )
            return
        arena: dict[str, object] = {
            "model": model_id,
            "usage": {
                "promptTokens": usage.prompt_tokens,
                "completionTokens": usage.completion_tokens,
            },
            "profile": self._profile,
        }
        if self._shops is not None:
            arena["toolCalls"] = len(records)
        if guard_reason is not None:
            arena["guard"] = guard_reason
            span.set_attribute(attrs.ARENA_GUARD, guard_reason)
        answer = updater.new_agent_message(parts=[Part(text=said)], metadata={"arena": arena})
        await self._report_calls(updater, records)
        if self._turn_mode == "input-required":
            await updater.update_status(TaskState.TASK_STATE_INPUT_REQUIRED, message=answer)
            return
        # Clients of completed tasks read the result from the artifacts (promptfoo, most UIs), others
        # from the status message: give both the same text.
        await updater.add_artifact([Part(text=said)], name=REPLY_ARTIFACT)
        await updater.complete(message=answer)

    async def _report_calls(self, updater: TaskUpdater, records: list[ToolCallRecord]) -> None:
        if self._tool_call_parts and records:
            for chunk in artifacts_of(records):
                await updater.add_artifact(
                    tool_call_parts(chunk), name=TOOL_CALLS_ARTIFACT, extensions=[TOOL_CALLS_EXTENSION]
                )

    async def _desk_turn(
        self,
        shops: ShopStore,
        key: str,
        messages: list[ChatMessage],
        history: list[ChatMessage],
        text: str,
        documents: dict[str, str] | None,
        records: list[ToolCallRecord],
    ) -> tuple[str, str, TokenUsage]:
        """One support-desk turn; fills ``records`` with its calls, also when the model fails
        half way (what the tools did is saved either way)."""
        state = await shops.load(key)
        new = state is None
        if state is None:
            state = fresh_state(documents)
        session = DeskSession(
            state, hardened=self._desk_hardened, customer_texts=customer_texts(history, text)
        )
        try:
            turn = await tool_runner(self._model).run_tools(
                messages,
                session.tools(),
                temperature=self._temperature,
                max_tokens=self._max_tokens,
                max_steps=self._max_tool_steps,
            )
        finally:
            records.extend(session.records)
            if new or session.changed:
                await shops.save(key, state)
        return turn.text or OUT_OF_STEPS_REPLY, turn.model_id, turn.usage

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id, context.context_id
        if task_id is None or context_id is None:
            return
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.cancel()


def _agent_text(updater: TaskUpdater, text: str, kind: str = "invalid_input") -> Message:
    return updater.new_agent_message(parts=[Part(text=text)], metadata={"arena": {"error": kind}})


__all__ = ["DefenderExecutor", "message_text"]
