"""The arena's leaderboard: every campaign's contests, rated together (ADR 0023).

When a campaign is settled (every match accounted for), its played contests are entered once
into the leaderboard: a :class:`LeaderboardEntry` of counts per attacker, defender and the
objective's categories, kept by the campaign store beside the campaigns but without their
expiry (:meth:`~arena_orchestrator.campaign_store.CampaignStore.add_leaderboard_entry`, a
write-once step, so an entry made twice by two replicas counts once). The ratings are refitted
from those counts on every read (:func:`build_leaderboard`, :mod:`arena_orchestrator.ratings`).

Players are named across campaigns by what they are, not by a campaign's labels:

* an attacker is its strategy and converter chain, and the attacker's model when it has one:
  ``crescendo+base64 @ gemini/gemini-2.5-flash`` (:func:`attacker_player`);
* a defender is its name in the spec, and the built-in profile it plays when it is one of
  the arena's own defenders: ``support-bot (strict)`` (:func:`defender_player`).

The history is the table as it stood after each campaign: each of the latest
:data:`HISTORY_POINTS` campaigns refits everything entered up to it (ratings without intervals),
so a defender that regressed shows as a drop.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from datetime import datetime

import numpy as np
import numpy.typing as npt
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from arena_orchestrator.campaign_models import MAX_PLAYER_FIELD, Campaign, MatchSummary
from arena_orchestrator.campaign_spec import AttackerSpec, CampaignSpec
from arena_orchestrator.ratings import (
    BOOTSTRAP_ROUNDS,
    PRIOR_SD,
    Pairing,
    PlayerRating,
    Ratings,
    Side,
    fit_pairings,
    fit_snapshots,
    is_contest,
)

logger = logging.getLogger(__name__)

HISTORY_POINTS = 50
"""How many of the latest campaigns the history shows the table after."""
MAX_RATED_PLAYERS = 300
"""How many attackers, and how many defenders, the table rates at most (those most played)."""
FIT_BUDGET = 200**3 * BOOTSTRAP_ROUNDS
"""How much work the bootstrap may take, in units of (smaller side)^2 x (larger side) per
round: the full rounds up to 200 attackers against 200 defenders (seconds, not minutes)."""
MIN_BOOTSTRAP_ROUNDS = 50
MAX_PLAYER_NAME = 2 * MAX_PLAYER_FIELD + 64
CAMPAIGN_ID_PATTERN = r"^c-[0-9a-f]{16}$"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EntryResult(_Model):
    """One attacker's contests against one defender on objectives of the same categories."""

    attacker: str = Field(min_length=1, max_length=MAX_PLAYER_NAME)
    defender: str = Field(min_length=1, max_length=MAX_PLAYER_NAME)
    categories: list[str] = Field(default_factory=list, max_length=64)
    """The OWASP categories of the objectives played (empty: none named)."""
    attacker_wins: int = Field(ge=0)
    matches: int = Field(ge=1)


class LeaderboardEntry(_Model):
    """A settled campaign's contests, as the leaderboard keeps them."""

    campaign_id: str = Field(pattern=CAMPAIGN_ID_PATTERN)
    campaign_name: str = Field(max_length=200)
    finished_at: AwareDatetime
    """When the campaign was settled (with its zone: entries are compared and sorted by it)."""
    results: list[EntryResult] = Field(default_factory=list)

    @property
    def matches(self) -> int:
        return sum(result.matches for result in self.results)


class RatedPlayer(_Model):
    """A player's rating on the chess scale, its 95% interval and its record."""

    side: Side
    name: str
    rating: float
    low: float
    high: float
    wins: int
    losses: int
    matches: int


class PairingRecord(_Model):
    """One attacker's record against one defender."""

    attacker: str
    defender: str
    attacker_wins: int
    matches: int


class HistoryRating(_Model):
    side: Side
    name: str
    rating: float


class HistoryPoint(_Model):
    """The ratings as they stood once a campaign's contests were entered."""

    campaign_id: str
    campaign_name: str
    finished_at: datetime
    matches: int
    """Contests fitted at this point (this campaign's and every earlier one's)."""
    ratings: list[HistoryRating]


class Leaderboard(_Model):
    """``GET /v1/leaderboard``: the table, each pairing's record, and the history."""

    category: str | None = None
    since: datetime | None = None
    campaigns: int
    """Campaigns whose contests are in this table (with the category and date filters)."""
    matches: int
    bootstrap_rounds: int
    prior_sd: float
    attackers: list[RatedPlayer]
    defenders: list[RatedPlayer]
    unrated_attackers: int = 0
    """Attackers with contests that are not in the table (beyond the :data:`MAX_RATED_PLAYERS`
    most played, or with no contest against a rated defender)."""
    unrated_defenders: int = 0
    """Defenders with contests that are not in the table (none among the
    :data:`MAX_RATED_PLAYERS` the rated attackers played most)."""
    pairings: list[PairingRecord]
    history: list[HistoryPoint]
    categories: list[str]
    """Every category some entered contest was played under (for the category filter)."""


def attacker_player(attacker: AttackerSpec, model: str | None) -> str:
    """The leaderboard name of an attacker: strategy, converters (with their parameters) and
    model, whatever the campaign labelled it (:func:`bounded_name` when that is too long)."""
    name = "+".join([attacker.strategy, *(converter.label for converter in attacker.converters)])
    return bounded_name(f"{name} @ {model}" if model else name)


def defender_player(name: str, profile: str | None) -> str:
    """The leaderboard name of a defender: its name, and its built-in profile if it has one."""
    return bounded_name(f"{name} ({profile})" if profile else name)


def bounded_name(name: str) -> str:
    """``name`` itself up to :data:`MAX_PLAYER_NAME` characters; a longer one (a converter's
    long parameter, say) is cut and ends with a digest of the whole, so two long names that
    differ after the cut stay two players."""
    if len(name) <= MAX_PLAYER_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return f"{name[: MAX_PLAYER_NAME - 17]}... #{digest}"


def entry_for(
    campaign: Campaign, summaries: Iterable[MatchSummary], finished_at: datetime
) -> LeaderboardEntry:
    """The leaderboard entry of a settled campaign from its recorded matches."""
    spec: CampaignSpec = campaign.spec
    attackers = {attacker.label: attacker for attacker in spec.attackers}
    categories_of = {
        label: sorted(objective.objective.categories)
        for label, objective in zip(spec.objective_labels(), spec.objectives, strict=True)
    }
    counts: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for summary in summaries:
        spec_attacker = attackers.get(summary.cell.attacker)
        if spec_attacker is None or not is_contest(summary):
            continue
        key = (
            attacker_player(spec_attacker, summary.attacker_model),
            defender_player(summary.cell.defender, summary.defender_profile),
            tuple(categories_of.get(summary.cell.objective, ())),
        )
        cell = counts.setdefault(key, [0, 0])
        cell[0] += 1 if summary.outcome == "attacker_won" else 0
        cell[1] += 1
    return LeaderboardEntry(
        campaign_id=campaign.id,
        campaign_name=spec.name[:200],
        finished_at=finished_at,
        results=[
            EntryResult(attacker=a, defender=d, categories=list(c), attacker_wins=wins, matches=n)
            for (a, d, c), (wins, n) in sorted(counts.items())
        ],
    )


def build_leaderboard(
    entries: Iterable[LeaderboardEntry],
    *,
    category: str | None = None,
    since: datetime | None = None,
    bootstrap_rounds: int = BOOTSTRAP_ROUNDS,
    history_points: int = HISTORY_POINTS,
    max_players: int = MAX_RATED_PLAYERS,
) -> Leaderboard:
    """The leaderboard over ``entries``: those finished at or after ``since``, counting only the
    contests on objectives of ``category`` when one is given.

    At most ``max_players`` attackers are rated, those with the most contests, and as many
    defenders, those the rated attackers played most; the other players are counted
    (``unrated_attackers``, ``unrated_defenders``) and their contests left out, and so is a
    campaign with no contest left. The bootstrap takes fewer rounds than ``bootstrap_rounds``
    (never under :data:`MIN_BOOTSTRAP_ROUNDS`) when the players are so many that the full
    count would take more than :data:`FIT_BUDGET`; the table says how many it took.
    """
    ordered = sorted(entries, key=lambda entry: (entry.finished_at, entry.campaign_id))
    categories = sorted({c for entry in ordered for result in entry.results for c in result.categories})
    if since is not None:
        ordered = [entry for entry in ordered if entry.finished_at >= since]
    chosen = [(entry, _pairings(entry, category)) for entry in ordered]
    chosen = [(entry, pairings) for entry, pairings in chosen if pairings]
    # The most played attackers, then the defenders most played by them: a defender met only
    # by attackers left out would have nobody to be rated against.
    rated_attackers = _most_played(chosen, "attacker", max_players, among=None)
    rated_defenders = _most_played(chosen, "defender", max_players, among=rated_attackers)
    # Each (attacker, defender) of the rated players is a column; each campaign adds its counts.
    columns: dict[tuple[str, str], int] = {}
    kept: list[tuple[LeaderboardEntry, _Counts]] = []
    for entry, pairings in chosen:
        at: list[int] = []
        wins: list[int] = []
        matches: list[int] = []
        for pairing in pairings:
            if pairing.attacker in rated_attackers and pairing.defender in rated_defenders:
                at.append(columns.setdefault((pairing.attacker, pairing.defender), len(columns)))
                wins.append(pairing.attacker_wins)
                matches.append(pairing.matches)
        if at:
            counts = (
                np.array(at, dtype=np.intp),
                np.array(wins, dtype=np.float64),
                np.array(matches, dtype=np.float64),
            )
            kept.append((entry, counts))
    first_point = max(0, len(kept) - history_points)
    total_wins = np.zeros(len(columns))
    total_trials = np.zeros(len(columns))
    snapshot_wins = np.zeros((len(kept) - first_point, len(columns)))
    snapshot_trials = np.zeros_like(snapshot_wins)
    for position, (_, (cells_at, cell_wins, cell_matches)) in enumerate(kept):
        np.add.at(total_wins, cells_at, cell_wins)
        np.add.at(total_trials, cells_at, cell_matches)
        if position >= first_point:
            snapshot_wins[position - first_point] = total_wins
            snapshot_trials[position - first_point] = total_trials
    cells = list(columns)
    history = [
        HistoryPoint(
            campaign_id=entry.campaign_id,
            campaign_name=entry.campaign_name,
            finished_at=entry.finished_at,
            matches=int(trials.sum()),
            ratings=[HistoryRating(side=p.side, name=p.name, rating=round(p.rating, 1)) for p in table],
        )
        for (entry, _), trials, table in zip(
            kept[first_point:],
            snapshot_trials,
            fit_snapshots(cells, snapshot_wins, snapshot_trials),
            strict=True,
        )
    ]
    totals = [
        Pairing(attacker, defender, int(total_wins[i]), int(total_trials[i]))
        for i, (attacker, defender) in enumerate(cells)
    ]
    rounds = bootstrap_rounds
    cost = min(len(rated_attackers), len(rated_defenders)) ** 2 * max(
        len(rated_attackers), len(rated_defenders)
    )
    if rounds > 0 and cost * rounds > FIT_BUDGET:
        rounds = max(min(rounds, MIN_BOOTSTRAP_ROUNDS), FIT_BUDGET // cost)
    ratings = fit_pairings(totals, bootstrap_rounds=rounds)
    every_attacker = {p.attacker for _, pairings in chosen for p in pairings}
    every_defender = {p.defender for _, pairings in chosen for p in pairings}
    return Leaderboard(
        category=category,
        since=since,
        campaigns=len(kept),
        matches=ratings.matches,
        bootstrap_rounds=ratings.bootstrap_rounds,
        prior_sd=PRIOR_SD,
        attackers=[_rated(p) for p in ratings.attackers],
        defenders=[_rated(p) for p in ratings.defenders],
        unrated_attackers=len(every_attacker) - len(ratings.attackers),
        unrated_defenders=len(every_defender) - len(ratings.defenders),
        pairings=_pairing_records(ratings),
        history=history,
        categories=categories,
    )


def _most_played(
    chosen: list[tuple[LeaderboardEntry, list[Pairing]]], side: Side, limit: int, *, among: set[str] | None
) -> set[str]:
    """The ``limit`` players of ``side`` with the most contests (ties by name), counting only
    the contests against the players ``among`` when given."""
    played: dict[str, int] = {}
    for _, pairings in chosen:
        for pairing in pairings:
            name, opponent = (
                (pairing.attacker, pairing.defender)
                if side == "attacker"
                else (pairing.defender, pairing.attacker)
            )
            if among is None or opponent in among:
                played[name] = played.get(name, 0) + pairing.matches
    return set(sorted(played, key=lambda name: (-played[name], name))[:limit])


_Counts = tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.float64]]
"""A campaign's counts for the table: each pairing's column, its attacker's wins, its matches."""


def _pairings(entry: LeaderboardEntry, category: str | None) -> list[Pairing]:
    return [
        Pairing(result.attacker, result.defender, result.attacker_wins, result.matches)
        for result in entry.results
        if category is None or category in result.categories
    ]


def _rated(player: PlayerRating) -> RatedPlayer:
    return RatedPlayer(
        side=player.side,
        name=player.name,
        rating=round(player.rating, 1),
        low=round(player.low, 1),
        high=round(player.high, 1),
        wins=player.wins,
        losses=player.losses,
        matches=player.matches,
    )


def _pairing_records(ratings: Ratings) -> list[PairingRecord]:
    return [
        PairingRecord(
            attacker=p.attacker, defender=p.defender, attacker_wins=p.attacker_wins, matches=p.matches
        )
        for p in ratings.pairings
    ]


__all__ = [
    "HISTORY_POINTS",
    "MAX_RATED_PLAYERS",
    "EntryResult",
    "HistoryPoint",
    "Leaderboard",
    "LeaderboardEntry",
    "PairingRecord",
    "RatedPlayer",
    "attacker_player",
    "bounded_name",
    "build_leaderboard",
    "defender_player",
    "entry_for",
]
