"""Wilson score intervals, checked against published values."""

from __future__ import annotations

import pytest

from arena_core.stats import wilson_interval


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (5, 10, 0.2366, 0.7634),
        (1, 20, 0.0089, 0.2361),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_matches_reference_values(successes: int, trials: int, low: float, high: float) -> None:
    result = wilson_interval(successes, trials)
    assert result.low == pytest.approx(low, abs=5e-4)
    assert result.high == pytest.approx(high, abs=5e-4)
    assert result.rate == successes / trials


def test_no_trials_is_uninformative() -> None:
    result = wilson_interval(0, 0)
    assert (result.low, result.high, result.rate) == (0.0, 1.0, None)


@pytest.mark.parametrize(("successes", "trials"), [(-1, 3), (4, 3), (0, -1)])
def test_impossible_counts_are_rejected(successes: int, trials: int) -> None:
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(successes, trials)
