"""Benchmark 9: fitting the leaderboard's ratings over 100,000 recorded matches (issue 24).

The fit of :mod:`arena_orchestrator.ratings` (counting the matches per pairing, the
Bradley-Terry fit, 200 bootstrap rounds) on synthetic outcomes: 30 attackers (strategies x
models x converters, as a team that runs campaigns every week ends up with) against 12
defenders, 100,000 matches drawn from known strengths. The goal: under two seconds on this
machine. Repeated ``--rounds`` times in this process; the worst round is held to the goal.
What it does not include yet: reading the recorded matches from where the orchestrator will
keep them (the cross-campaign record is the next part of issue 24).
"""

from __future__ import annotations

import math
import random
import time

from arena_orchestrator.ratings import BOOTSTRAP_ROUNDS, Contest, fit_ratings
from bench.scenario import BenchOptions, Outcome

ATTACKERS = 30
DEFENDERS = 12
GOAL_S = 2.0


def _contests(matches: int, seed: int) -> list[Contest]:
    rng = random.Random(seed)  # noqa: S311 (synthetic outcomes, not secrets)
    attackers = {f"attacker-{i:02d}": rng.gauss(0.0, 1.0) for i in range(ATTACKERS)}
    defenders = {f"defender-{i:02d}": rng.gauss(0.0, 1.0) for i in range(DEFENDERS)}
    names_a, names_d = list(attackers), list(defenders)
    contests = []
    for _ in range(matches):
        a, d = rng.choice(names_a), rng.choice(names_d)
        chance = 1.0 / (1.0 + math.exp(-(attackers[a] - defenders[d])))
        contests.append(Contest(a, d, rng.random() < chance))
    return contests


def run(options: BenchOptions) -> Outcome:
    matches = options.scale(100_000, 20_000)
    contests = _contests(matches, seed=24)
    fit_ratings(contests[:1000])  # import and warm numpy
    seconds = []
    for _ in range(options.rounds):
        start = time.perf_counter()
        ratings = fit_ratings(contests)
        seconds.append(time.perf_counter() - start)
    worst = max(seconds)
    met = worst <= GOAL_S
    return Outcome(
        id="ratings",
        title=f"Ratings: fit over {matches:,} recorded matches",
        goal=f"<= {GOAL_S:.0f} s for 100,000 matches ({BOOTSTRAP_ROUNDS} bootstrap rounds)",
        measured=(
            f"{min(seconds):.2f}-{worst:.2f} s ({ATTACKERS} attackers x {DEFENDERS} defenders, "
            f"{len(ratings.pairings)} pairings)"
        ),
        met=met,
        explanation="" if met else f"{worst:.2f} s misses {GOAL_S:.0f} s",
        details={"matches": matches, "seconds": seconds, "pairings": len(ratings.pairings)},
    )
