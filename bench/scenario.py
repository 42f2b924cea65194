"""The shape every benchmark returns, and the options every benchmark takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BenchOptions:
    """How much work a run does. ``quick`` is a smoke run (minutes, numbers not for the record)."""

    quick: bool = False
    rounds: int = 2
    """Interleaved repetitions of each comparison (at least two for a recorded run)."""

    def scale(self, full: int, quick: int) -> int:
        """``full`` for a recorded run, ``quick`` for a smoke run."""
        return quick if self.quick else full


@dataclass
class Outcome:
    """One benchmark's result: what was measured against which goal, and whether it was met.

    ``measured`` and ``goal`` are short phrases for the table in docs/performance.md;
    ``met`` is None when the benchmark has no pass/fail goal (the scaling curve);
    ``explanation`` says why a goal is missed (or what the numbers mean), with the profile
    that shows it; ``details`` holds every number the table is made from.
    """

    id: str
    title: str
    goal: str
    measured: str
    met: bool | None
    explanation: str = ""
    details: dict[str, Any] = field(default_factory=dict)
