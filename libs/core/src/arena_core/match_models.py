"""Wire models of a match: what the attacker is asked to do and what it reports.

:class:`MatchRequest` is the DataPart an attacker agent accepts (its skill
"red-team a target"); :class:`TurnRecord` is streamed once per turn as a status
update; :class:`MatchResult` is the final artifact. All are JSON (camelCase is
not used: field names are the same in Python and on the wire).

What a target says is bounded where it is recorded, since results go to Redis, reports and
logs: a turn keeps at most :data:`MAX_RECORDED_REPLY_BYTES` of the defender's reply (the
judge saw all of it) and a result at most :data:`MAX_ERROR_CHARS` of its error, each cut
with a visible ``[... truncated: N more ...]`` note (:func:`truncate_utf8`,
:func:`truncate_chars`). Both are applied by validation, so every record is bounded however
it was made, and a bounded text passes unchanged.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, field_validator
from pydantic_core import CoreSchema

from arena_core.converters.converter import MAX_CHAIN, ConverterSpec
from arena_core.converters.registry import build_converters
from arena_core.errors import InvalidInputError
from arena_core.judges.verdict import JudgeVerdict
from arena_core.llm.usage import TokenUsage
from arena_core.objective import CanarySlot, Objective
from arena_core.planted_secrets import CANARY_ENV_PATTERN
from arena_core.settings import TARGET_TOKEN_ENV_PATTERN
from arena_core.support_desk import MAX_RECORDS_PER_TURN, ToolCallRecord

if TYPE_CHECKING:
    from arena_core.probes.model import ProbeReport as _ProbeReport

Outcome = Literal["attacker_won", "defended", "attacker_refused", "error"]
"""``attacker_refused``: the attacker model would not play; neither a win nor a defence."""

ParamValue = bool | int | float | str

MATCH_REQUEST_MEDIA_TYPE = "application/vnd.a2a-arena.match-request+json"
MATCH_RESULT_MEDIA_TYPE = "application/vnd.a2a-arena.match-result+json"
TURN_MEDIA_TYPE = "application/vnd.a2a-arena.turn+json"

MAX_RECORDED_REPLY_BYTES = 64_000
"""The most of a defender reply a turn records (UTF-8 bytes, the truncation note included)."""
MAX_ERROR_CHARS = 4_000
"""The longest error message a result records (characters, the truncation note included)."""


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes on a character boundary, noting the cut.

    The result, ``"\n[... truncated: N more bytes]"`` included, is never longer than
    ``max_bytes``, so truncating it again changes nothing.
    """
    if len(text) * 4 <= max_bytes:  # fits whatever the characters
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    room = max_bytes - len(_truncation_note(len(data), "bytes"))
    keep = room if room > 0 else max_bytes  # a limit too small for the note: no note
    while keep > 0 and data[keep] & 0xC0 == 0x80:  # not inside a character
        keep -= 1
    note = _truncation_note(len(data) - keep, "bytes") if room > 0 else ""
    return data[:keep].decode("utf-8", "surrogatepass") + note


def truncate_chars(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, ``"\n[... truncated: N more characters]"``
    included."""
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(_truncation_note(len(text), "characters"))
    if keep <= 0:  # a limit too small for the note
        return text[:max_chars]
    return text[:keep] + _truncation_note(len(text) - keep, "characters")


def _truncation_note(omitted: int, unit: str) -> str:
    return f"\n[... truncated: {omitted} more {unit}]"


class MatchRequest(BaseModel):
    """Input of the attacker's "red-team a target" skill.

    ``objective`` may be given as a bare string (the phrase). ``strategy`` and
    ``judge`` are validated against the registries by the attacker, which knows
    them; here they only need to be short names.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(min_length=1, max_length=2048)
    objective: Objective = Field(default_factory=Objective)
    strategy: str = Field(default="playbook", min_length=1, max_length=64)
    max_turns: int = Field(default=10, ge=1, le=10_000)
    judge: str = Field(default="phrase", min_length=1, max_length=64)
    # 2**53 - 1: DataParts carry numbers as doubles, so larger seeds would not survive.
    seed: int | None = Field(default=None, ge=0, le=2**53 - 1)
    match_id: str | None = Field(default=None, min_length=1, max_length=128)
    params: dict[str, ParamValue] = Field(default_factory=dict, max_length=32)
    """Strategy parameters; each strategy documents and validates its own."""
    converters: list[ConverterSpec] = Field(default_factory=list, max_length=MAX_CHAIN)
    """Re-encodings applied in order to every message the strategy sends (:mod:`arena_core.converters`)."""
    target_token_env: str | None = Field(default=None, pattern=TARGET_TOKEN_ENV_PATTERN)
    """Name of the attacker's ``ARENA_TARGET_TOKEN_*`` variable whose value is sent to the
    target as a bearer token. The request names the variable; the secret never travels."""
    canary_env: dict[CanarySlot, Annotated[str, Field(pattern=CANARY_ENV_PATTERN)]] = Field(
        default_factory=dict
    )
    """For a defender that takes no planted secrets: per slot, the attacker's ``ARENA_CANARY_*``
    variable holding the secret its owner planted in it (the value never travels)."""

    @field_validator("objective", mode="before")
    @classmethod
    def _phrase_shorthand(cls, value: object) -> object:
        if isinstance(value, str):
            return {"phrase": value}
        return value

    @field_validator("converters")
    @classmethod
    def _valid_chain(cls, value: list[ConverterSpec]) -> list[ConverterSpec]:
        try:
            build_converters(value)  # known names, valid params, split last
        except InvalidInputError as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("target")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            msg = "target must be an http(s) URL of an A2A agent, e.g. http://127.0.0.1:8081"
            raise ValueError(msg)
        return value.strip()

    @field_validator("seed", "max_turns", mode="before")
    @classmethod
    def _integral_float(cls, value: object) -> object:
        # DataParts travel as protobuf Struct, which turns every number into a double.
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


MAX_ATTACHMENT_CHARS = 20_000


class SentAttachment(BaseModel):
    """What a turn sent beside its text (a DataPart or a file; for transcripts), the content cut
    to :data:`MAX_ATTACHMENT_CHARS` characters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["data", "file"]
    name: str = Field(max_length=200)
    media_type: str = Field(max_length=200)
    content: str = Field(max_length=MAX_ATTACHMENT_CHARS)


class TurnRecord(BaseModel):
    """One attacker message and the defender's answer."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=1)
    context_id: str
    task_id: str | None
    new_conversation: bool
    attacker_text: str
    defender_text: str
    defender_state: str
    verdict: JudgeVerdict
    reasoning: str | None = None
    """The attacker's own notes for this turn; never sent to the defender."""
    stream: str | None = None
    """Which conversation of the strategy this turn belongs to (PAIR stream, TAP node...)."""
    replay: bool = False
    """True when the turn replays a kept prefix into a new conversation (backtracking)."""
    guard: str | None = None
    """What the defender's output guard did to this reply, when it reports it."""
    started_at: datetime
    duration_ms: float = Field(ge=0)
    defender_usage: TokenUsage | None = None
    actions: list[ToolCallRecord] = Field(default_factory=list, max_length=MAX_RECORDS_PER_TURN)
    """The tool calls the defender made in this turn, as its task or the match's trace showed them."""
    strategy_text: str | None = None
    """What the strategy wrote, when converters changed it (``attacker_text`` is what was sent)."""
    attachments: list[SentAttachment] = Field(default_factory=list, max_length=8)
    """What the attacker sent beside its text (a document for the defender to process)."""
    part: str | None = Field(default=None, pattern=r"^[0-9]{1,2}/[0-9]{1,2}$")
    """``"2/3"``: the turn sent part 2 of 3 of one message split by the ``split`` converter."""

    @field_validator("defender_text")
    @classmethod
    def _bounded_reply(cls, value: str) -> str:
        return truncate_utf8(value, MAX_RECORDED_REPLY_BYTES)


class ProtocolInfo(BaseModel):
    """How the attacker talked to the target."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    binding: str
    version: str
    url: str


class Reproducibility(BaseModel):
    """Everything needed to replay a match with the same inputs."""

    model_config = ConfigDict(extra="forbid")

    strategy_params: dict[str, ParamValue] = Field(default_factory=dict)
    seed: int | None = None
    attacker_model: str | None = None
    attacker_temperature: float | None = None
    judge_model: str | None = None
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    """sha256 of every prompt template the strategy and judge used, by name."""
    converters: list[str] = Field(default_factory=list)
    """The converter chain, each step as ``name`` or ``name:k=v,...``, in order."""
    converter_seed: int | None = None
    """The seed of the converters' random draws (the match seed, or one derived from the match id)."""
    converter_model: str | None = None
    """The model that did the model-driven converters' rewrites (translate, paraphrase)."""


class _ProbeReportSchema:
    """The schema of :class:`arena_core.probes.model.ProbeReport`, made when a model is first built.

    That module imports this one (for :func:`truncate_chars`), so it cannot be imported here at
    the top: the import happens when :class:`MatchResult`'s schema is built, at its first use
    (``defer_build``), by which time both modules are loaded whichever came first.
    """

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from arena_core.probes.model import ProbeReport

        return handler.generate_schema(ProbeReport)


if not TYPE_CHECKING:
    _ProbeReport = Annotated[Any, _ProbeReportSchema()]


class MatchResult(BaseModel):
    """The outcome of a match, returned as the attacker task's artifact.

    A campaign's protocol-probe run (``probes:``) is recorded as a MatchResult too: no turns,
    its :class:`~arena_core.probes.model.ProbeReport` in ``probe_report``, the outcome
    ``attacker_won`` when the report meets the run's threshold (or a check errored),
    ``defended`` when it does not, ``error`` when the run could not be made.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    match_id: str
    target: str
    target_name: str | None = None
    objective: Objective
    strategy: str
    judge: str
    seed: int | None
    max_turns: int
    outcome: Outcome
    verdict: JudgeVerdict | None = None
    """The deciding verdict: the winning one, or the last one when defended."""
    turns: list[TurnRecord] = Field(default_factory=list)
    turns_used: int = 0
    resets: int = 0
    attacker_model: str | None = None
    defender_model: str | None = None
    defender_profile: str | None = Field(default=None, max_length=64)
    """The built-in profile an arena defender said it plays (``naive``, ``hardened``...); None for
    other agents. The leaderboard tells a defender's profiles apart by it."""
    attacker_usage: TokenUsage = Field(default_factory=TokenUsage)
    defender_usage: TokenUsage = Field(default_factory=TokenUsage)
    protocol: ProtocolInfo | None = None
    started_at: datetime
    finished_at: datetime
    duration_ms: float = Field(ge=0)
    error: str | None = None
    error_kind: str | None = None
    attacker_refusal: str | None = None
    """The attacker model's refusal text when the outcome is ``attacker_refused``."""
    reproducibility: Reproducibility | None = None
    trace_id: str | None = None
    """The OpenTelemetry trace id (32 hex digits) of the match, when it was traced."""
    secrets: Literal["planted", "stated"] | None = None
    """Where the match's secrets came from: fresh ones ``planted`` in a defender taking the
    planted-secrets extension, or ``stated`` by the campaign's variables; None: no secrets.
    The values are never recorded (a leak is quoted in the verdict's evidence)."""
    actions_from: Literal["task", "trace"] | None = None
    """Where the defender's tool calls were read for an ``action`` objective: its ``task``
    (tool-calls artifacts) or the match's ``trace``; None for other objectives."""
    probe_report: _ProbeReport | None = None
    """What a protocol-probe run found (a campaign's ``probes:``); None for a match."""

    @field_validator("error")
    @classmethod
    def _bounded_error(cls, value: str | None) -> str | None:
        return None if value is None else truncate_chars(value, MAX_ERROR_CHARS)


__all__ = [
    "MATCH_REQUEST_MEDIA_TYPE",
    "MATCH_RESULT_MEDIA_TYPE",
    "MAX_ATTACHMENT_CHARS",
    "MAX_ERROR_CHARS",
    "MAX_RECORDED_REPLY_BYTES",
    "TURN_MEDIA_TYPE",
    "MatchRequest",
    "MatchResult",
    "Objective",
    "Outcome",
    "ParamValue",
    "ProtocolInfo",
    "Reproducibility",
    "SentAttachment",
    "TurnRecord",
    "truncate_chars",
    "truncate_utf8",
]
