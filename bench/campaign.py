"""Benchmark 5: a campaign of 500 matches x 5 turns at concurrency 64, model at 50 ms.

Every service runs as its own process, as in Compose: Redis, the OTLP receiver, the
scripted model server (refusing, so every match plays all five turns), a defender, an
attacker (the offline ``playbook`` strategy, which asks no model) and an orchestrator.
The campaign is submitted over the REST API and followed until it is finished.

The model-bound ideal is what an arena that cost nothing would take: every model call
takes 50 ms and 64 run at once, so ``model calls x 50 ms / 64``. The goals (issue 23): at
most 3x that ideal, and at most 25 ms of CPU per match over the arena's own processes
(orchestrator, attacker, defender and Redis: the scripted model stands in for a model server
and is reported but not counted). Resident memory of
every service is sampled five times a second (Redis's too, reported but not held to the goal:
it is the data kept); the medians over the first and over the last
100 matches are compared, within each campaign and from the first campaign to the next.

After the campaigns, the same stack measures a2a-sdk's own floor (:func:`bench.harness.sdk_floor`:
a stock a2a-sdk agent answering from memory and a stock a2a-sdk client, each in its own
process): five turns of it are what a match costs in a2a-sdk alone on this machine, and the
explanation of a missed CPU goal gives that number beside the goal.

:func:`play` is shared with the scaling benchmark (bench/scaling.py).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.harness import BenchError, OtherProcess, ProcessReadings, Service, Stack, sdk_floor, stack
from bench.scenario import BenchOptions, Outcome

MODEL_LATENCY_MS = 50
CONCURRENCY = 64
TURNS = 5
GOAL = 3.0
"""At most this many times the model-bound ideal."""
CPU_GOAL_MS = 25.0
"""At most this much CPU per match over the arena's processes (Redis too; not the model server)."""
MEMORY_GOAL = 0.10
EARLY_MATCHES = 100


@dataclass
class CampaignRun:
    """What one campaign measured."""

    matches: int
    wall_s: float
    model_calls: int
    outcomes: dict[str, int]
    rss_early: dict[str, int] = field(default_factory=dict)
    rss_end: dict[str, int] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)

    @property
    def ideal_s(self) -> float:
        return self.model_calls * MODEL_LATENCY_MS / 1000 / CONCURRENCY

    @property
    def ratio(self) -> float:
        return self.wall_s / self.ideal_s if self.ideal_s else float("nan")

    @property
    def arena_cpu_ms_per_match(self) -> float:
        """CPU per match of the arena's own processes (the model server is not one)."""
        return sum(cpu for label, cpu in self.cpu_s.items() if label != "model") / self.matches * 1000

    def as_dict(self) -> dict[str, Any]:
        return {
            "arena_cpu_ms_per_match": self.arena_cpu_ms_per_match,
            "matches": self.matches,
            "wall_s": self.wall_s,
            "model_calls": self.model_calls,
            "ideal_s": self.ideal_s,
            "ratio": self.ratio,
            "matches_per_s": self.matches / self.wall_s,
            "turns_per_s": self.model_calls / self.wall_s,
            "outcomes": self.outcomes,
            "rss_mb_first_100_matches": {k: v / 2**20 for k, v in self.rss_early.items()},
            "rss_mb_last_100_matches": {k: v / 2**20 for k, v in self.rss_end.items()},
            "cpu_s": self.cpu_s,
        }


def campaign_spec(name: str, defender_url: str, matches: int) -> str:
    return json.dumps(
        {
            "name": name,
            "attackers": [{"strategy": "playbook"}],
            "defenders": [{"name": "defender", "url": defender_url}],
            "objectives": [{"name": "give-up", "phrase": "I Give Up", "judge": "phrase"}],
            "repetitions": matches,
            "max_turns": TURNS,
            "concurrency": CONCURRENCY,
            "match_timeout_s": 600,
        }
    )


def play(
    orchestrator_url: str,
    defender_url: str,
    matches: int,
    processes: Mapping[str, ProcessReadings],
    name: str,
) -> CampaignRun:
    """Submit a campaign, follow it to the end, and read memory and CPU on the way."""
    cpu_before = {label: service.cpu_seconds() for label, service in processes.items()}
    with httpx.Client(base_url=orchestrator_url, timeout=30) as client:
        started = time.monotonic()
        response = client.post(
            "/v1/campaigns",
            content=campaign_spec(name, defender_url, matches),
            headers={"Content-Type": "application/json"},
        )
        if response.status_code >= 300:
            raise BenchError(f"the orchestrator refused the campaign: {response.status_code} {response.text}")
        campaign_id = response.json()["id"]
        # Resident memory sampled all along with the matches done so far: the first and the
        # last 100 matches are compared by their median samples, so that one burst of 64
        # matches in flight does not pass for growth.
        samples: list[tuple[int, dict[str, int]]] = []
        while True:
            progress = client.get(f"/v1/campaigns/{campaign_id}").json()
            samples.append((progress["done"], {label: s.rss_bytes() for label, s in processes.items()}))
            if progress["finished"]:
                break
            if time.monotonic() - started > 3600:
                raise BenchError(f"the campaign did not finish within an hour: {progress}")
            time.sleep(0.2)
        wall = time.monotonic() - started
        window = min(EARLY_MATCHES, matches)
        rss_early = _median_rss([rss for done, rss in samples if 0 < done <= window] or [samples[0][1]])
        rss_end = _median_rss([rss for done, rss in samples if done >= matches - window] or [samples[-1][1]])
        summaries: list[dict[str, Any]] = []
        while len(summaries) < matches:
            page = client.get(
                f"/v1/campaigns/{campaign_id}/matches", params={"offset": len(summaries), "limit": 1000}
            ).json()
            if not page["matches"]:
                break
            summaries += page["matches"]
    outcomes: dict[str, int] = {}
    for summary in summaries:
        key = summary["outcome"] or summary["disposition"]
        outcomes[key] = outcomes.get(key, 0) + 1
    return CampaignRun(
        matches=matches,
        wall_s=wall,
        model_calls=sum(int(summary["turns_used"]) for summary in summaries),
        outcomes=outcomes,
        rss_early=rss_early,
        rss_end=rss_end,
        cpu_s={label: service.cpu_seconds() - cpu_before[label] for label, service in processes.items()},
    )


def _median_rss(samples: list[dict[str, int]]) -> dict[str, int]:
    return {label: int(statistics.median(sample[label] for sample in samples)) for label in samples[0]}


def start_arena(bench: Stack, *, defenders: int = 1, orchestrators: int = 1) -> dict[str, Service]:
    """Model, defenders, attacker and orchestrators for a campaign (the defenders share Redis)."""
    assert bench.redis is not None
    model = bench.start_scripted_model("model", MODEL_LATENCY_MS)
    started = {"model": model}
    for index in range(defenders):
        started[f"defender-{index}"] = bench.start_defender(f"defender-{index}", model)
    attacker = bench.start(
        "attacker",
        "attacker",
        bench.base_env(ARENA_REDIS_URL=bench.redis.url, ARENA_MODEL_BASE_URL=f"{model.url}/v1"),
    )
    started["attacker"] = attacker
    for index in range(orchestrators):
        started[f"orchestrator-{index}"] = bench.start(
            "orchestrator",
            f"orchestrator-{index}",
            bench.base_env(
                ARENA_REDIS_URL=bench.redis.url,
                ARENA_ATTACKER_URL=attacker.url,
                ARENA_ORCHESTRATOR_CONCURRENCY=str(CONCURRENCY),
            ),
        )
    return started


def run(options: BenchOptions) -> Outcome:
    matches = options.scale(500, 60)
    with stack() as bench:
        services = start_arena(bench)
        orchestrator, defender = services["orchestrator-0"], services["defender-0"]
        assert bench.redis is not None
        assert bench.redis.process is not None
        processes: dict[str, ProcessReadings] = {**services, "redis": OtherProcess(bench.redis.process.pid)}
        play(orchestrator.url, defender.url, 20, processes, "warm-up")
        runs = [
            play(orchestrator.url, defender.url, matches, processes, f"bench-{index}")
            for index in range(options.rounds)
        ]
        floor = sdk_floor(bench, calls=options.scale(2000, 300))
    # A match is TURNS turns, each served by an agent and sent by a client: a2a-sdk's share alone.
    floor_ms = TURNS * (floor["server_cpu_ms_per_turn"] + floor["client_cpu_ms_per_call"])

    ratio = min(run.ratio for run in runs)
    worst = max(run.ratio for run in runs)
    cpu_best = min(run.arena_cpu_ms_per_match for run in runs)
    cpu_worst = max(run.arena_cpu_ms_per_match for run in runs)
    # Redis's memory is the data it keeps (tasks and results, until their TTLs): it grows with
    # every campaign by design, so it is reported, not held to the goal.
    held = [label for label in runs[0].rss_end if label != "redis"]
    growth = {label: max(run.rss_end[label] / run.rss_early[label] - 1 for run in runs) for label in held}
    across = {label: runs[-1].rss_end[label] / runs[0].rss_end[label] - 1 for label in held}
    memory_ok = all(abs(value) <= MEMORY_GOAL for value in [*growth.values(), *across.values()])
    met = worst <= GOAL and cpu_worst <= CPU_GOAL_MS and memory_ok
    misses = []
    best_run = min(runs, key=lambda run: run.arena_cpu_ms_per_match)
    per_match = ", ".join(
        f"{label} {cpu / best_run.matches * 1000:.0f} ms"
        for label, cpu in sorted(best_run.cpu_s.items(), key=lambda item: -item[1])
    )
    if cpu_worst > CPU_GOAL_MS:
        misses.append(
            f"{cpu_worst:.0f} ms of arena CPU per match misses {CPU_GOAL_MS:.0f} ms by "
            f"{(cpu_worst / CPU_GOAL_MS - 1) * 100:.0f}% (per match: {per_match}); a stock a2a-sdk "
            f"agent and client alone, answering from memory, spend {floor_ms:.0f} ms on a match's "
            f"{TURNS} turns on this machine ({floor['server_cpu_ms_per_turn']:.1f} + "
            f"{floor['client_cpu_ms_per_call']:.1f} ms a turn, same run)"
        )
    if worst > GOAL:
        busy = sum(best_run.cpu_s.values()) / best_run.wall_s
        misses.append(
            f"{worst:.1f}x the model-bound ideal misses {GOAL}x by {(worst / GOAL - 1) * 100:.0f}%: "
            f"the processes kept {busy:.1f} cores busy; the ideal needs "
            f"{CONCURRENCY * 1000 // MODEL_LATENCY_MS} turns/s"
        )
    if not memory_ok:
        grown = ", ".join(
            f"{k} {v * 100:+.0f}%{where}"
            for table, where in ((growth, " within a campaign"), (across, " across campaigns"))
            for k, v in table.items()
            if abs(v) > MEMORY_GOAL
        )
        misses.append(f"memory moved: {grown}")
    first = runs[0]
    return Outcome(
        id="campaign",
        title=f"Campaign, {matches} matches x {TURNS} turns, concurrency {CONCURRENCY}",
        goal=(
            f"<= {CPU_GOAL_MS:.0f} ms arena CPU per match and <= {GOAL:.0f}x the model-bound ideal "
            f"(model at {MODEL_LATENCY_MS} ms); RSS within 10%"
        ),
        measured=(
            f"{cpu_best:.0f}-{cpu_worst:.0f} ms CPU per match; "
            f"{ratio:.1f}-{worst:.1f}x ideal ({first.wall_s:.1f} s vs {first.ideal_s:.1f} s, "
            f"{first.model_calls / first.wall_s:.0f} turns/s); RSS growth max "
            f"{max(growth.values()) * 100:+.0f}% within a campaign, {max(across.values()) * 100:+.0f}% "
            "from one campaign to the next"
        ),
        met=met,
        explanation="; ".join(misses),
        details={
            "runs": [run.as_dict() for run in runs],
            "rss_growth": growth,
            "rss_growth_across_campaigns": across,
            "sdk_floor": {**floor, "cpu_ms_per_match": floor_ms},
        },
    )
