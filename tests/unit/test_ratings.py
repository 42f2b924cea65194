"""Bradley-Terry ratings (arena_orchestrator.ratings), checked on outcomes drawn from known strengths.

Seeded: the synthetic matches and the bootstrap come from fixed seeds, so every run sees the
same numbers. The coverage check draws 30 independent campaigns; each player's 95% interval
should hold its true (centred) rating in about 95% of them. Over the 300 intervals a
binomial count at 95% falls within 91-99% with probability above 99.9%.
"""

from __future__ import annotations

import math
import random

import pytest

from arena_orchestrator.ratings import (
    SCALE,
    Contest,
    Pairing,
    fit_pairings,
    fit_ratings,
    win_probability,
)

ATTACKERS = {"crescendo": 1.2, "pair": 0.6, "persona": 0.0, "plain": -0.6, "echo": -1.2}
DEFENDERS = {"vault": 1.0, "guarded": 0.4, "helpful": -0.2, "naive": -0.8, "open": -1.4}


def _draw(rng: random.Random, per_pairing: int) -> list[Contest]:
    contests = []
    for attacker, strength in ATTACKERS.items():
        for defender, guard in DEFENDERS.items():
            chance = 1.0 / (1.0 + math.exp(-(strength - guard)))
            contests += [Contest(attacker, defender, rng.random() < chance) for _ in range(per_pairing)]
    return contests


def _true_points() -> dict[tuple[str, str], float]:
    mean = (sum(ATTACKERS.values()) + sum(DEFENDERS.values())) / (len(ATTACKERS) + len(DEFENDERS))
    truth = {("attacker", name): value for name, value in ATTACKERS.items()}
    truth |= {("defender", name): value for name, value in DEFENDERS.items()}
    return {key: 1000.0 + SCALE * (value - mean) for key, value in truth.items()}


def test_the_fit_recovers_the_order_of_known_strengths() -> None:
    ratings = fit_ratings(_draw(random.Random(7), per_pairing=120), bootstrap_rounds=0)
    assert [p.name for p in ratings.attackers] == list(ATTACKERS)
    assert [p.name for p in ratings.defenders] == list(DEFENDERS)
    truth = _true_points()
    for player in [*ratings.attackers, *ratings.defenders]:
        assert abs(player.rating - truth[player.side, player.name]) < 40, player


def test_the_intervals_cover_the_true_ratings_at_the_stated_rate() -> None:
    truth = _true_points()
    covered = total = 0
    widths = []
    for campaign in range(30):
        ratings = fit_ratings(_draw(random.Random(1000 + campaign), per_pairing=30), seed=campaign)
        for player in [*ratings.attackers, *ratings.defenders]:
            total += 1
            covered += player.low <= truth[player.side, player.name] <= player.high
            widths.append(player.high - player.low)
    assert total == 300
    assert 0.91 <= covered / total <= 0.99, f"{covered} of {total} intervals hold the true rating"
    assert max(widths) < 250  # ... and they are intervals, not the whole scale


def test_an_unbeaten_player_gets_a_finite_rating_above_the_others() -> None:
    rng = random.Random(3)
    contests = _draw(rng, per_pairing=10)
    contests += [Contest("perfect", defender, True) for defender in DEFENDERS for _ in range(4)]
    contests += [Contest(attacker, "wall", False) for attacker in ATTACKERS for _ in range(4)]
    ratings = fit_ratings(contests, bootstrap_rounds=50)
    best_attacker, best_defender = ratings.attackers[0], ratings.defenders[0]
    assert (best_attacker.name, best_attacker.wins, best_attacker.losses) == ("perfect", 20, 0)
    assert (best_defender.name, best_defender.wins, best_defender.losses) == ("wall", 20, 0)
    for player in (best_attacker, best_defender):
        assert all(math.isfinite(x) for x in (player.rating, player.low, player.high))
        assert player.low <= player.rating <= player.high < 2500


def test_records_counts_and_the_model_probability() -> None:
    contests = [Contest("a", "d", True)] * 3 + [Contest("a", "d", False)] + [Contest("b", "d", False)] * 4
    ratings = fit_ratings(contests, bootstrap_rounds=20)
    a, b, d = (
        ratings.player("attacker", "a"),
        ratings.player("attacker", "b"),
        ratings.player("defender", "d"),
    )
    assert a is not None and b is not None and d is not None
    assert (a.wins, a.losses, b.wins, b.losses, d.wins, d.losses) == (3, 1, 0, 4, 5, 3)
    assert ratings.matches == 8 and a.rating > d.rating > b.rating
    assert 0.5 < win_probability(a.rating, d.rating) < 0.75  # shrunk from 3/4 by the prior
    assert win_probability(1000, 1000) == pytest.approx(0.5)
    assert win_probability(1100, 1000) == pytest.approx(0.64, abs=0.005)


def test_the_same_matches_give_the_same_table_and_counts_fit_like_matches() -> None:
    contests = _draw(random.Random(11), per_pairing=8)
    first, second = fit_ratings(contests), fit_ratings(list(reversed(contests)))
    assert first == second
    cells: dict[tuple[str, str], list[int]] = {}
    for c in contests:
        cell = cells.setdefault((c.attacker, c.defender), [0, 0])
        cell[0] += c.attacker_won
        cell[1] += 1
    assert fit_pairings([Pairing(a, d, w, n) for (a, d), (w, n) in cells.items()]) == first


def test_no_matches_no_players() -> None:
    ratings = fit_ratings([])
    assert (ratings.attackers, ratings.defenders, ratings.matches) == ([], [], 0)
