"""Run one match from a :class:`MatchRequest` to a :class:`MatchResult`.

Used by the attacker service for each "red-team a target" task and by
``arena match`` in-process. Invalid requests (unknown strategy or judge, bad
strategy params, an objective the strategy or judge cannot handle, too many
turns, missing model key) raise before anything is sent. Everything that goes
wrong once the match has started (target unreachable, not an A2A agent, model
down, timeout) ends the match with ``outcome="error"`` and a reason; an error
is never counted as a defence. An attacker model that refuses to play ends it
with ``outcome="attacker_refused"``, which is not a defence either.

A request's ``target_token_env`` names one of this process's
``ARENA_TARGET_TOKEN_*`` variables (``settings.target_tokens``); its value is
sent to the target as ``Authorization: Bearer <value>`` and kept out of the
result, the turns, logs and error messages. A variable that is not set is
invalid input.

Secrets: a target whose card lists the planted-secrets extension
(:mod:`arena_core.planted_secrets`) gets fresh random secrets planted on every message of
the match, unless the request names variables for them (``canary_env``: per slot, one of
this process's ``ARENA_CANARY_*`` variables holding the secret the target's owner planted).
The ``canary`` judge looks for them; no strategy and no attacker model ever sees them. An
objective that needs secrets against a target with neither ends the match as an error of
kind ``invalid_input``, never as a defence.

Actions: an ``action`` objective is judged on the defender's tool calls. A target whose card
lists the tool-calls extension (:mod:`arena_core.tool_call_parts`) reports them in its task;
for any other, the runner reads them from the match's trace after the match
(``ARENA_TRACE_QUERY_URL``, :mod:`arena_attacker.trace_evidence`). With neither the match is
an error of kind ``invalid_input``. The indirect-injection objective also plants a fresh
knowledge-base entry in a target that takes the planted-documents extension
(:mod:`arena_core.planted_documents`), and is invalid input against one that does not.

Targets are reached only through the egress guard built from
``ARENA_TARGET_ALLOWLIST`` (``settings.target_policy()``): a target, an
interface in its card or a redirect outside it ends the match as an error of
kind ``target_not_allowed`` before anything connects to it.

Every request to a target takes a slot of the runner's rate limiter first
(``ARENA_TARGET_RATE_LIMIT`` per target origin; shared by all attacker replicas
when the app passes a Redis-backed one). A request that cannot have a slot
before its deadline (``ARENA_TARGET_TIMEOUT_S``, or the end of the match when
sooner), or a target that keeps answering 429, ends the match as an error of
kind ``rate_limited``, which the orchestrator tries again later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from datetime import UTC, datetime
from typing import Literal

import httpx

from arena_attacker.match_session import AttackerRefused, MatchOver, MatchSession, TurnListener
from arena_attacker.strategies import Strategy, StrategyContext, create_strategy, validate_strategy
from arena_attacker.strategies.attacker_llm import AttackerLLM
from arena_attacker.strategies.strategy import ModelFactory
from arena_attacker.trace_evidence import read_actions
from arena_core.a2a import A2ATarget, connect_target
from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.client.card_resolver import card_url_for
from arena_core.a2a.egress_guard import EgressGuard, shared_tls_context
from arena_core.converters import ConverterChain, build_converters, converter_seed_of
from arena_core.credential_scope import display, origin_of, unscoped
from arena_core.errors import (
    ArenaError,
    AttackerInactiveError,
    InvalidInputError,
    TraceUnavailableError,
)
from arena_core.judges import Judge, get_judge
from arena_core.judges.action_judge import describe_call
from arena_core.judges.canary_detection import MIN_CANARY_CHARS, canary_skeleton
from arena_core.judges.judge import ActionSource
from arena_core.llm import ChatModel, TokenUsage
from arena_core.match_models import MatchRequest, MatchResult, Outcome, ProtocolInfo, Reproducibility
from arena_core.planted_documents import PLANTED_DOCUMENTS_EXTENSION, injection_documents
from arena_core.planted_secrets import PLANTED_SECRETS_EXTENSION, fresh_secrets
from arena_core.rate_limit import LocalRateLimiter, RateLimit, RateLimiter, deadline_scope
from arena_core.settings import ArenaSettings, Side
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.metrics import record_match
from arena_core.telemetry.spans import current_trace_id, jaeger_trace_url, safe_url, tracer
from arena_core.tool_call_parts import TOOL_CALLS_EXTENSION

logger = logging.getLogger(__name__)

TRACE_REQUEST_TIMEOUT_S = 10.0
"""Each request to the trace backend (the wait for late spans is ARENA_TRACE_WAIT_S)."""


class MatchRunner:
    """Plays matches with the attacker settings of one process."""

    def __init__(
        self,
        settings: ArenaSettings,
        *,
        model_factory: ModelFactory | None = None,
        judge_model_factory: ModelFactory | None = None,
        http: httpx.AsyncClient | None = None,
        guard: EgressGuard | None = None,
        rate_limiter: RateLimiter | None = None,
        trace_http: httpx.AsyncClient | None = None,
    ) -> None:
        """``http`` routes target traffic (tests); then only a ``guard`` given here is applied.

        Without ``http`` each match opens its own client guarded by ``guard``, by
        default the settings' ``ARENA_TARGET_ALLOWLIST``. ``rate_limiter`` limits the
        requests of every match of this runner (``http`` or not), by default an
        in-process limiter from ``ARENA_TARGET_RATE_LIMIT``/``ARENA_TARGET_RATE_BURST``.
        ``trace_http`` reads traces (``ARENA_TRACE_QUERY_URL``); by default a client per read.
        """
        self._settings = settings
        self._guard = (
            guard if guard is not None or http is not None else EgressGuard(settings.target_policy())
        )
        self._models: dict[Side, ChatModel] = {}
        self._model_factory = model_factory or (lambda: self._model("attacker"))
        self._judge_model_factory = judge_model_factory or model_factory or (lambda: self._model("judge"))
        self._http = http
        self._trace_http = trace_http
        # Not `or`: an empty LocalRateLimiter has len() 0 and is falsy.
        self._rate_limiter = (
            rate_limiter if rate_limiter is not None else LocalRateLimiter(RateLimit.from_settings(settings))
        )
        # Targets' cards, reused between matches as their Cache-Control allows; a target that
        # fails a match (unreachable, misbehaving, no card) is read anew by the next one.
        self._cards = CardCache()
        self._credential_scopes = settings.target_credential_scopes()
        for name in unscoped(settings.target_tokens, self._credential_scopes):
            logger.warning(
                "%s has no scope in ARENA_TARGET_CREDENTIAL_ORIGINS: any match that names it sends "
                "it to its target, wherever the allowlist admits; scope it to the target's origins",
                name,
            )

    @property
    def rate_limiter(self) -> RateLimiter:
        """The limiter every request to a target passes."""
        return self._rate_limiter

    def _model(self, side: Side) -> ChatModel:
        # Built on first use and reused: provider clients are not cheap.
        if side not in self._models:
            self._models[side] = ChatModel.from_config(self._settings.model_for(side))
        return self._models[side]

    async def aclose(self) -> None:
        """Release the connections of the models this runner built (at shutdown)."""
        models, self._models = list(self._models.values()), {}
        for model in models:
            await model.aclose()

    def validate(self, request: MatchRequest) -> Judge:
        """Raise InvalidInputError if ``request`` cannot be played here; return its judge."""
        validate_strategy(request.strategy, request.params, request.objective)
        build_converters(request.converters)
        judge = get_judge(request.judge, model_factory=self._judge_model_factory)
        judge.check_objective(request.objective)
        if request.max_turns > self._settings.max_turns_limit:
            raise InvalidInputError(
                f"max_turns {request.max_turns} exceeds this attacker's limit of "
                f"{self._settings.max_turns_limit} (ARENA_MAX_TURNS_LIMIT)"
            )
        self._target_headers(request)
        stated = self._stated_secrets(request)
        slot = request.objective.canary
        if stated and request.objective.needs_secrets and slot not in stated:
            # Named variables replace planting: a slot they leave out would have no secret at all.
            raise InvalidInputError(
                f"objective '{request.objective.label}' needs the {slot} secret, but the match names "
                f"variables only for {', '.join(sorted(stated))} (canary_env); name one for {slot} too"
            )
        return judge

    def _converter_chain(self, request: MatchRequest, strategy: Strategy, match_id: str) -> ConverterChain:
        """The match's converters, seeded by the match seed (or its id), rewriting with the
        attacker model (its usage counted with the strategy's) when a step asks for one."""
        seed = request.seed if request.seed is not None else converter_seed_of(match_id)
        llm: AttackerLLM | None = None

        async def rewrite(system: str, prompt: str) -> str:
            nonlocal llm
            if llm is None:
                model = self._model_factory()
                chain.rewrite_model = model.model_id
                llm = AttackerLLM(
                    model,
                    strategy.report,
                    temperature=self._settings.attacker_temperature,
                    max_tokens=self._settings.attacker_max_tokens,
                    seed=request.seed,
                )
            return await llm.ask(system, [{"role": "user", "content": prompt}], name="converter")

        chain = ConverterChain(request.converters, seed=seed, rewrite=rewrite)
        return chain

    def _stated_secrets(self, request: MatchRequest) -> dict[str, str]:
        """The secrets the request's ``canary_env`` variables hold, by slot; never quotes one."""
        stated: dict[str, str] = {}
        for slot, name in request.canary_env.items():
            value = os.environ.get(name, "").strip()
            if not value:
                raise InvalidInputError(
                    f"the match names {name} for its {slot} secret, but {name} is not set on this "
                    "attacker (set it in the attacker's environment)"
                )
            try:
                canary_skeleton(value)
            except InvalidInputError:
                raise InvalidInputError(
                    f"the {slot} secret in {name} has fewer than {MIN_CANARY_CHARS} letters and digits: "
                    "too short to tell a leak from chance; plant a longer random secret"
                ) from None
            stated[slot] = value
        return stated

    def _secrets_for(self, request: MatchRequest, target: A2ATarget) -> tuple[dict[str, str], bool]:
        """The match's secrets and whether to plant them (see the module doc)."""
        stated = self._stated_secrets(request)
        if stated:
            return stated, False
        if target.supports_extension(PLANTED_SECRETS_EXTENSION):
            return fresh_secrets(), True
        if request.objective.needs_secrets:
            raise InvalidInputError(
                f"objective '{request.objective.label}' needs a secret planted in the target, but the "
                f"target's card lists no planted-secrets extension ({PLANTED_SECRETS_EXTENSION}) and "
                "the match names no ARENA_CANARY_* variable for it (canary_env)"
            )
        return {}, False

    def _action_source(self, request: MatchRequest, target: A2ATarget) -> ActionSource | None:
        """Where the judge reads the defender's tool calls (see the module doc)."""
        if request.objective.kind != "action":
            return None
        if target.supports_extension(TOOL_CALLS_EXTENSION):
            return "task"
        if self._settings.trace_query_url:
            if current_trace_id() is None:
                raise InvalidInputError(
                    f"objective '{request.objective.label}' is judged on the target's tool calls, which "
                    "it reports only in its trace, and this attacker does not trace its matches "
                    "(telemetry is off, or the match was not sampled): set OTEL_EXPORTER_OTLP_ENDPOINT"
                )
            return "trace"
        raise InvalidInputError(
            f"objective '{request.objective.label}' is judged on the target's tool calls, but its card "
            f"lists no tool-calls extension ({TOOL_CALLS_EXTENSION}) and this attacker has no trace "
            "backend to read them from (set ARENA_TRACE_QUERY_URL to a Jaeger query API)"
        )

    def _documents_for(
        self, request: MatchRequest, target: A2ATarget
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        """The documents to plant and the values only they hold (none unless the objective needs them)."""
        if not request.objective.needs_documents:
            return {}, ()
        if not target.supports_extension(PLANTED_DOCUMENTS_EXTENSION):
            raise InvalidInputError(
                f"objective '{request.objective.label}' plants a document in the target, but its card "
                f"lists no planted-documents extension ({PLANTED_DOCUMENTS_EXTENSION})"
            )
        return injection_documents()

    async def _judge_from_trace(self, session: MatchSession) -> None:
        """Read the defender's tool calls from the match's trace and judge the match on them."""
        trace_id = current_trace_id()
        base_url = self._settings.trace_query_url
        if trace_id is None or not base_url:
            raise TraceUnavailableError(
                "this match is not traced (telemetry is off in the attacker): the defender's actions "
                "cannot be read from a trace"
            )
        http = self._trace_http or httpx.AsyncClient(
            timeout=TRACE_REQUEST_TIMEOUT_S, verify=shared_tls_context()
        )
        try:
            reading = await read_actions(
                http,
                base_url,
                trace_id,
                turn_spans=session.turn_spans,
                turns=len(session.turns),
                wait_s=self._settings.trace_wait_s,
                settle_s=self._settings.trace_settle_s,
            )
        finally:
            if self._trace_http is None:
                await http.aclose()
        # The defender's spans are its words too: credentials it echoes into them are cut out.
        records = session.target.redact_records([action.record for action in reading.actions])
        verdict = await session.judge_trace(
            [(r, a.turn) for r, a in zip(records, reading.actions, strict=True)]
        )
        if not verdict.success:
            return
        decisive = next(
            (
                a
                for r, a in zip(records, reading.actions, strict=True)
                if describe_call(r) == verdict.evidence
            ),
            None,
        )
        where = f"trace {trace_id}"
        if decisive is not None:
            where = f"span {decisive.span_id} ({decisive.service or 'unknown service'}) of {where}"
        link = jaeger_trace_url(self._settings.jaeger_url, trace_id)
        session.decide(
            verdict.model_copy(
                update={"reason": f"{verdict.reason}; {where}" + (f": {link}" if link else "")}
            )
        )

    def _target_headers(self, request: MatchRequest) -> dict[str, str] | None:
        """The credentials to send to the target, or None; never quotes a secret."""
        name = request.target_token_env
        if name is None:
            return None
        return {"Authorization": f"Bearer {self.target_token(name, request.target)}"}

    def target_token(self, name: str, target: str) -> str:
        """The value of this process's ``ARENA_TARGET_TOKEN_*`` variable ``name``, to send to ``target``.

        A token scoped by ``ARENA_TARGET_CREDENTIAL_ORIGINS`` is refused for a target on
        another origin, before anything connects; an unset variable, or a value a header
        cannot carry, is refused too (InvalidInputError, never quoting the secret).
        """
        scope = self._credential_scopes.get(name)
        if scope is not None and origin_of(target) not in scope:
            allowed = ", ".join(sorted(display(origin) for origin in scope))
            raise InvalidInputError(
                f"{name} may be sent only to {allowed} (ARENA_TARGET_CREDENTIAL_ORIGINS on this "
                f"attacker); the target {safe_url(target)} is not one of them"
            )
        secret = self._settings.target_tokens.get(name)
        token = secret.get_secret_value().strip() if secret is not None else ""
        if not token:
            raise InvalidInputError(
                f"the request asks for the target token in {name}, but {name} is not set on this "
                "attacker (set it in the attacker's environment, or drop the token from the request)"
            )
        if any(not "\x21" <= char <= "\x7e" for char in token):
            raise InvalidInputError(
                f"{name} on this attacker holds characters a bearer token cannot carry over HTTP "
                "(only visible ASCII, no spaces)"
            )
        return token

    @property
    def guard(self) -> EgressGuard | None:
        """The egress guard targets are reached through (None only when tests route ``http``)."""
        return self._guard

    async def run(self, request: MatchRequest, *, on_turn: TurnListener | None = None) -> MatchResult:
        """Play ``request`` and return its result (see the module doc for errors).

        The match is one ``invoke_agent arena-attacker`` span (a child of the caller's
        span when the request carried a ``traceparent``); its trace id is in the result.
        """
        labels = {attrs.ARENA_STRATEGY: request.strategy, attrs.ARENA_JUDGE: request.judge}
        with tracer().start_as_current_span(
            "invoke_agent arena-attacker",
            attributes={
                attrs.GEN_AI_OPERATION_NAME: attrs.OPERATION_INVOKE_AGENT,
                attrs.GEN_AI_AGENT_NAME: "arena-attacker",
                attrs.ARENA_TARGET_URL: safe_url(request.target),
                **({attrs.ARENA_MATCH_ID: request.match_id} if request.match_id else {}),
                **labels,
            },
        ) as span:
            result = await self._run(request, on_turn=on_turn)
            span.set_attribute(attrs.ARENA_OUTCOME, result.outcome)
            if result.verdict is not None:
                span.set_attribute(attrs.ARENA_VERDICT, result.verdict.success)
            if result.error_kind:
                span.set_attribute(attrs.ARENA_ERROR_KIND, result.error_kind)
            record_match(result.outcome, labels)
            return result.model_copy(update={"trace_id": current_trace_id()})

    async def _run(self, request: MatchRequest, *, on_turn: TurnListener | None) -> MatchResult:
        judge = self.validate(request)
        headers = self._target_headers(request)
        strategy = create_strategy(
            request.strategy,
            request.params,
            request.objective,
            StrategyContext(
                model_factory=self._model_factory,
                temperature=self._settings.attacker_temperature,
                max_tokens=self._settings.attacker_max_tokens,
            ),
        )
        match_id = request.match_id or str(uuid.uuid4())
        converters = self._converter_chain(request, strategy, match_id)
        started_at = datetime.now(UTC)
        clock = time.perf_counter()
        target: A2ATarget | None = None
        session: MatchSession | None = None
        secrets_source: Literal["planted", "stated"] | None = None
        error: ArenaError | None = None
        refusal: str | None = None
        try:
            async with asyncio.timeout(self._settings.match_timeout_s):
                # No rate-limit wait may outlast the match: such a request fails as rate_limited.
                with deadline_scope(time.monotonic() + self._settings.match_timeout_s):
                    target = await connect_target(
                        request.target,
                        timeout_s=self._settings.target_timeout_s,
                        http=self._http,
                        headers=headers,
                        guard=self._guard,
                        limiter=self._rate_limiter,
                        max_response_bytes=self._settings.target_max_response_bytes,
                        card_cache=self._cards,
                        credential_scope=(
                            self._credential_scopes.get(request.target_token_env)
                            if request.target_token_env
                            else None
                        ),
                    )
                    secrets, plant = self._secrets_for(request, target)
                    secrets_source = ("planted" if plant else "stated") if secrets else None
                    documents, planted_values = self._documents_for(request, target)
                    action_source = self._action_source(request, target)
                    session = MatchSession(
                        request,
                        target,
                        judge,
                        on_turn=on_turn,
                        secrets=secrets,
                        plant=plant,
                        documents=documents,
                        planted_values=planted_values,
                        action_source=action_source,
                        converters=converters,
                        seed=converters.seed,
                    )
                    with contextlib.suppress(MatchOver):
                        await strategy.play(session)
                    if session.turns and session.action_source == "trace":
                        # Within the match's time budget: the orchestrator waits no longer.
                        await self._judge_from_trace(session)
        except AttackerRefused as exc:
            refusal = exc.text
        except ArenaError as exc:
            # Already classified by the target client (a broken connection is target_unreachable).
            error = exc
            self._cards.forget_after(exc, card_url_for(request.target))
        except TimeoutError:
            error = ArenaError(
                f"the match did not finish within {self._settings.match_timeout_s:g} s "
                "(ARENA_MATCH_TIMEOUT_S)"
            )
        finally:
            if target is not None:
                await target.close()
        if error is None and refusal is None and session is not None and not session.turns:
            # A strategy that never spoke to the target has not tested its defence.
            error = AttackerInactiveError(
                f"the '{request.strategy}' attacker never sent a message to the target "
                f"(attacker model: {strategy.report.attacker_model or 'none'})"
            )
        if error is not None:
            logger.info("match %s ended in error: %s", match_id, error.message)
        turns = session.turns if session else []
        outcome: Outcome
        if session is not None and session.won:
            outcome = "attacker_won"
        elif error is not None:
            outcome = "error"
        elif refusal is not None:
            outcome = "attacker_refused"
        else:
            outcome = "defended"
        verdict = None
        if session is not None:
            verdict = (
                session.winning_verdict or session.final_verdict or (turns[-1].verdict if turns else None)
            )
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
            defender_profile=session.defender_profile if session else None,
            attacker_usage=strategy.report.attacker_usage,
            defender_usage=session.defender_usage if session else TokenUsage(),
            protocol=_protocol(target),
            started_at=started_at,
            finished_at=datetime.now(UTC),
            duration_ms=(time.perf_counter() - clock) * 1000,
            error=error.message if error and outcome == "error" else None,
            error_kind=error.kind if error and outcome == "error" else None,
            attacker_refusal=refusal,
            reproducibility=_reproducibility(request, strategy, judge, converters),
            secrets=secrets_source,
            actions_from=session.action_source if session else None,
        )


def _protocol(target: A2ATarget | None) -> ProtocolInfo | None:
    if target is None:
        return None
    return ProtocolInfo(binding=target.binding, version=target.protocol_version, url=target.interface.url)


def _reproducibility(
    request: MatchRequest, strategy: Strategy, judge: Judge, converters: ConverterChain
) -> Reproducibility:
    report = strategy.report
    return Reproducibility(
        converters=list(converters.labels),
        converter_seed=converters.seed if converters else None,
        converter_model=report.attacker_model if converters.uses_model else None,
        strategy_params=strategy.params.model_dump(mode="json"),
        seed=request.seed,
        attacker_model=report.attacker_model,
        attacker_temperature=report.attacker_temperature,
        judge_model=judge.model_id,
        prompt_hashes={**report.prompt_hashes, **getattr(judge, "prompt_hashes", {})},
    )


__all__ = ["MatchRunner"]
