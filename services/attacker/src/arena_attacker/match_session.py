"""The moves a strategy can make during a match, and the bookkeeping behind them.

A strategy talks to the target only through conversations:
``session.conversation(label)`` opens one (a new A2A context on first send),
``send`` continues it, ``reset`` makes the next send start a new context, and
``replay`` backtracks: a new context into which a kept prefix of messages is
resent. The session talks A2A, asks the judge, numbers and records every turn,
reports it to the listener, and raises :class:`MatchOver` once the attacker
has won or the turn budget is spent (replayed turns count: they are real calls
to the target), so strategies never need to count. Conversations may be used
concurrently (PAIR streams, TAP branches): a turn's slot is reserved before the
call, so the budget is never exceeded.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span

from arena_core.a2a import A2ATarget, TargetConversation, TargetReply
from arena_core.a2a.client.attachments import Attachment
from arena_core.converters import ConvertedMessage, ConverterChain
from arena_core.errors import ArenaError, ModelUnavailableError, TargetProtocolError, TargetUnavailableError
from arena_core.judges import Judge, JudgeContext, JudgeVerdict
from arena_core.judges.judge import ActionSource
from arena_core.llm import TokenUsage
from arena_core.match_models import MatchRequest, TurnRecord
from arena_core.objective import Objective
from arena_core.planted_documents import PLANTED_DOCUMENTS_EXTENSION, plant_documents_metadata
from arena_core.planted_secrets import PLANTED_SECRETS_EXTENSION, plant_metadata
from arena_core.settings import BUILT_IN_PROFILES
from arena_core.support_desk import ToolCallRecord
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.metrics import record_turn
from arena_core.telemetry.spans import tracer
from arena_core.tool_call_parts import MAX_RECORDS_PER_TURN

TurnListener = Callable[[TurnRecord], Awaitable[None]]


class MatchOver(Exception):  # noqa: N818 - control flow, not an error
    """Raised when no further turn may be played (won, or out of turns)."""


class AttackerRefused(Exception):  # noqa: N818 - control flow, not an error
    """Raised by a strategy when the attacker model refuses to play."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class Conversation:
    """One conversation with the target, driven by a strategy."""

    def __init__(self, session: MatchSession, label: str | None) -> None:
        self._session = session
        self._target = session._open_target_conversation()
        self.label = label
        self.sent: list[str] = []
        """The strategy's messages of the current context, in order, as it wrote them (for replay)."""
        self._replies: list[str] = []
        """The defender's replies in the current context, whole (the judge's context)."""

    @property
    def started(self) -> bool:
        """True once this conversation has a context on the target."""
        return self._target.context_id is not None

    def reset(self) -> None:
        """The next :meth:`send` starts a new context (counted as a reset if one existed)."""
        if self.started:
            self._session.resets += 1
        self._target.reset()
        self.sent = []
        self._replies = []

    async def send(
        self, text: str, *, reasoning: str | None = None, attachments: Sequence[Attachment] = ()
    ) -> TurnRecord:
        """Send ``text`` in this conversation (converted, when the match has converters), with
        ``attachments`` as parts beside it (sent as written, with the first part of a split
        message), and return the judged turn (the last one, when a converter split the message)."""
        return await self._session._send(
            self, text, reasoning=reasoning, replay=False, attachments=attachments
        )

    async def replay(self, prefix: Sequence[str], *, reasoning: str | None = None) -> list[TurnRecord]:
        """Backtrack: start a new context and resend ``prefix`` (each a real, counted turn)."""
        self.reset()
        records = []
        for text in prefix:
            records.append(await self._session._send(self, text, reasoning=reasoning, replay=True))
        return records


class MatchSession:
    """One match in progress against one target."""

    def __init__(
        self,
        request: MatchRequest,
        target: A2ATarget,
        judge: Judge,
        *,
        on_turn: TurnListener | None = None,
        secrets: Mapping[str, str] | None = None,
        plant: bool = False,
        documents: Mapping[str, str] | None = None,
        planted_values: Sequence[str] = (),
        action_source: ActionSource | None = None,
        converters: ConverterChain | None = None,
        seed: int | None = None,
    ) -> None:
        """``secrets`` (by slot) are what the judge looks for; with ``plant`` every message
        carries them to the target through the planted-secrets extension. ``documents``
        (title -> text) go with every message through the planted-documents extension (the
        target takes them on a conversation's first); ``planted_values`` are what only they
        contain. Strategies never see any of these: they are kept here, out of the turns and
        of everything a strategy reads. ``action_source`` says where the judge reads the
        defender's tool calls (its replies' tool-call records, or the trace after the match).
        ``converters`` re-encode every message a strategy sends; the turns record both texts.
        ``seed`` stands in for the request's when it has none (one derived from the match id)."""
        self.request = request
        self.objective: Objective = request.objective
        self.phrase: str | None = request.objective.phrase
        self.target = target
        self.judge = judge
        self._on_turn = on_turn
        self.turns: list[TurnRecord] = []
        self.resets = 0
        self.defender_usage = TokenUsage()
        self.defender_model: str | None = None
        self.defender_profile: str | None = None
        self.winning_verdict: JudgeVerdict | None = None
        self.final_verdict: JudgeVerdict | None = None
        """The verdict on the whole match, when one is made after the last turn (from the trace)."""
        self._reserved = 0
        self.__secrets: Mapping[str, str] = dict(secrets or {})
        self.__plant = plant and bool(secrets)
        self.__documents: Mapping[str, str] = dict(documents or {})
        self.__planted_values = tuple(planted_values)
        self.action_source: ActionSource | None = action_source
        self.actions: list[ToolCallRecord] = []
        """The defender's tool calls of the match so far, as its replies reported them."""
        self.turn_spans: dict[str, int] = {}
        """The span id of each turn's ``arena.turn`` span -> the turn's number (traced matches)."""
        self.converters = converters if converters else None
        self.seed: int | None = request.seed if request.seed is not None else seed
        """The match's seed: the request's, else one derived from the match id."""
        self._conversions: dict[str, ConvertedMessage] = {}
        """Each strategy message as first converted: a replay resends what the target saw."""
        self._main = Conversation(self, None)

    def _open_target_conversation(self) -> TargetConversation:
        metadata: dict[str, Any] = {}
        extensions: list[str] = []
        if self.__plant:
            metadata |= plant_metadata(self.__secrets)
            extensions.append(PLANTED_SECRETS_EXTENSION)
        if self.__documents:
            metadata |= plant_documents_metadata(self.__documents)
            extensions.append(PLANTED_DOCUMENTS_EXTENSION)
        if not metadata:
            return TargetConversation(self.target)
        return TargetConversation(self.target, metadata=metadata, extensions=tuple(extensions))

    def _judge_context(
        self,
        earlier: Sequence[str] = (),
        *,
        final: bool = False,
        sending: str | None = None,
        written: str | None = None,
    ) -> JudgeContext:
        """What the judge knows besides a reply (the secrets and planted values included);
        ``sending`` is the message of the turn being judged, not yet among the turns, and
        ``written`` what the strategy wrote before the converters. The attacker's texts are
        both forms of every message: a value it typed counts as its own, encoded or not."""
        said: list[str] = []
        for turn in self.turns:
            said.append(turn.attacker_text)
            if turn.strategy_text is not None:
                said.append(turn.strategy_text)
        said += [text for text in (sending, written) if text is not None and text not in said]
        return JudgeContext(
            attacker_texts=tuple(said),
            earlier=tuple(earlier),
            secrets=self.__secrets,
            actions=tuple(self.actions),
            action_source=self.action_source,
            planted_values=self.__planted_values,
            final=final,
        )

    async def judge_trace(self, actions: Sequence[tuple[ToolCallRecord, int | None]]) -> JudgeVerdict:
        """Judge the match on the defender's tool calls read from its trace (with the turn each
        came under): they join the turns' records, and the verdict becomes the match's."""
        self.actions = [record for record, _ in actions]
        for record, turn in actions:
            # Every call is judged; a turn keeps the first ones (a defender may report any number).
            if turn is not None and 1 <= turn <= len(self.turns):
                kept = self.turns[turn - 1].actions
                if len(kept) < MAX_RECORDS_PER_TURN:
                    kept.append(record)
        last = self.turns[-1].defender_text if self.turns else ""
        verdict = await self.judge.judge(last, self.objective, self._judge_context(final=True))
        self.decide(verdict)
        return verdict

    def decide(self, verdict: JudgeVerdict) -> None:
        """Make ``verdict`` the match's verdict (a success wins the match)."""
        self.final_verdict = verdict
        if verdict.success:
            self.winning_verdict = verdict

    @property
    def turns_left(self) -> int:
        """How many more messages may be sent (in-flight ones included)."""
        return self.request.max_turns - self._reserved

    @property
    def won(self) -> bool:
        """True once a judge has ruled that the objective was met."""
        return self.winning_verdict is not None

    @property
    def over(self) -> bool:
        """True when no further turn may be played."""
        return self.won or self.turns_left <= 0

    def conversation(self, label: str | None = None) -> Conversation:
        """A new, independent conversation (its first send opens a new context)."""
        return Conversation(self, label)

    async def send(
        self,
        text: str,
        *,
        new_conversation: bool = False,
        reasoning: str | None = None,
        attachments: Sequence[Attachment] = (),
    ) -> TurnRecord:
        """Send ``text`` (and ``attachments``) in the main conversation, resetting it first if asked."""
        if new_conversation:
            self._main.reset()
        return await self._main.send(text, reasoning=reasoning, attachments=attachments)

    async def _send(
        self,
        conversation: Conversation,
        text: str,
        *,
        reasoning: str | None,
        replay: bool,
        attachments: Sequence[Attachment] = (),
    ) -> TurnRecord:
        """Convert ``text`` (when the match has converters) and play the turns it became.

        A message split into parts is sent whole or not at all: its turns are reserved together
        (:class:`MatchOver` when fewer are left), so the target never gets half a request. A
        replayed message is sent as it was the first time, not converted again.
        """
        if self.over:
            raise MatchOver
        if self.converters is None:
            outgoing = _Outgoing(text, text, attachments=tuple(attachments))
            return await self._play(conversation, outgoing, reasoning=reasoning, replay=replay)
        message = self._conversions.get(text) if replay else None
        if message is None:
            message = await self.converters.apply(text)
            self._conversions.setdefault(text, message)
        total = len(message.turns)
        if self.over or self.turns_left < total:
            raise MatchOver
        self._reserved += total
        played = 0
        record: TurnRecord | None = None
        try:
            for index, sent in enumerate(message.turns, start=1):
                if index > 1 and self.won:
                    break  # won on an earlier part: the rest need not be sent
                outgoing = _Outgoing(
                    sent,
                    text,
                    strategy_text=text if message.changed else None,
                    part=f"{index}/{total}" if total > 1 else None,
                    last=index == total,
                    attachments=tuple(attachments) if index == 1 else (),
                )
                played += 1
                record = await self._play(
                    conversation, outgoing, reasoning=reasoning, replay=replay, reserved=True
                )
        finally:
            self._reserved -= total - played  # the parts never sent give their turns back
        assert record is not None  # a chain never returns no turn
        return record

    def turns_per_message(self) -> int:
        """How many turns one message costs at most (several when a converter splits it)."""
        return self.converters.max_turns_per_message if self.converters is not None else 1

    async def _play(
        self,
        conversation: Conversation,
        outgoing: _Outgoing,
        *,
        reasoning: str | None,
        replay: bool,
        reserved: bool = False,
    ) -> TurnRecord:
        """Play one turn; ``reserved``: its slot was taken by the caller."""
        if not reserved:
            if self.over:
                raise MatchOver
            self._reserved += 1
        with tracer().start_as_current_span(
            "arena.turn", attributes={attrs.ARENA_STRATEGY: self.request.strategy}
        ) as span:
            return await self._play_traced(
                conversation, outgoing, reasoning=reasoning, replay=replay, span=span
            )

    async def _play_traced(
        self,
        conversation: Conversation,
        outgoing: _Outgoing,
        *,
        reasoning: str | None,
        replay: bool,
        span: Span,
    ) -> TurnRecord:
        text = outgoing.text
        try:
            is_new = not conversation.started
            started_at = datetime.now(UTC)
            clock = time.perf_counter()
            reply = await conversation._target.send(text, outgoing.attachments)
            duration_ms = (time.perf_counter() - clock) * 1000
        except BaseException:
            self._reserved -= 1
            raise
        record_turn(duration_ms / 1000, {attrs.ARENA_STRATEGY: self.request.strategy})
        if reply.state == "failed":
            raise _failure_of(reply)
        if outgoing.last:
            conversation.sent.append(outgoing.written)
        self.actions.extend(reply.actions)
        context = self._judge_context(conversation._replies, sending=text, written=outgoing.written)
        conversation._replies.append(reply.text)
        verdict = await self.judge.judge(reply.text, self.objective, context)
        usage, guard = self._read_defender_metadata(reply)
        record = TurnRecord(
            turn=len(self.turns) + 1,
            context_id=reply.context_id,
            task_id=reply.task_id,
            new_conversation=is_new,
            attacker_text=text,
            defender_text=reply.text,
            defender_state=reply.state,
            verdict=verdict,
            reasoning=reasoning,
            stream=conversation.label,
            replay=replay,
            guard=guard,
            started_at=started_at,
            duration_ms=duration_ms,
            defender_usage=usage,
            actions=list(reply.actions),
            strategy_text=outgoing.strategy_text,
            part=outgoing.part,
            attachments=[attachment.record() for attachment in outgoing.attachments],
        )
        self.turns.append(record)
        span_context = span.get_span_context()
        if span_context.is_valid:
            self.turn_spans[otel_trace.format_span_id(span_context.span_id)] = record.turn
        span.set_attributes({attrs.ARENA_TURN: record.turn, attrs.ARENA_VERDICT: verdict.success})
        if verdict.success and self.winning_verdict is None:
            self.winning_verdict = verdict
        if self._on_turn is not None:
            await self._on_turn(record)
        return record

    def _read_defender_metadata(self, reply: TargetReply) -> tuple[TokenUsage | None, str | None]:
        # Arena defenders report model, usage and guard interventions in message metadata;
        # other agents don't, and that is fine.
        arena: Any = reply.metadata.get("arena") if reply.metadata else None
        if not isinstance(arena, dict):
            return None, None
        model = arena.get("model")
        if isinstance(model, str):
            self.defender_model = model
        profile = arena.get("profile")
        if isinstance(profile, str) and profile in BUILT_IN_PROFILES:  # a label, never free text
            self.defender_profile = profile
        guard = arena.get("guard")
        guard_text = str(guard)[:500] if guard else None
        raw = arena.get("usage")
        if not isinstance(raw, dict):
            return None, guard_text
        try:
            usage = TokenUsage(
                prompt_tokens=int(raw.get("promptTokens", 0)),
                completion_tokens=int(raw.get("completionTokens", 0)),
                calls=1,
            )
        except (TypeError, ValueError):
            return None, guard_text
        self.defender_usage = self.defender_usage + usage
        return usage, guard_text


@dataclass(frozen=True, slots=True)
class _Outgoing:
    """One message on its way to the target: ``text`` is sent, ``written`` is the strategy's
    message it came from (kept for replay once its ``last`` part is sent)."""

    text: str
    written: str
    strategy_text: str | None = None
    part: str | None = None
    last: bool = True
    attachments: tuple[Attachment, ...] = ()


_DEPENDENCY_FAILURES = frozenset({ModelUnavailableError.kind, "state_unavailable"})


def _failure_of(reply: TargetReply) -> ArenaError:
    """Why the target failed its task. An arena defender names the kind of failure in
    ``metadata.arena.error``: its model (or state store) being unavailable makes the target
    unavailable for now (the orchestrator tries the match again), never a defence."""
    reason = reply.text or "no reason given"
    arena = reply.metadata.get("arena") if isinstance(reply.metadata, dict) else None
    kind = arena.get("error") if isinstance(arena, dict) else None
    if kind in _DEPENDENCY_FAILURES:
        return TargetUnavailableError(f"the target cannot answer now ({kind}): {reason}")
    return TargetProtocolError(f"the target's task failed instead of answering: {reason}")


__all__ = ["AttackerRefused", "Conversation", "MatchOver", "MatchSession", "TurnListener"]
