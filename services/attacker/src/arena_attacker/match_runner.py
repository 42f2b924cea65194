"""Run one match from a :class:`MatchRequest` to a :class:`MatchResult`.

Used by the attacker service for each "red-team a target" task and by
``arena match`` in-process. Invalid requests (unknown strategy or judge, too
many turns, missing model key) raise before anything is sent. Everything that
goes wrong once the match has started (target unreachable, not an A2A agent,
model down, timeout) ends the match with ``outcome="error"`` and a reason; an
error is never counted as a defence.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from datetime import UTC, datetime

import httpx

from arena_attacker.match_session import MatchOver, MatchSession, TurnListener
from arena_attacker.strategies import ModelFactory, check_strategy, create_strategy
from arena_core.a2a import A2ATarget, connect_target
from arena_core.errors import ArenaError, InvalidInputError
from arena_core.judges import get_judge
from arena_core.llm import ChatModel, TokenUsage
from arena_core.match_models import MatchRequest, MatchResult, Outcome, ProtocolInfo
from arena_core.settings import ArenaSettings

logger = logging.getLogger(__name__)


class MatchRunner:
    """Plays matches with the attacker settings of one process."""

    def __init__(
        self,
        settings: ArenaSettings,
        *,
        model_factory: ModelFactory | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._settings = settings
        self._model: ChatModel | None = None
        self._model_factory = model_factory or self._default_model
        self._http = http

    def _default_model(self) -> ChatModel:
        # Built on first use and reused: provider clients are not cheap.
        if self._model is None:
            self._model = ChatModel.from_config(self._settings.model_for("attacker"))
        return self._model

    def validate(self, request: MatchRequest) -> None:
        """Raise InvalidInputError if ``request`` cannot be played here."""
        check_strategy(request.strategy)
        get_judge(request.judge)
        if request.max_turns > self._settings.max_turns_limit:
            raise InvalidInputError(
                f"max_turns {request.max_turns} exceeds this attacker's limit of "
                f"{self._settings.max_turns_limit} (ARENA_MAX_TURNS_LIMIT)"
            )

    async def run(self, request: MatchRequest, *, on_turn: TurnListener | None = None) -> MatchResult:
        """Play ``request`` and return its result (see the module doc for errors)."""
        self.validate(request)
        judge = get_judge(request.judge)
        strategy = create_strategy(
            request.strategy,
            model_factory=self._model_factory,
            temperature=self._settings.attacker_temperature,
            max_tokens=self._settings.attacker_max_tokens,
        )
        match_id = request.match_id or str(uuid.uuid4())
        started_at = datetime.now(UTC)
        clock = time.perf_counter()
        target: A2ATarget | None = None
        session: MatchSession | None = None
        error: ArenaError | None = None
        try:
            async with asyncio.timeout(self._settings.match_timeout_s):
                target = await connect_target(
                    request.target, timeout_s=self._settings.target_timeout_s, http=self._http
                )
                session = MatchSession(request, target, judge, on_turn=on_turn)
                with contextlib.suppress(MatchOver):
                    await strategy.play(session)
        except ArenaError as exc:
            error = exc
        except TimeoutError:
            error = ArenaError(
                f"the match did not finish within {self._settings.match_timeout_s:g} s "
                "(ARENA_MATCH_TIMEOUT_S)"
            )
        finally:
            if target is not None:
                await target.close()
        if error is not None:
            logger.info("match %s ended in error: %s", match_id, error.message)
        finished_at = datetime.now(UTC)
        turns = session.turns if session else []
        outcome: Outcome
        if error is not None:
            outcome = "error"
        elif session is not None and session.won:
            outcome = "attacker_won"
        else:
            outcome = "defended"
        verdict = None
        if session is not None:
            verdict = session.winning_verdict or (turns[-1].verdict if turns else None)
        return MatchResult(
            match_id=match_id,
            target=request.target,
            target_name=target.card.name if target else None,
            objective=request.objective,
            strategy=request.strategy,
            judge=request.judge,
            seed=request.seed,
            max_turns=request.max_turns,
            outcome=outcome,
            verdict=verdict,
            turns=turns,
            turns_used=len(turns),
            resets=session.resets if session else 0,
            attacker_model=strategy.report.attacker_model,
            defender_model=session.defender_model if session else None,
            attacker_usage=strategy.report.attacker_usage,
            defender_usage=session.defender_usage if session else TokenUsage(),
            protocol=(
                ProtocolInfo(
                    binding=target.binding, version=target.protocol_version, url=target.interface.url
                )
                if target
                else None
            ),
            started_at=started_at,
            finished_at=finished_at,
            duration_ms=(time.perf_counter() - clock) * 1000,
            error=error.message if error else None,
            error_kind=error.kind if error else None,
        )


__all__ = ["MatchRunner"]
