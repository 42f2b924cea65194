"""The leaderboard: players named across campaigns, filters, and the history (ADR 0023)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from arena_orchestrator.campaign_models import Campaign, CellKey, MatchSummary
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.leaderboard import (
    MAX_PLAYER_NAME,
    EntryResult,
    LeaderboardEntry,
    attacker_player,
    bounded_name,
    build_leaderboard,
    entry_for,
)

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _campaign(**overrides: Any) -> Campaign:
    data: dict[str, Any] = {
        "name": "weekly",
        "attackers": [
            {"name": "enc", "strategy": "playbook", "converters": ["base64", "noise:sigma=0.3"]},
            {"strategy": "crescendo"},
        ],
        "defenders": [{"name": "bot", "url": "http://127.0.0.1:1"}],
        "objectives": [{"id": "give-up-phrase"}, {"phrase": "I Give Up"}],
    }
    data.update(overrides)
    spec = CampaignSpec.model_validate(data)
    return Campaign(id="c-0123456789abcdef", spec=spec, created_at=T0, total=spec.match_count)


def _summary(attacker: str, objective: str, outcome: str | None, **extra: Any) -> MatchSummary:
    fields: dict[str, Any] = {
        "match_id": "c-0123456789abcdef-m000000",
        "index": 0,
        "repetition": 0,
        "cell": CellKey(attacker=attacker, defender="bot", objective=objective),
        "disposition": "played",
        "outcome": outcome,
        "finished_at": T0,
    }
    fields.update(extra)
    return MatchSummary.model_validate(fields)


def test_players_are_named_by_strategy_converters_model_and_profile_not_by_labels() -> None:
    campaign = _campaign()
    [enc, _crescendo] = campaign.spec.attackers
    assert attacker_player(enc, None) == "playbook+base64+noise:sigma=0.3"
    summaries = [
        _summary(
            "enc", "give-up-phrase", "attacker_won", attacker_model="gemini/flash", defender_profile="strict"
        ),
        _summary(
            "enc", "give-up-phrase", "defended", attacker_model="gemini/flash", defender_profile="strict"
        ),
        _summary("crescendo", "phrase", "defended", attacker_model="gemini/flash"),
        # Not contests: an error, a refusal to attack, a canceled match.
        _summary("crescendo", "phrase", "error", error="boom", error_kind="target_unreachable"),
        _summary("crescendo", "phrase", "attacker_refused"),
        _summary("crescendo", "phrase", None, disposition="canceled"),
    ]
    entry = entry_for(campaign, summaries, T0)
    assert [(r.attacker, r.defender, r.categories, r.attacker_wins, r.matches) for r in entry.results] == [
        ("crescendo @ gemini/flash", "bot", [], 0, 1),
        ("playbook+base64+noise:sigma=0.3 @ gemini/flash", "bot (strict)", ["ASI01", "LLM01:2025"], 1, 2),
    ]
    assert entry.matches == 3


def _entry(
    index: int, defender_wins: int, *, category: str = "LLM01:2025", days: int = 0
) -> LeaderboardEntry:
    return LeaderboardEntry(
        campaign_id=f"c-{index:016x}",
        campaign_name=f"week {index}",
        finished_at=T0 + timedelta(days=days or 7 * index),
        results=[
            EntryResult(
                attacker="crescendo",
                defender="bot",
                categories=[category],
                attacker_wins=10 - defender_wins,
                matches=10,
            ),
            EntryResult(
                attacker="crescendo", defender="wall", categories=[category], attacker_wins=1, matches=10
            ),
        ],
    )


def test_a_regression_shows_as_a_drop_in_the_history() -> None:
    board = build_leaderboard([_entry(2, 0), _entry(1, 10)], bootstrap_rounds=20)
    assert [point.campaign_name for point in board.history] == ["week 1", "week 2"]
    bot = [next(r.rating for r in point.ratings if r.name == "bot") for point in board.history]
    assert bot[1] < bot[0] - 100
    assert (board.campaigns, board.matches) == (2, 40)
    bot_now = next(p for p in board.defenders if p.name == "bot")
    assert (bot_now.wins, bot_now.losses) == (10, 10)
    assert [p.name for p in board.defenders] == ["wall", "bot"]


def test_filters_by_category_and_date_and_lists_every_category() -> None:
    entries = [_entry(1, 5, category="LLM01:2025"), _entry(2, 5, category="LLM07:2025")]
    board = build_leaderboard(entries, category="LLM07:2025", bootstrap_rounds=0)
    assert (board.campaigns, board.matches, board.categories) == (1, 20, ["LLM01:2025", "LLM07:2025"])
    assert [point.campaign_name for point in board.history] == ["week 2"]
    recent = build_leaderboard(entries, since=T0 + timedelta(days=10), bootstrap_rounds=0)
    assert [point.campaign_name for point in recent.history] == ["week 2"]
    empty = build_leaderboard(entries, category="ASI01", bootstrap_rounds=0)
    assert (empty.campaigns, empty.matches, empty.attackers, empty.history) == (0, 0, [], [])


def test_the_history_keeps_the_latest_points_and_the_table_is_reproducible() -> None:
    entries = [_entry(i, i % 10) for i in range(1, 8)]
    board = build_leaderboard(entries, history_points=3)
    assert [point.campaign_name for point in board.history] == ["week 5", "week 6", "week 7"]
    assert board.history[-1].matches == board.matches == 140
    assert build_leaderboard(list(reversed(entries)), history_points=3) == board


def test_a_long_converter_parameter_gives_a_bounded_name_that_keeps_players_apart() -> None:
    def attacker_with(intro: str) -> dict[str, Any]:
        return {
            "name": f"long-{intro[0]}",
            "strategy": "playbook",
            "converters": [f"code-block:intro={intro}"],
        }

    campaign = _campaign(attackers=[attacker_with("a" * 500), attacker_with("b" + "a" * 499)])
    model = "m" * 200
    first, second = (attacker_player(attacker, model) for attacker in campaign.spec.attackers)
    assert len(first) == len(second) == MAX_PLAYER_NAME
    assert first != second
    assert first.startswith("playbook+code-block:intro=aaa")
    assert bounded_name("short") == "short"
    summaries = [_summary(label, "phrase", "attacker_won") for label in ("long-a", "long-b")]
    entry = entry_for(campaign, summaries, T0)
    assert sorted(result.attacker for result in entry.results) == sorted(
        attacker_player(attacker, None) for attacker in campaign.spec.attackers
    )


def test_only_the_most_played_players_are_rated_and_the_others_are_counted() -> None:
    results = [
        EntryResult(attacker=f"a{i}", defender=f"d{j}", attacker_wins=1, matches=2 + i + j)
        for i in range(4)
        for j in range(3)
    ]
    entry = LeaderboardEntry(
        campaign_id="c-00000000000000aa", campaign_name="many", finished_at=T0, results=results
    )
    board = build_leaderboard([entry], max_players=2, bootstrap_rounds=0)
    assert sorted(p.name for p in board.attackers) == ["a2", "a3"]
    assert sorted(p.name for p in board.defenders) == ["d1", "d2"]
    assert (board.unrated_attackers, board.unrated_defenders) == (2, 1)
    assert board.matches == sum(
        r.matches for r in results if r.attacker in ("a2", "a3") and r.defender != "d0"
    )
    assert {(p.attacker, p.defender) for p in board.pairings} == {
        (a, d) for a in ("a2", "a3") for d in ("d1", "d2")
    }
    assert [point.matches for point in board.history] == [board.matches]


def test_the_bootstrap_takes_fewer_rounds_when_the_players_are_many() -> None:
    results = [
        EntryResult(attacker=f"a{i}", defender=f"d{j}", attacker_wins=(i + j) % 3, matches=3)
        for i in range(30)
        for j in range(30)
    ]
    entry = LeaderboardEntry(
        campaign_id="c-00000000000000bb", campaign_name="big", finished_at=T0, results=results
    )
    assert build_leaderboard([entry], bootstrap_rounds=20).bootstrap_rounds == 20
    budget = 30**3 * 20 // 2
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("arena_orchestrator.leaderboard.FIT_BUDGET", budget)
        patch.setattr("arena_orchestrator.leaderboard.MIN_BOOTSTRAP_ROUNDS", 5)
        assert build_leaderboard([entry], bootstrap_rounds=20).bootstrap_rounds == 10
        patch.setattr("arena_orchestrator.leaderboard.MIN_BOOTSTRAP_ROUNDS", 15)
        assert build_leaderboard([entry], bootstrap_rounds=20).bootstrap_rounds == 15


def test_an_entry_without_a_time_zone_is_refused() -> None:
    with pytest.raises(ValidationError):
        LeaderboardEntry(
            campaign_id="c-00000000000000cc", campaign_name="naive", finished_at=datetime(2026, 11, 1)
        )


def test_the_defenders_rated_are_those_the_rated_attackers_met() -> None:
    def entry(index: int, *results: tuple[str, str, int]) -> LeaderboardEntry:
        return LeaderboardEntry(
            campaign_id=f"c-{index:016x}",
            campaign_name=f"week {index}",
            finished_at=T0 + timedelta(days=index),
            results=[EntryResult(attacker=a, defender=d, attacker_wins=1, matches=n) for a, d, n in results],
        )

    # The most played attacker (a1) never met the most played defender (d1).
    entries = [entry(1, ("a1", "d2", 5), ("a1", "d3", 5)), entry(2, ("a2", "d1", 8))]
    board = build_leaderboard(entries, max_players=1, bootstrap_rounds=0)
    assert ([p.name for p in board.attackers], [p.name for p in board.defenders]) == (["a1"], ["d2"])
    assert (board.unrated_attackers, board.unrated_defenders) == (1, 2)
    # The second campaign has no contest left in the table: it is not counted, nor in the history.
    assert board.campaigns == 1
    assert [point.campaign_name for point in board.history] == ["week 1"]
