"""What a probe run reports: findings with severity, evidence and remediation, per check.

A :class:`ProbeReport` crosses process boundaries (the attacker agent's ``probe-report``
artifact, a campaign's stored results), so every model is strict (unknown fields refused)
and every text is bounded where it is recorded: evidence excerpts at
:data:`MAX_EXCERPT_CHARS`, findings per check at :data:`MAX_FINDINGS_PER_CHECK`. Secrets are
redacted before a text gets here (:mod:`arena_core.probes.wire`).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arena_core.match_models import truncate_chars

MAX_EXCERPT_CHARS = 2_000
"""The most of one request or response a finding keeps (characters, the truncation note included)."""
MAX_FINDINGS_PER_CHECK = 50
MAX_TEXT_CHARS = 4_000

PROBE_REPORT_MEDIA_TYPE = "application/vnd.a2a-arena.probe-report+json"
PROBE_REQUEST_MEDIA_TYPE = "application/vnd.a2a-arena.probe-request+json"


class Severity(StrEnum):
    """How bad a finding is; ordered (``Severity.HIGH >= Severity.MEDIUM``)."""

    INFO = "info"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank >= other.rank

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank > other.rank

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank <= other.rank

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Severity):
            return NotImplemented
        return self.rank < other.rank


_RANK = {severity: rank for rank, severity in enumerate(Severity)}

Category = Literal["card", "auth", "isolation", "push", "resources", "input", "leaks"]
CATEGORY_ORDER: tuple[Category, ...] = ("card", "auth", "isolation", "push", "resources", "input", "leaks")
"""The order checks run in: error leaks last, since they read every response of the run."""

CheckStatus = Literal["passed", "failed", "skipped", "error"]
"""``passed``: looked and found nothing; ``failed``: at least one finding; ``skipped``: could not
look (the reason says why: not offered by the card, no second identity, out of budget...);
``error``: the check itself broke (a bug to report; never read as a pass)."""


def _bounded(value: object, limit: int) -> object:
    return truncate_chars(value, limit) if isinstance(value, str) else value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_lone_surrogates(cls, value: object) -> object:
        """A hostile agent's name or reply may hold lone surrogates, which JSON and files refuse."""
        if isinstance(value, str):
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return value


class Evidence(_Strict):
    """One exchange that shows a finding: the request and what came back, both excerpts."""

    request: str = Field(max_length=MAX_EXCERPT_CHARS)
    response: str = Field(max_length=MAX_EXCERPT_CHARS)

    @field_validator("request", "response", mode="before")
    @classmethod
    def _cut(cls, value: object) -> object:
        return _bounded(value, MAX_EXCERPT_CHARS)


class Finding(_Strict):
    """Something a check found: what, where, how bad, the exchanges that show it, what to do."""

    check_id: str = Field(min_length=1, max_length=100)
    title: str = Field(min_length=1, max_length=300)
    severity: Severity
    detail: str = Field(max_length=MAX_TEXT_CHARS)
    interface: str | None = Field(default=None, max_length=300)
    """The interface it was seen on (``1.0 JSONRPC http://...``); None for the card or the whole agent."""
    evidence: Annotated[list[Evidence], Field(max_length=5)] = Field(default_factory=list)
    remediation: str = Field(max_length=MAX_TEXT_CHARS)

    @field_validator("detail", "remediation", mode="before")
    @classmethod
    def _cut(cls, value: object) -> object:
        return _bounded(value, MAX_TEXT_CHARS)


class CheckResult(_Strict):
    """One check's outcome."""

    check_id: str = Field(min_length=1, max_length=100)
    category: Category
    title: str = Field(min_length=1, max_length=300)
    severity: Severity
    """The severity of what this check looks for (its findings may be lower, never higher)."""
    status: CheckStatus
    reason: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    """Why it was skipped or errored; for a pass, what was looked at."""
    findings: Annotated[list[Finding], Field(max_length=MAX_FINDINGS_PER_CHECK)] = Field(default_factory=list)
    requests: int = Field(default=0, ge=0)
    duration_s: float = Field(default=0.0, ge=0)

    @field_validator("reason", mode="before")
    @classmethod
    def _cut(cls, value: object) -> object:
        return _bounded(value, MAX_TEXT_CHARS)


class ProbedInterface(_Strict):
    """An interface of the target the probes spoke to."""

    url: str = Field(max_length=2_000)
    protocol_version: Literal["1.0", "0.3"]
    binding: Literal["jsonrpc", "http+json"]


class ProbeReport(_Strict):
    """Everything a probe run found, and what it could not check."""

    target: str = Field(max_length=2_000)
    agent_name: str | None = Field(default=None, max_length=300)
    started_at: datetime
    finished_at: datetime
    interfaces: Annotated[list[ProbedInterface], Field(max_length=16)] = Field(default_factory=list)
    identities: int = Field(default=1, ge=0, le=2)
    """Callers the isolation checks could use: 2 with two tokens, or two anonymous callers."""
    results: Annotated[list[CheckResult], Field(max_length=200)] = Field(default_factory=list)
    requests: int = Field(default=0, ge=0)
    stopped: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    """Why the run stopped early (the request budget, the time bound, the target gone), else None."""

    @property
    def findings(self) -> list[Finding]:
        return [finding for result in self.results for finding in result.findings]

    def worst(self) -> Severity | None:
        """The highest severity among the findings; None with none."""
        return max((finding.severity for finding in self.findings), default=None)

    def counts(self) -> dict[str, int]:
        """Findings per severity, every severity present (0 where none)."""
        counts = {severity.value: 0 for severity in Severity}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

    def errored(self) -> list[CheckResult]:
        return [result for result in self.results if result.status == "error"]

    def fails(self, threshold: Severity) -> bool:
        """True when a finding is at ``threshold`` or above, or a check errored (an error is never a pass)."""
        return any(finding.severity >= threshold for finding in self.findings) or bool(self.errored())


__all__ = [
    "CATEGORY_ORDER",
    "MAX_EXCERPT_CHARS",
    "MAX_FINDINGS_PER_CHECK",
    "PROBE_REPORT_MEDIA_TYPE",
    "PROBE_REQUEST_MEDIA_TYPE",
    "Category",
    "CheckResult",
    "CheckStatus",
    "Evidence",
    "Finding",
    "ProbeReport",
    "ProbedInterface",
    "Severity",
]
