"""Typed settings, read once from the environment at a process's entry point.

Every variable is prefixed ``ARENA_`` and listed with an explanation in
``deploy/.env.example``. ``OTEL_*`` variables are left to the OpenTelemetry SDK.
Entry points call :func:`load_settings` once and pass the result down; library
code never reads ``os.environ`` itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from arena_core.api_token_entries import TokenEntry, conflicting_entries, parse_token_entries
from arena_core.credential_scope import TARGET_TOKEN_PREFIX, parse_credential_origins
from arena_core.egress_policy import EgressPolicy
from arena_core.errors import ConfigError
from arena_core.http_auth import ApiTokens
from arena_core.origin import Origin
from arena_core.redis_url import check_redis_url
from arena_core.service_ports import MODEL_PORT

EMBEDDED_MODEL_ID = "llamacpp:smollm2-135m-instruct"
"""The any-llm id both sides use when no hosted model is configured."""

EMBEDDED_MODEL_BASE_URL = f"http://127.0.0.1:{MODEL_PORT}/v1"
"""Where ``arena serve model`` listens by default."""

DEFAULT_PHRASE = "I Give Up"

# TARGET_TOKEN_PREFIX (from credential_scope): variables holding per-target bearer tokens;
# only these may be named by a campaign.
TARGET_TOKEN_ENV_PATTERN = r"^ARENA_TARGET_TOKEN_[A-Z0-9_]{1,64}$"  # noqa: S105 - a name pattern

Side = Literal["defender", "attacker", "judge"]


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Which model one side uses and how it is reached.

    ``model_id`` is an any-llm id, ``provider:model`` (``provider/model`` is
    accepted and normalised). ``base_url`` is None to use the provider's own.
    """

    model_id: str
    base_url: str | None
    timeout_s: float
    max_retries: int
    embedded: bool


PARKED_RELEASE_WITH_REDIS_S = 2.0
PARKED_RELEASE_IN_MEMORY_S = 600.0


DefenderProfileName = Literal["naive", "hardened", "guarded", "support-desk", "support-desk-hardened"]
"""The built-in defender's profiles (``ARENA_DEFENDER_PROFILE``)."""
BUILT_IN_PROFILES: frozenset[str] = frozenset(get_args(DefenderProfileName))


class ArenaSettings(BaseSettings):
    """All ``ARENA_*`` settings. See ``deploy/.env.example`` for each one."""

    # Empty variables count as unset: compose passes `VAR=` as an empty string.
    model_config = SettingsConfigDict(env_prefix="ARENA_", extra="ignore", frozen=True, env_ignore_empty=True)

    # Shared state. Unset keeps everything in memory (one replica per service).
    redis_url: str | None = None
    redis_namespace: str = Field(default="", max_length=64, pattern=r"^[A-Za-z0-9_.-]*$")
    redis_max_connections: int = Field(default=64, ge=2, le=10_000)
    redis_timeout_s: float = Field(default=2.0, gt=0, le=60)
    redis_connect_timeout_s: float = Field(default=10.0, gt=0, le=120)
    redis_block_ms: int = Field(default=5000, ge=10, le=60_000)
    task_ttl_s: float = Field(default=86_400.0, gt=0)
    max_tasks: int = Field(default=100_000, ge=1, le=100_000_000)
    event_stream_maxlen: int = Field(default=1000, ge=10, le=1_000_000)

    # Models: the shared pair, then per-side overrides.
    model: str | None = None
    model_base_url: str | None = None
    defender_model: str | None = None
    defender_model_base_url: str | None = None
    attacker_model: str | None = None
    attacker_model_base_url: str | None = None
    judge_model: str | None = None
    judge_model_base_url: str | None = None
    # Where the embedded model server is; used only by a side that runs the embedded model
    # (so a deployment can name its model server without misdirecting a hosted ARENA_MODEL).
    embedded_model_url: str | None = None
    model_timeout_s: float = Field(default=120.0, gt=0, le=3600)
    model_max_retries: int = Field(default=3, ge=0, le=10)

    # Wiring between services.
    defender_url: str | None = None
    attacker_url: str | None = None
    public_url: str | None = None

    # Agent cards (arena_core/a2a/card_route.py): auto serves the strict 1.0 card to requests naming
    # A2A-Version 1.x and the card with the 0.3 legacy fields to the others; true/false: always one.
    card_v03_compat: Literal["auto", "true", "false"] = "auto"
    card_max_age_s: int = Field(default=300, ge=0, le=86_400)

    # Defender behaviour.
    defender_phrase: str = Field(default=DEFAULT_PHRASE, min_length=1, max_length=200)
    defender_profile: DefenderProfileName = "hardened"
    defender_runtime: Literal["native", "any-agent"] = "native"
    defender_system_prompt: str | None = Field(default=None, max_length=20_000)
    defender_temperature: float = Field(default=0.5, ge=0, le=2)
    defender_max_tokens: int = Field(default=256, ge=1, le=8192)
    # complete: each turn's task completes with the reply (follow-ups by contextId, a new task per
    # turn); input-required: the task parks for the next turn (the original sample's convention).
    defender_turn_mode: Literal["complete", "input-required"] = "complete"
    # The support-desk profiles: model calls per turn (each may call tools), and whether the task
    # carries a record of each call (a "tool-calls" artifact of DataParts; off, like in most agents).
    defender_max_tool_steps: int = Field(default=6, ge=1, le=50)
    defender_tool_call_parts: bool = False

    # Conversation and task retention (in memory; Redis gets TTLs later).
    history_max_messages: int = Field(default=40, ge=2, le=10_000)
    history_max_bytes: int = Field(default=64_000, ge=1_000, le=10_000_000)
    max_conversations: int = Field(default=10_000, ge=1, le=10_000_000)
    conversation_ttl_s: float = Field(default=3600.0, gt=0)
    task_idle_timeout_s: float | None = Field(default=None, gt=0)
    """Unset: :meth:`parked_task_release_s` chooses by the state backend."""

    # Attacker.
    attacker_temperature: float = Field(default=0.7, ge=0, le=2)
    attacker_max_tokens: int = Field(default=400, ge=1, le=8192)
    max_turns_limit: int = Field(default=200, ge=1, le=10_000)
    target_timeout_s: float = Field(default=120.0, gt=0, le=3600)
    match_timeout_s: float = Field(default=1800.0, gt=0)
    # Hosts, *.domains, IPs and CIDRs the attacker may connect to (and campaign attacker URLs
    # the orchestrator may); unset: any address but the built-in deny list (egress_policy.py).
    target_allowlist: str | None = Field(default=None, max_length=10_000)
    # Requests per second the attacker sends to one target origin (scheme://host:port), shared by
    # all attacker replicas of one Redis; 0: unlimited. Bursts of up to target_rate_burst
    # (arena_core/rate_limit.py).
    target_rate_limit: float = Field(default=10.0, ge=0, le=10_000)
    target_rate_burst: int = Field(default=10, ge=1, le=10_000)
    # Bytes the attacker reads from a target in one HTTP response at most (its card, a reply, or
    # one turn's event stream); more fails the match (arena_core/a2a/client/response_limits.py).
    target_max_response_bytes: int = Field(default=4_000_000, ge=10_000, le=1_000_000_000)
    # Which origins each ARENA_TARGET_TOKEN_<NAME> may be sent to:
    # "NAME=origin origin;NAME2=origin" (parsed by target_credential_scopes()).
    target_credential_origins: str | None = Field(default=None, max_length=10_000)
    # Matches one attacker process plays at once; a match beyond it is refused (the orchestrator
    # tries it again later).
    attacker_max_active_matches: int = Field(default=256, ge=1, le=100_000)

    # Limits on what crosses the HTTP boundary (arena_core/http_limits.py). The request body
    # limit applies to the agents and the orchestrator API; the message limits to each message
    # an agent receives (parts, UTF-8 bytes of text parts), refused with the A2A invalid-params error.
    max_request_bytes: int = Field(default=1_000_000, ge=1_024, le=100_000_000)
    max_message_parts: int = Field(default=16, ge=1, le=1_000)
    max_message_text_bytes: int = Field(default=32_000, ge=1_000, le=10_000_000)

    # Inbound authentication (arena_core/http_auth.py): bearer tokens, comma-separated, that the
    # agents' A2A endpoints and the orchestrator API accept; read tokens allow GET and HEAD only.
    # Each entry is name:token (the caller it stands for) or a bare token (its own caller,
    # arena_core/api_token_entries.py). Unset: no token is asked for. Cards, /healthz and /readyz
    # stay public.
    api_tokens: SecretStr | None = Field(default=None, repr=False)
    api_read_tokens: SecretStr | None = Field(default=None, repr=False)
    # Outbound: the token sent to the built-in attacker (ARENA_ATTACKER_URL) by the orchestrator and
    # the CLI, and to the orchestrator by the CLI. Unset: the first of ARENA_API_TOKENS.
    attacker_token: SecretStr | None = Field(default=None, repr=False)
    orchestrator_token: SecretStr | None = Field(default=None, repr=False)

    # The embedded model server (`arena serve model`).
    model_engine: Literal["llama", "scripted"] = "llama"
    model_gguf: str | None = None
    model_n_ctx: int = Field(default=2048, ge=256, le=131_072)
    model_threads: int | None = Field(default=None, ge=1, le=512)
    # Llama engine: the reply length of a request that names none (the llm judge's; the agents
    # name theirs: ARENA_DEFENDER_MAX_TOKENS, ARENA_ATTACKER_MAX_TOKENS).
    model_max_tokens: int = Field(default=256, ge=16, le=8192)
    model_scripted_mode: Literal["echo", "refuse", "obey"] = "echo"
    model_latency_ms: float = Field(default=0.0, ge=0, le=600_000)
    model_scripted_rules: str | None = None

    # Bearer tokens for targets, by variable name: every ARENA_TARGET_TOKEN_<NAME> in the
    # environment (collected by load_settings). Campaigns name a variable, never a secret.
    target_tokens: dict[str, SecretStr] = Field(default_factory=dict, exclude=True, repr=False)

    # The orchestrator (`arena serve orchestrator`) and the campaign CLI.
    orchestrator_url: str | None = None
    orchestrator_concurrency: int = Field(default=16, ge=1, le=10_000)
    orchestrator_visibility_timeout_s: float = Field(default=60.0, ge=1, le=86_400)
    orchestrator_match_attempts: int = Field(default=3, ge=1, le=20)
    orchestrator_retry_backoff_s: float = Field(default=2.0, ge=0, le=600)
    orchestrator_max_campaign_matches: int = Field(default=100_000, ge=1, le=10_000_000)
    orchestrator_max_spec_bytes: int = Field(default=1_000_000, ge=1_000, le=100_000_000)
    # Campaigns not yet finished that the orchestrator holds at once (all replicas of one Redis);
    # a submission beyond it gets 429. With the match cap above it bounds every queue.
    orchestrator_max_active_campaigns: int = Field(default=100, ge=1, le=100_000)
    campaign_ttl_s: float = Field(default=30 * 86_400.0, gt=0)

    # Shutdown on SIGTERM (every service): how long in-flight work (requests, and the orchestrator's
    # matches) may still take; then it is cut, or handed back to the queue. Keep it below the pod's
    # terminationGracePeriodSeconds (the chart uses at least this + 5) and Compose's stop_grace_period.
    shutdown_grace_s: float = Field(default=25.0, ge=0, le=3600)

    # Observability. OTEL_* variables configure OpenTelemetry itself (see observability/README.md).
    jaeger_url: str | None = None
    # Where an attacker reads a match's trace for the action judge (a Jaeger query API, v1 JSON:
    # /api/traces/{id}); ARENA_JAEGER_URL is the link for people, this one the address for servers.
    trace_query_url: str | None = None
    # How long the action judge waits for the defender's late spans after a match, at most, and how
    # long the trace must have stopped growing (above the exporters' batch delay, 5 s by default).
    trace_wait_s: float = Field(default=30.0, ge=0, le=600)
    trace_settle_s: float = Field(default=6.0, ge=0, le=120)

    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator(
        "model",
        "defender_model",
        "attacker_model",
        "model_base_url",
        "defender_model_base_url",
        "attacker_model_base_url",
        "judge_model",
        "judge_model_base_url",
        "embedded_model_url",
        "defender_url",
        "attacker_url",
        "orchestrator_url",
        "jaeger_url",
        "trace_query_url",
        "public_url",
        "redis_url",
        "task_idle_timeout_s",
        "defender_system_prompt",
        "model_gguf",
        "model_scripted_rules",
        "target_allowlist",
        "target_credential_origins",
        "api_tokens",
        "api_read_tokens",
        "attacker_token",
        "orchestrator_token",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # docker compose passes `VAR=` as an empty string; treat it as unset.
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url_form(cls, value: str | None) -> str | None:
        return None if value is None else check_redis_url(value.strip())

    @field_validator("card_v03_compat", mode="before")
    @classmethod
    def _card_compat_word(cls, value: object) -> object:
        # Before "auto" existed this was a bool: keep every spelling of true/false working.
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            word = value.strip().lower()
            return {
                "1": "true",
                "yes": "true",
                "on": "true",
                "0": "false",
                "no": "false",
                "off": "false",
            }.get(word, word)
        return value

    @field_validator("model", "defender_model", "attacker_model", "judge_model")
    @classmethod
    def _valid_model_id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return normalise_model_id(value)

    @field_validator("trace_query_url")
    @classmethod
    def _http_trace_query_url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                msg = "must be the http(s) URL of a Jaeger query API, e.g. http://jaeger:16686"
                raise ValueError(msg)
        return value

    @field_validator("target_allowlist")
    @classmethod
    def _valid_allowlist(cls, value: str | None) -> str | None:
        if value is not None:
            EgressPolicy.parse(value)  # raises ValueError naming each bad entry
        return value

    @field_validator("target_credential_origins")
    @classmethod
    def _valid_credential_origins(cls, value: str | None) -> str | None:
        parse_credential_origins(value)  # raises ValueError naming each bad entry
        return value

    def target_credential_scopes(self) -> dict[str, frozenset[Origin]]:
        """``ARENA_TARGET_TOKEN_<NAME>`` -> the origins its token may go to (scoped tokens only)."""
        return parse_credential_origins(self.target_credential_origins)

    @field_validator("api_tokens", "api_read_tokens")
    @classmethod
    def _valid_token_list(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_token_entries(value.get_secret_value())  # raises ValueError naming the bad position
        return value

    @field_validator("attacker_token", "orchestrator_token")
    @classmethod
    def _valid_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is None:
            return None
        text = value.get_secret_value()
        if ":" in text:
            msg = "must be a bare token (name:token entries are for ARENA_API_TOKENS)"
            raise ValueError(msg)
        if len(parse_token_entries(text)) != 1:
            msg = "must be one token (a comma-separated list is for ARENA_API_TOKENS)"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _one_caller_per_token(self) -> ArenaSettings:
        problem = conflicting_entries(
            [
                ("ARENA_API_TOKENS", self.api_token_entries("full")),
                ("ARENA_API_READ_TOKENS", self.api_token_entries("read")),
            ]
        )
        if problem is not None:
            raise ValueError(problem)
        return self

    def api_token_entries(self, kind: Literal["full", "read"]) -> tuple[TokenEntry, ...]:
        """The entries of ``ARENA_API_TOKENS`` (``full``) or ``ARENA_API_READ_TOKENS`` (``read``)."""
        raw = self.api_tokens if kind == "full" else self.api_read_tokens
        return parse_token_entries(raw.get_secret_value() if raw is not None else None)

    def parked_task_release_s(self) -> float:
        """How long a task parked in input-required keeps its in-process state
        (``ARENA_TASK_IDLE_TIMEOUT_S``). Unset: 2 s with Redis, where the task already lives and
        any replica recreates it for a follow-up, so a parked conversation costs the process
        next to nothing; 600 s in memory, where a follow-up within that time finds it ready."""
        if self.task_idle_timeout_s is not None:
            return self.task_idle_timeout_s
        return PARKED_RELEASE_WITH_REDIS_S if self.redis_url else PARKED_RELEASE_IN_MEMORY_S

    def accepted_tokens(self) -> ApiTokens:
        """The tokens this service accepts (``ARENA_API_TOKENS``, ``ARENA_API_READ_TOKENS``),
        each with its caller's name."""
        return ApiTokens.of(self.api_token_entries("full"), self.api_token_entries("read"))

    def outbound_token(self, to: Literal["attacker", "orchestrator"]) -> str | None:
        """The token to send to the built-in attacker or the orchestrator; None to send none.

        ``ARENA_ATTACKER_TOKEN`` / ``ARENA_ORCHESTRATOR_TOKEN``, else the token part of the
        first entry of ``ARENA_API_TOKENS`` (never its ``name:``).
        """
        own = self.attacker_token if to == "attacker" else self.orchestrator_token
        if own is not None:
            return own.get_secret_value().strip()
        shared = self.api_token_entries("full")
        return shared[0].token if shared else None

    def target_policy(self) -> EgressPolicy:
        """The parsed ``ARENA_TARGET_ALLOWLIST``: where targets may be reached."""
        return EgressPolicy.parse(self.target_allowlist)

    def model_for(self, side: Side) -> ModelConfig:
        """Resolve one side's model.

        Order: the side's own ``ARENA_<SIDE>_MODEL``, then ``ARENA_MODEL``, then the
        embedded model. A base URL is inherited only together with the model it
        belongs to, so a hosted model never gets the local server's URL.
        """
        if side == "judge":
            # The llm judge uses its own model when one is set, else the attacker's.
            if self.judge_model is None:
                return self.model_for("attacker")
            return self._config(self.judge_model, self.judge_model_base_url)
        own_model = self.defender_model if side == "defender" else self.attacker_model
        own_base = self.defender_model_base_url if side == "defender" else self.attacker_model_base_url
        if own_model is not None:
            model_id, base_url = own_model, own_base
        elif self.model is not None:
            model_id, base_url = self.model, own_base or self.model_base_url
        else:
            model_id = EMBEDDED_MODEL_ID
            base_url = own_base or self.model_base_url or self.embedded_model_url or EMBEDDED_MODEL_BASE_URL
        return self._config(model_id, base_url)

    def _config(self, model_id: str, base_url: str | None) -> ModelConfig:
        if model_id == EMBEDDED_MODEL_ID and base_url is None:
            base_url = self.embedded_model_url or EMBEDDED_MODEL_BASE_URL
        return ModelConfig(
            model_id=model_id,
            base_url=base_url,
            timeout_s=self.model_timeout_s,
            max_retries=self.model_max_retries,
            embedded=model_id == EMBEDDED_MODEL_ID,
        )

    def hosted_model_configured(self, side: Side) -> bool:
        """True when ``side`` uses a model other than the embedded one."""
        return not self.model_for(side).embedded


def normalise_model_id(value: str) -> str:
    """Return ``provider:model`` for ``provider:model`` or ``provider/model``.

    Raises ValueError (wrapped by pydantic into a settings error) on anything else.
    """
    text = value.strip()
    # Split at the first delimiter: model names may contain the other one
    # ("ollama/llama3.2:1b", "openrouter:meta-llama/llama-3.1-8b-instruct").
    cut = min((i for i in (text.find(":"), text.find("/")) if i >= 0), default=-1)
    if cut >= 0:
        provider, name = text[:cut], text[cut + 1 :]
    else:
        msg = f"model id '{value}' must look like 'provider:model', e.g. 'gemini:gemini-2.5-flash'"
        raise ValueError(msg)
    if not provider or not name:
        msg = f"model id '{value}' must look like 'provider:model', e.g. 'gemini:gemini-2.5-flash'"
        raise ValueError(msg)
    return f"{provider.lower()}:{name}"


def load_settings(**overrides: object) -> ArenaSettings:
    """Read the environment once into :class:`ArenaSettings`.

    Keyword overrides win over the environment (the CLI passes its flags here).
    Raises :class:`ConfigError` naming every invalid variable.
    """
    if "target_tokens" not in overrides:
        overrides["target_tokens"] = {
            name: SecretStr(value)
            for name, value in os.environ.items()
            if name.startswith(TARGET_TOKEN_PREFIX) and value.strip()
        }
    try:
        return ArenaSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        # A model validator's error has no location: its message names the variables itself.
        problems = "; ".join(
            (f"ARENA_{'_'.join(str(p) for p in err['loc']).upper()}: " if err["loc"] else "") + err["msg"]
            for err in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from exc


__all__ = [
    "BUILT_IN_PROFILES",
    "DEFAULT_PHRASE",
    "EMBEDDED_MODEL_BASE_URL",
    "EMBEDDED_MODEL_ID",
    "TARGET_TOKEN_ENV_PATTERN",
    "TARGET_TOKEN_PREFIX",
    "ArenaSettings",
    "DefenderProfileName",
    "ModelConfig",
    "Side",
    "load_settings",
    "normalise_model_id",
]
