"""Honest numbers for attack success rates."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z_95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Proportion:
    """``successes`` out of ``trials`` with a Wilson score interval."""

    successes: int
    trials: int
    low: float
    high: float

    @property
    def rate(self) -> float | None:
        """successes / trials, or None when there were no trials."""
        return self.successes / self.trials if self.trials else None


def wilson_interval(successes: int, trials: int, *, z: float = Z_95) -> Proportion:
    """The Wilson score interval (95% by default) for a binomial proportion.

    Unlike the normal approximation it stays inside [0, 1] and is sensible for
    small samples and for 0 or all successes, which red-team campaigns produce
    all the time. With no trials the interval is [0, 1].
    """
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if trials == 0:
        return Proportion(0, 0, 0.0, 1.0)
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denominator
    margin = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denominator
    return Proportion(successes, trials, max(0.0, centre - margin), min(1.0, centre + margin))


__all__ = ["Z_95", "Proportion", "wilson_interval"]
