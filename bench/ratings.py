"""Benchmark 9: the leaderboard over 100,000 recorded matches, read from Redis (issue 24).

What ``GET /v1/leaderboard`` does, minus HTTP: read every campaign's leaderboard entry from a
real redis-server (``RedisCampaignStore.leaderboard_entries``, the entries validated as they
are read), then build the table (:func:`arena_orchestrator.leaderboard.build_leaderboard`):
sum the counts, fit the Bradley-Terry ratings with 200 bootstrap rounds, and refit the history
after each of the latest 50 campaigns. The matches are synthetic outcomes drawn from known
strengths: 100 weekly campaigns of 1,000 matches each, 30 attackers (strategies x models x
converters, as a team that runs campaigns every week ends up with) against 12 defenders, on
objectives of two OWASP categories. The goal: under two seconds on this machine. Repeated
``--rounds`` times; the worst round is held to the goal.

Beside it, without a goal: a crowded leaderboard fitted in memory, 200 attackers against 200
defenders over 50 campaigns of 3,000 pairings each (up to 40,000 pairings, every bootstrap
round), the size past which the bootstrap takes fewer rounds (ADR 0023).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from datetime import UTC, datetime, timedelta

from arena_core.redis_state import RedisClients, RedisConfig
from arena_orchestrator.leaderboard import EntryResult, LeaderboardEntry, build_leaderboard
from arena_orchestrator.ratings import BOOTSTRAP_ROUNDS
from arena_orchestrator.redis_campaign_store import RedisCampaignStore
from bench.harness import stack
from bench.scenario import BenchOptions, Outcome

ATTACKERS = 30
DEFENDERS = 12
CAMPAIGNS = 100
CATEGORIES = ("LLM01:2025", "LLM07:2025")
GOAL_S = 2.0
CROWDED_PLAYERS = 200
CROWDED_CAMPAIGNS = 50
CROWDED_PAIRINGS = 3_000


def _entries(matches: int, seed: int) -> list[LeaderboardEntry]:
    rng = random.Random(seed)  # noqa: S311 (synthetic outcomes, not secrets)
    attackers = {f"attacker-{i:02d}": rng.gauss(0.0, 1.0) for i in range(ATTACKERS)}
    defenders = {f"defender-{i:02d}": rng.gauss(0.0, 1.0) for i in range(DEFENDERS)}
    names_a, names_d = list(attackers), list(defenders)
    start = datetime(2025, 1, 6, tzinfo=UTC)
    entries = []
    for week in range(CAMPAIGNS):
        counts: dict[tuple[str, str, str], list[int]] = {}
        for _ in range(matches // CAMPAIGNS):
            a, d, category = rng.choice(names_a), rng.choice(names_d), rng.choice(CATEGORIES)
            chance = 1.0 / (1.0 + math.exp(-(attackers[a] - defenders[d])))
            cell = counts.setdefault((a, d, category), [0, 0])
            cell[0] += rng.random() < chance
            cell[1] += 1
        entries.append(
            LeaderboardEntry(
                campaign_id=f"c-{week:016x}",
                campaign_name=f"week {week}",
                finished_at=start + timedelta(weeks=week),
                results=[
                    EntryResult(attacker=a, defender=d, categories=[c], attacker_wins=wins, matches=n)
                    for (a, d, c), (wins, n) in sorted(counts.items())
                ],
            )
        )
    return entries


def _crowded(seed: int) -> list[LeaderboardEntry]:
    rng = random.Random(seed)  # noqa: S311 (synthetic outcomes, not secrets)
    start = datetime(2025, 1, 6, tzinfo=UTC)
    every = [(a, d) for a in range(CROWDED_PLAYERS) for d in range(CROWDED_PLAYERS)]
    return [
        LeaderboardEntry(
            campaign_id=f"c-{week:016x}",
            campaign_name=f"week {week}",
            finished_at=start + timedelta(weeks=week),
            results=[
                EntryResult(
                    attacker=f"attacker-{a:03d}",
                    defender=f"defender-{d:03d}",
                    categories=[CATEGORIES[0]],
                    attacker_wins=rng.randint(0, 3),
                    matches=3,
                )
                for a, d in sorted(rng.sample(every, CROWDED_PAIRINGS))
            ],
        )
        for week in range(CROWDED_CAMPAIGNS)
    ]


def _crowded_seconds(rounds: int) -> tuple[list[float], int, int]:
    entries = _crowded(seed=25)
    seconds = []
    for _ in range(rounds):
        began = time.perf_counter()
        board = build_leaderboard(entries)
        seconds.append(time.perf_counter() - began)
    return seconds, len(board.pairings), board.bootstrap_rounds


async def _measure(url: str, entries: list[LeaderboardEntry], rounds: int) -> tuple[list[float], int, int]:
    clients = RedisClients.connect(RedisConfig(url=url, namespace="bench-ratings"))
    store = RedisCampaignStore(clients, campaign_ttl_s=3600)
    try:
        for entry in entries:
            await store.add_leaderboard_entry(entry)
        build_leaderboard((await store.leaderboard_entries())[:2])  # import and warm numpy
        seconds = []
        for _ in range(rounds):
            began = time.perf_counter()
            board = build_leaderboard(await store.leaderboard_entries())
            seconds.append(time.perf_counter() - began)
        return seconds, board.matches, len(board.pairings)
    finally:
        await clients.close()


def run(options: BenchOptions) -> Outcome:
    matches = options.scale(100_000, 20_000)
    entries = _entries(matches, seed=24)
    with stack(tracing=False) as built:
        url = built.start_redis()  # the stack's own
        seconds, fitted, pairings = asyncio.run(_measure(url, entries, options.rounds))
    crowded, crowded_pairings, crowded_rounds = _crowded_seconds(options.rounds)
    worst = max(seconds)
    met = worst <= GOAL_S
    return Outcome(
        id="ratings",
        title=f"Leaderboard: {fitted:,} recorded matches read from Redis and rated",
        goal=f"<= {GOAL_S:.0f} s for 100,000 matches ({BOOTSTRAP_ROUNDS} bootstrap rounds, with the history)",
        measured=(
            f"{min(seconds):.2f}-{worst:.2f} s ({CAMPAIGNS} campaigns, {ATTACKERS} attackers x "
            f"{DEFENDERS} defenders, {pairings} pairings); crowded, in memory: {min(crowded):.1f}-"
            f"{max(crowded):.1f} s ({CROWDED_PLAYERS} x {CROWDED_PLAYERS} players, "
            f"{crowded_pairings:,} pairings, {crowded_rounds} rounds)"
        ),
        met=met,
        explanation="" if met else f"{worst:.2f} s misses {GOAL_S:.0f} s",
        details={
            "matches": fitted,
            "seconds": seconds,
            "pairings": pairings,
            "campaigns": CAMPAIGNS,
            "crowded": {
                "players_per_side": CROWDED_PLAYERS,
                "campaigns": CROWDED_CAMPAIGNS,
                "pairings": crowded_pairings,
                "bootstrap_rounds": crowded_rounds,
                "seconds": crowded,
            },
        },
    )
