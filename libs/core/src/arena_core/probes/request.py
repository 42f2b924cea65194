"""What a client asks the attacker agent's ``probe`` skill (or a campaign's ``probes:``) to run.

A :class:`ProbeRequest` crosses a process boundary (a DataPart ``{"probe": {...}}`` to the
attacker), so it is strict: unknown fields are refused, every number bounded. Tokens never
travel: the request names the attacker's ``ARENA_TARGET_TOKEN_*`` variables, as a match
request does.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from arena_core.origin import Origin
from arena_core.probes.base import ProbeOptions
from arena_core.probes.model import CATEGORY_ORDER, Severity
from arena_core.probes.runner import unknown_names
from arena_core.settings import TARGET_TOKEN_ENV_PATTERN

_NAME = r"^[a-z]+(\.[a-z0-9-]+)?$"


class ProbeRequest(BaseModel):
    """One probe run: the target, which checks, and the run's bounds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: str = Field(min_length=1, max_length=2048)
    only: list[str] = Field(default_factory=list, max_length=64)
    skip: list[str] = Field(default_factory=list, max_length=64)
    fail_on: Severity = Severity.HIGH
    max_requests: int = Field(default=400, ge=1, le=10_000)
    rate_per_s: float = Field(default=20.0, gt=0, le=1_000)
    timeout_s: float = Field(default=10.0, gt=0, le=120)
    max_duration_s: float = Field(default=300.0, gt=0, le=3_600)
    wait_s: float = Field(default=5.0, ge=0, le=300)
    concurrent_tasks: int = Field(default=10, ge=1, le=100)
    target_token_env: str | None = Field(default=None, pattern=TARGET_TOKEN_ENV_PATTERN)
    """The attacker's ``ARENA_TARGET_TOKEN_*`` variable for the first caller (None: anonymous)."""
    second_token_env: str | None = Field(default=None, pattern=TARGET_TOKEN_ENV_PATTERN)
    """Another such variable: the second caller of the isolation checks."""

    @field_validator("only", "skip")
    @classmethod
    def _known_names(cls, names: list[str]) -> list[str]:
        bad = [name for name in names if not re.match(_NAME, name)]
        unknown = unknown_names(frozenset(name for name in names if name not in bad))
        problems = bad + unknown
        if problems:
            msg = (
                f"unknown check or category: {', '.join(problems[:5])} (categories: "
                f"{', '.join(CATEGORY_ORDER)}; `arena probe --list` names every check)"
            )
            raise ValueError(msg)
        return names

    @field_validator("target")
    @classmethod
    def _web_url(cls, value: str) -> str:
        if Origin.of_web(value.strip()) is None:
            msg = "must be the http(s) URL of an A2A agent"
            raise ValueError(msg)
        return value.strip()

    def options(self) -> ProbeOptions:
        return ProbeOptions(
            only=frozenset(self.only),
            skip=frozenset(self.skip),
            fail_on=self.fail_on,
            max_requests=self.max_requests,
            rate_per_s=self.rate_per_s,
            timeout_s=self.timeout_s,
            max_duration_s=self.max_duration_s,
            wait_s=self.wait_s,
            concurrent_tasks=self.concurrent_tasks,
        )


__all__ = ["ProbeRequest"]
