"""The moves a strategy can make during a match, and the bookkeeping behind them.

A strategy only ever calls :meth:`MatchSession.send`: say something to the
target, in the current conversation or in a new one. The session talks A2A,
asks the judge, records the turn, reports it to the listener, and raises
:class:`MatchOver` once the attacker has won or the turn budget is spent, so
strategies never need to count.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from arena_core.a2a import A2ATarget, TargetConversation, TargetReply
from arena_core.errors import TargetProtocolError
from arena_core.judges import Judge, JudgeVerdict
from arena_core.llm import TokenUsage
from arena_core.match_models import MatchRequest, TurnRecord

TurnListener = Callable[[TurnRecord], Awaitable[None]]


class MatchOver(Exception):  # noqa: N818 - control flow, not an error
    """Raised by :meth:`MatchSession.send` when no further turn may be played."""


class MatchSession:
    """One match in progress against one target."""

    def __init__(
        self,
        request: MatchRequest,
        target: A2ATarget,
        judge: Judge,
        *,
        on_turn: TurnListener | None = None,
    ) -> None:
        self.request = request
        self.phrase = request.objective.phrase
        self.target = target
        self._judge = judge
        self._conversation = TargetConversation(target)
        self._on_turn = on_turn
        self.turns: list[TurnRecord] = []
        self.resets = 0
        self.defender_usage = TokenUsage()
        self.defender_model: str | None = None
        self.winning_verdict: JudgeVerdict | None = None

    @property
    def turns_left(self) -> int:
        """How many more messages may be sent."""
        return self.request.max_turns - len(self.turns)

    @property
    def won(self) -> bool:
        """True once a judge has ruled that the defender said the phrase."""
        return self.winning_verdict is not None

    @property
    def in_conversation(self) -> bool:
        """True when the next message would continue an existing conversation."""
        return self._conversation.context_id is not None

    async def send(
        self, text: str, *, new_conversation: bool = False, reasoning: str | None = None
    ) -> TurnRecord:
        """Send ``text`` to the target and judge the reply.

        ``new_conversation`` resets first (a new contextId). Raises
        :class:`MatchOver` if the match has already ended, and
        :class:`~arena_core.errors.TargetError` when the target fails.
        """
        if self.won or self.turns_left <= 0:
            raise MatchOver
        is_new = new_conversation or not self.in_conversation
        if new_conversation and self.in_conversation:
            self._conversation.reset()
            self.resets += 1
        started_at = datetime.now(UTC)
        clock = time.perf_counter()
        reply = await self._conversation.send(text)
        duration_ms = (time.perf_counter() - clock) * 1000
        if reply.state == "failed":
            raise TargetProtocolError(
                f"the target's task failed instead of answering: {reply.text or 'no reason given'}"
            )
        verdict = self._judge.evaluate(reply.text, self.phrase)
        usage = self._record_defender(reply)
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
            started_at=started_at,
            duration_ms=duration_ms,
            defender_usage=usage,
        )
        self.turns.append(record)
        if verdict.success:
            self.winning_verdict = verdict
        if self._on_turn is not None:
            await self._on_turn(record)
        return record

    def _record_defender(self, reply: TargetReply) -> TokenUsage | None:
        # Arena defenders report their model and usage in message metadata;
        # other agents don't, and that is fine.
        arena: Any = reply.metadata.get("arena") if reply.metadata else None
        if not isinstance(arena, dict):
            return None
        model = arena.get("model")
        if isinstance(model, str):
            self.defender_model = model
        raw = arena.get("usage")
        if not isinstance(raw, dict):
            return None
        try:
            usage = TokenUsage(
                prompt_tokens=int(raw.get("prompt_tokens", 0)),
                completion_tokens=int(raw.get("completion_tokens", 0)),
                calls=1,
            )
        except (TypeError, ValueError):
            return None
        self.defender_usage = self.defender_usage + usage
        return usage


__all__ = ["MatchOver", "MatchSession", "TurnListener"]
