"""The orchestrator's records: campaigns, queued matches, stored results, progress.

These are the JSON shapes of the REST API (``/v1/...``), of what is kept in
Redis, and of the JSON report. Field names are the same in Python and on the
wire.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from arena_core.llm.usage import TokenUsage
from arena_core.match_models import MatchRequest, MatchResult, Outcome
from arena_core.probes.model import ProbeReport, Severity
from arena_core.probes.request import ProbeRequest
from arena_core.stats import wilson_interval
from arena_orchestrator.campaign_spec import CampaignSpec

CampaignStatus = Literal["queued", "running", "completed", "canceled", "budget_exhausted"]
"""``queued``: nothing started yet; ``running``: matches are being played; the other three
are final: every match is accounted for (played, or not played because of a cancel or the
token budget)."""

FINAL_STATUSES: frozenset[str] = frozenset({"completed", "canceled", "budget_exhausted"})

Disposition = Literal["played", "canceled", "skipped"]
"""What became of a queued match: ``played`` (it has a result; errors included),
``canceled`` (the campaign was canceled first) or ``skipped`` (the token budget ran out)."""


MAX_PLAYER_FIELD = 200
"""Longest attacker model or defender profile a match summary keeps."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CellKey(_Model):
    """One cell of the matrix: an attacker against a defender on an objective."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attacker: str
    defender: str
    objective: str

    @property
    def id(self) -> str:
        """``attacker/defender/objective`` (names cannot contain ``/``)."""
        return f"{self.attacker}/{self.defender}/{self.objective}"


class MatchJob(_Model):
    """A queued match: everything a worker needs to have it played."""

    campaign_id: str
    match_id: str
    index: int = Field(ge=0)
    repetition: int = Field(ge=0)
    cell: CellKey
    attacker_url: str | None
    """None: the built-in attacker (the orchestrator's ``ARENA_ATTACKER_URL``, or in-process)."""
    request: MatchRequest
    probe: ProbeRequest | None = None
    """Set for a protocol-probe run (``probes:``): the attacker's ``probe`` skill runs this instead
    of playing ``request`` (which then only names the target and labels the run)."""
    timeout_s: float
    trace_context: dict[str, str] = Field(default_factory=dict)
    """W3C trace context (``traceparent``...) of the campaign, carried through the queue."""


class MatchSummary(_Model):
    """One match in a line: what the progress tables, reports and dashboard list."""

    match_id: str
    index: int
    repetition: int
    cell: CellKey
    disposition: Disposition
    outcome: Outcome | None = None
    """Set when played."""
    turns_used: int = 0
    duration_ms: float = 0.0
    tokens: int = 0
    error: str | None = None
    error_kind: str | None = None
    attempts: int = 0
    trace_id: str | None = None
    finished_at: datetime
    attacker_model: str | None = Field(default=None, max_length=MAX_PLAYER_FIELD)
    """The model the attacker played with, as its result says (cut to 200 characters)."""
    defender_profile: str | None = Field(default=None, max_length=MAX_PLAYER_FIELD)
    """The built-in profile the defender said it plays (arena defenders only)."""


class MatchRecord(_Model):
    """A match as stored: its summary and, when played, the attacker's full result."""

    campaign_id: str
    summary: MatchSummary
    result: MatchResult | None = None
    attacker_url: str | None = None
    worker: str | None = None
    trace_url: str | None = None
    """The match's trace in the Jaeger UI (when ``ARENA_JAEGER_URL`` is set and it was traced)."""


class Campaign(_Model):
    """A submitted campaign and its fixed facts (progress is separate)."""

    id: str
    spec: CampaignSpec
    created_at: datetime
    total: int


class Interval(_Model):
    """An attack success rate with its Wilson 95% interval."""

    wins: int
    trials: int
    """Wins plus defences: errors and attacker refusals are neither."""
    rate: float | None
    low: float
    high: float

    @classmethod
    def of(cls, wins: int, trials: int) -> Interval:
        """The Wilson interval of ``wins`` out of ``trials``."""
        proportion = wilson_interval(wins, trials)
        return cls(wins=wins, trials=trials, rate=proportion.rate, low=proportion.low, high=proportion.high)


class OutcomeCounts(_Model):
    """How many matches ended each way."""

    attacker_won: int = 0
    defended: int = 0
    attacker_refused: int = 0
    error: int = 0
    canceled: int = 0
    skipped: int = 0

    @property
    def finished(self) -> int:
        """Every accounted-for match: played or not."""
        return (
            self.attacker_won
            + self.defended
            + self.attacker_refused
            + self.error
            + self.canceled
            + self.skipped
        )

    @property
    def asr(self) -> Interval:
        """Attack success rate = won / (won + defended)."""
        return Interval.of(self.attacker_won, self.attacker_won + self.defended)


class CellProgress(_Model):
    """Counts and the attack success rate of one cell."""

    cell: CellKey
    total: int
    counts: OutcomeCounts
    asr: Interval
    tokens: TokenUsage


class DefenderProgress(_Model):
    """A defender across every attacker and objective: what ``--fail-above`` checks."""

    defender: str
    counts: OutcomeCounts
    asr: Interval


class ObjectiveProgress(_Model):
    """A defender against one objective, across every attacker."""

    defender: str
    objective: str
    """The objective's label (its catalogue id, or its name)."""
    categories: list[str] = Field(default_factory=list)
    counts: OutcomeCounts
    asr: Interval


class CategoryProgress(_Model):
    """A defender across the objectives of one OWASP category (an objective counts in each of its)."""

    defender: str
    category: str
    """An OWASP id, such as ``LLM07:2025`` or ``ASI01``."""
    title: str
    counts: OutcomeCounts
    asr: Interval


class RefusalProgress(_Model):
    """A defender's answers to the over-refusal probes: the price of its defence."""

    defender: str
    counts: OutcomeCounts
    """``attacker_won``: the defender answered; ``defended``: it refused (or looped, or said nothing)."""
    answered: int
    refused: int
    frr: Interval
    """False refusal rate: refused / (answered + refused), with its Wilson 95% interval."""


class ProtocolProbeProgress(_Model):
    """A defender's protocol-probe run (``probes:``): what it found, and whether that fails it."""

    defender: str
    fail_on: Severity
    counts: OutcomeCounts
    """How the run ended: ``attacker_won`` (it met ``fail_on``), ``defended``, ``error`` (no report),
    ``canceled`` or ``skipped`` (not run)."""
    findings: dict[str, int]
    """Findings per severity (``info`` to ``critical``, every severity present)."""
    worst: Severity | None = None
    """The highest severity found; None with no finding."""
    errored_checks: int = 0
    """Checks that broke (a bug to report): each fails the run, whatever the threshold."""
    threshold_met: bool = False
    """A finding at ``fail_on`` or above, or a check that errored."""
    failed: bool = False
    """What a CI gate reads: the threshold was met, or the run ended in an error."""


class CampaignProgress(_Model):
    """A campaign now: status, counts, rates per cell and per defender, tokens, ETA."""

    # ``finished`` is computed: it is in the JSON, and ignored when the JSON is read back.
    model_config = ConfigDict(extra="ignore")

    id: str
    name: str
    status: CampaignStatus
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    total: int
    done: int
    """Matches accounted for (played, canceled or skipped)."""
    running: int
    counts: OutcomeCounts
    asr: Interval
    cells: list[CellProgress]
    defenders: list[DefenderProgress]
    objectives: list[ObjectiveProgress] = Field(default_factory=list)
    """Per defender and objective, in spec order."""
    categories: list[CategoryProgress] = Field(default_factory=list)
    """Per defender and OWASP category, in the lists' order; only categories some objective has."""
    over_refusal: list[RefusalProgress] = Field(default_factory=list)
    """Per defender, when the campaign has over-refusal probes."""
    probe_counts: OutcomeCounts = Field(default_factory=OutcomeCounts)
    """How the over-refusal probes ended; ``counts`` and every rate above are attacks only."""
    protocol_probes: list[ProtocolProbeProgress] = Field(default_factory=list)
    """Per probed defender, when the campaign has ``probes:`` (outside every rate above)."""
    tokens: TokenUsage
    errors: list[MatchSummary] = Field(default_factory=list)
    """The most recent matches that ended in an error (at most 20)."""
    eta_s: float | None = None
    """Estimated seconds to completion from the pace so far; None before the first result."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def finished(self) -> bool:
        """True once the status is final and every match is accounted for.

        A cancel makes the status ``canceled`` at once; the campaign is finished when the
        workers have accounted for its remaining matches too.
        """
        return self.status in FINAL_STATUSES and self.done >= self.total


class ProtocolProbeRun(_Model):
    """A recorded protocol-probe run with its whole report (the JSON report's ``protocol_probe_runs``)."""

    match_id: str
    defender: str
    disposition: Disposition = "played"
    outcome: Outcome | None = None
    """When played: ``attacker_won``: the report met the threshold; ``defended``: it did not;
    ``error``: no report (``error`` says why)."""
    error: str | None = None
    error_kind: str | None = None
    probe_report: ProbeReport | None = None


class CampaignReport(_Model):
    """Everything a report shows: the spec, the progress and one line per match.

    This is the JSON report (``GET /v1/campaigns/{id}/report?format=json``);
    its JSON Schema is ``docs/report-schema.json``.
    """

    report_version: Literal[1] = 1
    generated_at: datetime
    campaign: Campaign
    progress: CampaignProgress
    matches: list[MatchSummary]
    protocol_probe_runs: list[ProtocolProbeRun] = Field(default_factory=list)
    """Each recorded protocol-probe run (``probes:``) with its findings, in defender order."""
    fail_above: float | None = None
    """The threshold the report was asked to judge defenders against (JUnit, HTML)."""
    fail_above_categories: dict[str, float] = Field(default_factory=dict)
    """Thresholds per OWASP category (``LLM07:2025``), for the JUnit category cases and gates."""
    jaeger_url: str | None = None
    """Base URL of a Jaeger UI; with it, each match links to its trace."""


__all__ = [
    "FINAL_STATUSES",
    "MAX_PLAYER_FIELD",
    "Campaign",
    "CampaignProgress",
    "CampaignReport",
    "CampaignStatus",
    "CategoryProgress",
    "CellKey",
    "CellProgress",
    "DefenderProgress",
    "Disposition",
    "Interval",
    "MatchJob",
    "MatchRecord",
    "MatchSummary",
    "ObjectiveProgress",
    "OutcomeCounts",
    "ProtocolProbeProgress",
    "ProtocolProbeRun",
    "RefusalProgress",
]
