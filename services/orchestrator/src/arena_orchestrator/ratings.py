"""Ratings of attackers and defenders: a Bradley-Terry model fitted over recorded match outcomes.

Every played match is a contest between one attacker and one defender, which the attacker
wins (``attacker_won``) or the defender wins (``defended``). Errors and an attacker model's
refusal to attack are not outcomes: nobody won, so they are left out before the fit.

The model gives each player a strength ``theta`` on one logit scale, attackers and defenders
alike, and says the attacker wins with probability ``sigmoid(theta_attacker - theta_defender)``.
It is fitted by maximum likelihood with a Gaussian prior on every strength (mean 0, standard
deviation :data:`PRIOR_SD` logits), so a player who never lost (or never won) still gets a
finite rating, pulled towards the middle as much as its few matches allow. The fit runs on
counts per pairing (wins and matches of each attacker against each defender), by Newton's
method: the penalised log-likelihood is concave, so it converges in a handful of steps
however many matches there are.

Ratings are shown on the familiar chess scale: ``1000 + 400 * log10(e) * theta``, centred so
that the players' mean is 1000. A difference of 100 points is a 64% chance for the stronger
side; an attacker rated 1200 against a defender rated 1000 wins 76% of its attempts.

The 95% intervals come from a bootstrap over matches: the recorded matches are drawn again
with replacement (:data:`BOOTSTRAP_ROUNDS` times, from a fixed seed, so the same matches give
the same table), refitted, and each player's 2.5th and 97.5th percentiles taken. Drawing
matches with replacement is the same as drawing each pairing's wins and losses from one
multinomial over all of them, which is what :func:`fit_ratings` does, so a bootstrap costs the
same for 100 matches as for 100,000.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from arena_orchestrator.campaign_models import MatchSummary
from arena_orchestrator.campaign_spec import OVER_REFUSAL, PROTOCOL_PROBES

Side = Literal["attacker", "defender"]

PRIOR_SD = 2.0
"""Standard deviation (logits) of the Gaussian prior on every strength."""
BOOTSTRAP_ROUNDS = 200
SEED = 20261203
CENTRE = 1000.0
SCALE = 400.0 / math.log(10.0)
"""Rating points per logit: 400 points are a factor of ten in the odds, as in chess."""
NEWTON_STEPS = 50
TOLERANCE = 1e-9

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Contest:
    """One played match, as the fit sees it."""

    attacker: str
    defender: str
    attacker_won: bool


@dataclass(frozen=True)
class PlayerRating:
    """A player's rating, its 95% interval, and its record."""

    side: Side
    name: str
    rating: float
    low: float
    high: float
    wins: int
    losses: int

    @property
    def matches(self) -> int:
        return self.wins + self.losses


@dataclass(frozen=True)
class Pairing:
    """One attacker's record against one defender (wins counted for the attacker)."""

    attacker: str
    defender: str
    attacker_wins: int
    matches: int


@dataclass(frozen=True)
class Ratings:
    """A fitted table: players best first on each side, and the pairings it was fitted on."""

    attackers: list[PlayerRating]
    defenders: list[PlayerRating]
    pairings: list[Pairing]
    matches: int
    bootstrap_rounds: int

    def player(self, side: Side, name: str) -> PlayerRating | None:
        table = self.attackers if side == "attacker" else self.defenders
        return next((p for p in table if p.name == name), None)


NOT_ATTACKERS = frozenset({OVER_REFUSAL, PROTOCOL_PROBES})
"""Cells whose "attacker" is no player: benign requests (over-refusal) and protocol probes."""


def contests_from(matches: Iterable[MatchSummary]) -> list[Contest]:
    """The contests among recorded matches: played attacks that someone won.

    An error, an attacker model's refusal, a canceled or skipped match, an over-refusal probe
    and a protocol-probe run are not contests and are left out.
    """
    return [
        Contest(match.cell.attacker, match.cell.defender, match.outcome == "attacker_won")
        for match in matches
        if is_contest(match)
    ]


def is_contest(match: MatchSummary) -> bool:
    """True for a played attack that someone won (see :func:`contests_from`)."""
    return (
        match.disposition == "played"
        and match.outcome in ("attacker_won", "defended")
        and match.cell.attacker not in NOT_ATTACKERS
    )


def win_probability(attacker_rating: float, defender_rating: float) -> float:
    """The model's chance that the attacker wins, from the two ratings."""
    return 1.0 / (1.0 + math.exp(-(attacker_rating - defender_rating) / SCALE))


def fit_ratings(
    contests: Iterable[Contest], *, bootstrap_rounds: int = BOOTSTRAP_ROUNDS, seed: int = SEED
) -> Ratings:
    """Fit the ratings of every player in ``contests``, with bootstrap intervals."""
    cells: dict[tuple[str, str], list[int]] = {}
    for contest in contests:
        cell = cells.setdefault((contest.attacker, contest.defender), [0, 0])
        cell[0] += 1 if contest.attacker_won else 0
        cell[1] += 1
    return fit_pairings(
        [Pairing(a, d, wins, n) for (a, d), (wins, n) in cells.items()],
        bootstrap_rounds=bootstrap_rounds,
        seed=seed,
    )


def fit_pairings(
    pairings: Sequence[Pairing], *, bootstrap_rounds: int = BOOTSTRAP_ROUNDS, seed: int = SEED
) -> Ratings:
    """:func:`fit_ratings` from counts per pairing (the same fit; the form the store keeps)."""
    pairings = sorted((p for p in pairings if p.matches > 0), key=lambda p: (p.attacker, p.defender))
    attackers = sorted({p.attacker for p in pairings})
    defenders = sorted({p.defender for p in pairings})
    if not pairings:
        return Ratings([], [], [], 0, bootstrap_rounds)
    index = {("attacker", name): i for i, name in enumerate(attackers)}
    index.update({("defender", name): len(attackers) + i for i, name in enumerate(defenders)})
    players = _Players(
        count=len(index),
        attacker=np.array([index["attacker", p.attacker] for p in pairings]),
        defender=np.array([index["defender", p.defender] for p in pairings]),
    )
    wins = np.array([p.attacker_wins for p in pairings], dtype=np.float64)
    trials = np.array([p.matches for p in pairings], dtype=np.float64)

    theta = _centred(_fit(players, wins[None, :], trials[None, :]))[0]
    total = int(trials.sum())
    low = high = theta
    if bootstrap_rounds > 0:
        # Every match is one of 2 x pairings cells (a pairing, won or lost); drawing ``total``
        # matches with replacement is one multinomial draw over those cells.
        shares = np.concatenate([wins, trials - wins]) / total
        draws = np.random.default_rng(seed).multinomial(total, shares, size=bootstrap_rounds)
        resampled_wins = draws[:, : len(pairings)].astype(np.float64)
        resampled_trials = resampled_wins + draws[:, len(pairings) :]
        samples = _centred(_fit(players, resampled_wins, resampled_trials))
        low, high = np.percentile(samples, [2.5, 97.5], axis=0)

    # Each player's record: an attacker's wins are its pairings' wins; a defender's are the rest.
    record = {key: [0, 0] for key in index}
    for p in pairings:
        losses = p.matches - p.attacker_wins
        attacker, defender = record["attacker", p.attacker], record["defender", p.defender]
        attacker[0] += p.attacker_wins
        attacker[1] += losses
        defender[0] += losses
        defender[1] += p.attacker_wins

    def table(side: Side, names: list[str]) -> list[PlayerRating]:
        rows = [
            PlayerRating(
                side=side,
                name=name,
                rating=_points(theta[index[side, name]]),
                low=_points(low[index[side, name]]),
                high=_points(high[index[side, name]]),
                wins=record[side, name][0],
                losses=record[side, name][1],
            )
            for name in names
        ]
        # Higher is stronger on both sides: a defender's strength is subtracted from the
        # attacker's, so a high one makes attacks fail.
        return sorted(rows, key=lambda r: (-r.rating, r.name))

    return Ratings(
        table("attacker", attackers), table("defender", defenders), list(pairings), total, bootstrap_rounds
    )


@dataclass(frozen=True)
class _Players:
    """How many players there are, and the attacker's and defender's index of each pairing."""

    count: int
    attacker: npt.NDArray[np.intp]
    defender: npt.NDArray[np.intp]


def _points(theta: float) -> float:
    return CENTRE + SCALE * float(theta)


def _centred(theta: FloatArray) -> FloatArray:
    """Strengths with their mean over the players moved to 0 (the model sees only differences)."""
    centred: FloatArray = theta - theta.mean(axis=1, keepdims=True)
    return centred


def _fit(players: _Players, wins: FloatArray, trials: FloatArray) -> FloatArray:
    """Penalised maximum-likelihood strengths for each row of ``wins``/``trials`` (Newton, batched).

    ``wins`` and ``trials`` are fits x pairings; returns fits x players.
    """
    fits = wins.shape[0]
    a, d = players.attacker, players.defender
    precision = 1.0 / PRIOR_SD**2
    theta = np.zeros((fits, players.count))
    rows = np.arange(fits)[:, None]
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(theta[:, a] - theta[:, d])))  # fits x pairings
        residual = wins - trials * p
        gradient = -precision * theta
        np.add.at(gradient, (rows, a), residual)
        np.add.at(gradient, (rows, d), -residual)
        # The negative Hessian, X^T diag(w) X + precision I: each pairing touches four entries.
        weight = trials * p * (1.0 - p)
        hessian = np.broadcast_to(
            precision * np.eye(players.count), (fits, players.count, players.count)
        ).copy()
        np.add.at(hessian, (rows, a, a), weight)
        np.add.at(hessian, (rows, d, d), weight)
        np.add.at(hessian, (rows, a, d), -weight)
        np.add.at(hessian, (rows, d, a), -weight)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        theta = theta + step
        if float(np.abs(step).max()) < TOLERANCE:
            break
    return theta


__all__ = [
    "BOOTSTRAP_ROUNDS",
    "PRIOR_SD",
    "Contest",
    "Pairing",
    "PlayerRating",
    "Ratings",
    "contests_from",
    "fit_pairings",
    "fit_ratings",
    "is_contest",
    "win_probability",
]
