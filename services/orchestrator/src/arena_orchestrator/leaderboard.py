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

import logging
from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

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
    is_contest,
)

logger = logging.getLogger(__name__)

HISTORY_POINTS = 50
"""How many of the latest campaigns the history shows the table after."""
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
    finished_at: datetime
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
    pairings: list[PairingRecord]
    history: list[HistoryPoint]
    categories: list[str]
    """Every category some entered contest was played under (for the category filter)."""


def attacker_player(attacker: AttackerSpec, model: str | None) -> str:
    """The leaderboard name of an attacker: strategy, converters (with their parameters) and
    model, whatever the campaign labelled it."""
    name = "+".join([attacker.strategy, *(converter.label for converter in attacker.converters)])
    return f"{name} @ {model}" if model else name


def defender_player(name: str, profile: str | None) -> str:
    """The leaderboard name of a defender: its name, and its built-in profile if it has one."""
    return f"{name} ({profile})" if profile else name


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
) -> Leaderboard:
    """The leaderboard over ``entries``: those finished at or after ``since``, counting only the
    contests on objectives of ``category`` when one is given."""
    ordered = sorted(entries, key=lambda entry: (entry.finished_at, entry.campaign_id))
    categories = sorted({c for entry in ordered for result in entry.results for c in result.categories})
    if since is not None:
        ordered = [entry for entry in ordered if entry.finished_at >= since]
    chosen = [(entry, _pairings(entry, category)) for entry in ordered]
    chosen = [(entry, pairings) for entry, pairings in chosen if pairings]
    totals: dict[tuple[str, str], list[int]] = {}
    history: list[HistoryPoint] = []
    first_point = max(0, len(chosen) - history_points)
    for position, (entry, pairings) in enumerate(chosen):
        for pairing in pairings:
            cell = totals.setdefault((pairing.attacker, pairing.defender), [0, 0])
            cell[0] += pairing.attacker_wins
            cell[1] += pairing.matches
        if position >= first_point:
            point = fit_pairings(_as_pairings(totals), bootstrap_rounds=0)
            history.append(
                HistoryPoint(
                    campaign_id=entry.campaign_id,
                    campaign_name=entry.campaign_name,
                    finished_at=entry.finished_at,
                    matches=point.matches,
                    ratings=[
                        HistoryRating(side=p.side, name=p.name, rating=round(p.rating, 1))
                        for p in [*point.attackers, *point.defenders]
                    ],
                )
            )
    ratings = fit_pairings(_as_pairings(totals), bootstrap_rounds=bootstrap_rounds)
    return Leaderboard(
        category=category,
        since=since,
        campaigns=len(chosen),
        matches=ratings.matches,
        bootstrap_rounds=ratings.bootstrap_rounds,
        prior_sd=PRIOR_SD,
        attackers=[_rated(p) for p in ratings.attackers],
        defenders=[_rated(p) for p in ratings.defenders],
        pairings=_pairing_records(ratings),
        history=history,
        categories=categories,
    )


def _pairings(entry: LeaderboardEntry, category: str | None) -> list[Pairing]:
    return [
        Pairing(result.attacker, result.defender, result.attacker_wins, result.matches)
        for result in entry.results
        if category is None or category in result.categories
    ]


def _as_pairings(totals: dict[tuple[str, str], list[int]]) -> list[Pairing]:
    return [Pairing(a, d, wins, n) for (a, d), (wins, n) in totals.items()]


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
    "EntryResult",
    "HistoryPoint",
    "Leaderboard",
    "LeaderboardEntry",
    "PairingRecord",
    "RatedPlayer",
    "attacker_player",
    "build_leaderboard",
    "defender_player",
    "entry_for",
]
