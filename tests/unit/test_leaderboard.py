"""The leaderboard: players named across campaigns, filters, and the history (ADR 0023)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from arena_orchestrator.campaign_models import Campaign, CellKey, MatchSummary
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.leaderboard import (
    EntryResult,
    LeaderboardEntry,
    attacker_player,
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
