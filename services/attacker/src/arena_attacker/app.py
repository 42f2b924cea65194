"""Assemble the attacker service from settings."""

from __future__ import annotations

import json

import httpx
from a2a.types.a2a_pb2 import AgentSkill
from starlette.applications import Starlette

from arena_attacker.attacker_executor import AttackerExecutor
from arena_attacker.match_runner import MatchRunner
from arena_attacker.request_help import EXAMPLE_REQUEST, EXAMPLE_SENTENCE
from arena_attacker.strategies import STRATEGY_NAMES, ModelFactory
from arena_core.a2a.agent_app import CardSpec, all_ready, build_agent_app, build_agent_card
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.http_limits import RequestLimits
from arena_core.match_models import MATCH_REQUEST_MEDIA_TYPE
from arena_core.model_probe import model_readiness
from arena_core.probes.model import PROBE_REQUEST_MEDIA_TYPE
from arena_core.rate_limit import create_target_rate_limiter
from arena_core.settings import ArenaSettings
from arena_core.state_backend import create_state_backend

VERSION = "0.1.0"


def attacker_card_spec() -> CardSpec:
    """The attacker's self-description."""
    return CardSpec(
        name="Arena Attacker",
        description=(
            "Red-team agent of A2A Arena: plays a match against any A2A agent, trying to make it "
            "say a forbidden phrase, and streams one status update per turn."
        ),
        version=VERSION,
        skills=[
            AgentSkill(
                id="red-team",
                name="Red-team a target",
                description=(
                    "Input: a DataPart {target, objective, strategy, max_turns, judge, seed}, or a "
                    "sentence naming the target's URL and optionally a strategy, the phrase in quotes "
                    "after 'until it says', and 'N turns' (anything unclear is answered input-required "
                    "with the request's schema and an example). "
                    f"Strategies: {', '.join(STRATEGY_NAMES)}. Judges: phrase, exact, strict. "
                    "Streams a working status per turn and returns a 'match-result' artifact."
                ),
                tags=["red-team", "security", "evaluation"],
                examples=[json.dumps(EXAMPLE_REQUEST), EXAMPLE_SENTENCE],
                # The DataPart's own media type too: validate_input_modes refuses undeclared ones.
                input_modes=["application/json", MATCH_REQUEST_MEDIA_TYPE, "text/plain"],
                output_modes=["application/json", "text/plain"],
            ),
            AgentSkill(
                id="probe",
                name="Probe an agent's A2A surface",
                description=(
                    'Input: a DataPart {"probe": {target, only, skip, fail_on, max_requests, rate_per_s, '
                    "wait_s, target_token_env, second_token_env}}. Runs the protocol security checks "
                    "(card, authentication, isolation between callers, push notifications, resource "
                    "bounds, input handling, error leaks) against the target, never leaving its origin; "
                    "streams a working status per check and returns a 'probe-report' artifact."
                ),
                tags=["red-team", "security", "a2a-protocol"],
                examples=[json.dumps({"probe": {"target": "http://localhost:8001", "fail_on": "medium"}})],
                input_modes=["application/json", PROBE_REQUEST_MEDIA_TYPE],
                output_modes=["application/json", "text/plain"],
            ),
        ],
        streaming=True,
    )


def create_attacker_app(
    settings: ArenaSettings,
    *,
    public_url: str,
    model_factory: ModelFactory | None = None,
    target_http: httpx.AsyncClient | None = None,
    target_guard: EgressGuard | None = None,
) -> Starlette:
    """Build the attacker ASGI app.

    ``target_http`` overrides how targets are reached (tests route it to an
    in-process defender); by default each match opens its own connection,
    guarded by ``ARENA_TARGET_ALLOWLIST``. ``target_guard`` replaces that guard
    (and applies to ``target_http`` too). Requests to targets are rate limited per
    origin (``ARENA_TARGET_RATE_LIMIT``), shared by all replicas through Redis when
    ``ARENA_REDIS_URL`` is set. At most ``ARENA_ATTACKER_MAX_ACTIVE_MATCHES`` matches play at
    once; a match beyond that is refused (task failed, error kind ``attacker_busy``).
    """
    rate_limiter = create_target_rate_limiter(settings)
    runner = MatchRunner(
        settings, model_factory=model_factory, http=target_http, guard=target_guard, rate_limiter=rate_limiter
    )
    tokens = settings.accepted_tokens()
    card = build_agent_card(attacker_card_spec(), public_url, bearer_auth=tokens.enabled)
    state = create_state_backend(settings)
    return build_agent_app(
        card,
        AttackerExecutor(runner, max_active_matches=settings.attacker_max_active_matches),
        readiness=all_ready(state.readiness, model_readiness(settings.model_for("attacker"))),
        task_store=state.task_store,
        event_stream=state.event_stream,
        card_compat=settings.card_v03_compat,
        card_max_age_s=settings.card_max_age_s,
        task_idle_timeout_s=settings.parked_task_release_s(),
        on_shutdown=[state.close, rate_limiter.close, runner.aclose],
        limits=RequestLimits.from_settings(settings),
        tokens=tokens,
    )


__all__ = ["VERSION", "attacker_card_spec", "create_attacker_app"]
