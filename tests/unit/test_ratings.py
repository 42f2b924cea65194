"""Bradley-Terry ratings (arena_orchestrator.ratings), checked on outcomes drawn from known strengths.

Seeded: the synthetic matches and the bootstrap come from fixed seeds, so every run sees the
same numbers. The coverage check draws 30 independent campaigns; each player's 95% interval
should hold its true (centred) rating in about 95% of them. Over the 300 intervals a
binomial count at 95% falls within 91-99% with probability above 99.9%.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from arena_orchestrator.ratings import (
    PRIOR_SD,
    SCALE,
    Contest,
    Pairing,
    fit_pairings,
    fit_ratings,
    fit_snapshots,
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


def test_snapshots_fitted_in_one_batch_match_each_fitted_alone() -> None:
    rng = random.Random(11)
    pairings = [
        Pairing(f"a{i}", f"d{j}", wins, 6)
        for i in range(5)
        for j in range(4)
        if rng.random() < 0.7
        for wins in [rng.randint(0, 6)]
    ]
    # Growing snapshots: later ones add players and matches, as campaigns do.
    snapshots = [
        pairings[:3],
        pairings[:9],
        [Pairing(p.attacker, p.defender, p.attacker_wins * 2, 12) for p in pairings],
    ]
    cells = [(p.attacker, p.defender) for p in pairings]
    wins = np.zeros((len(snapshots), len(cells)))
    trials = np.zeros_like(wins)
    for row, snapshot in enumerate(snapshots):
        for p in snapshot:
            wins[row, cells.index((p.attacker, p.defender))] = p.attacker_wins
            trials[row, cells.index((p.attacker, p.defender))] = p.matches
    for snapshot, table in zip(snapshots, fit_snapshots(cells, wins, trials), strict=True):
        alone = fit_pairings(snapshot, bootstrap_rounds=0)
        assert [(p.side, p.name, p.wins, p.losses) for p in table] == [
            (p.side, p.name, p.wins, p.losses) for p in [*alone.attackers, *alone.defenders]
        ]
        expected = {(p.side, p.name): p.rating for p in [*alone.attackers, *alone.defenders]}
        for player in table:
            assert player.rating == pytest.approx(expected[player.side, player.name], abs=1e-6)
    assert fit_snapshots([], np.zeros((2, 0)), np.zeros((2, 0))) == [[], []]


@pytest.mark.parametrize(("attackers", "defenders"), [(3, 7), (7, 3)])
def test_the_fit_is_the_penalised_maximum_whichever_side_is_larger(attackers: int, defenders: int) -> None:
    rng = random.Random(attackers)
    pairings = [
        Pairing(f"a{i}", f"d{j}", rng.randint(0, 8), 8) for i in range(attackers) for j in range(defenders)
    ]
    ratings = fit_pairings(pairings, bootstrap_rounds=0)
    theta = {(p.side, p.name): (p.rating - 1000.0) / SCALE for p in [*ratings.attackers, *ratings.defenders]}
    gradient = {key: -value / PRIOR_SD**2 for key, value in theta.items()}
    for p in pairings:
        chance = 1.0 / (1.0 + math.exp(-(theta["attacker", p.attacker] - theta["defender", p.defender])))
        residual = p.attacker_wins - p.matches * chance
        gradient["attacker", p.attacker] += residual
        gradient["defender", p.defender] -= residual
    assert max(abs(value) for value in gradient.values()) < 1e-6


def test_bootstrap_fits_in_small_batches_give_the_same_intervals() -> None:
    contests = _draw(random.Random(5), per_pairing=20)
    whole = fit_ratings(contests, bootstrap_rounds=30)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("arena_orchestrator.ratings.BATCH_BYTES", 1)  # one fit per batch
        batched = fit_ratings(contests, bootstrap_rounds=30)
    for mine, theirs in zip(
        [*whole.attackers, *whole.defenders], [*batched.attackers, *batched.defenders], strict=True
    ):
        assert (mine.name, mine.rating) == (theirs.name, pytest.approx(theirs.rating, abs=1e-9))
        assert (mine.low, mine.high) == (
            pytest.approx(theirs.low, abs=1e-6),
            pytest.approx(theirs.high, abs=1e-6),
        )
