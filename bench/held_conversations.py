"""Benchmark 8: what a conversation parked in input-required costs the defender's memory.

A defender in ``ARENA_DEFENDER_TURN_MODE=input-required`` parks every task after its reply,
the original sample's convention and what a client that continues by taskId relies on.
10,000 conversations of one turn each are opened (32 at a time), then left parked; the
defender's resident memory is read before and after, once the release time has passed
(``ARENA_TASK_IDLE_TIMEOUT_S``: 2 s with Redis, unset). The goal is for Redis, where the task
already lives: at most 5 KB of resident memory per parked conversation. Without Redis the
same run shows the bound in memory (tasks and history are kept in the process by design:
bounded by ``ARENA_MAX_CONVERSATIONS`` and the idle timeout), reported, not judged.

Resident memory is what the process holds from the system: CPython keeps freed memory
for reuse, so the figure is an upper bound of what stays allocated.
"""

from __future__ import annotations

import time

from bench.harness import a2a_load, stack
from bench.scenario import BenchOptions, Outcome

CONVERSATIONS = 10_000
CONCURRENCY = 32
GOAL_KB = 5.0
SETTLE_S = 4.0  # past the 2 s release, with room for the releases to run


def _per_conversation_kb(redis: bool, conversations: int) -> tuple[float, float, float]:
    """KB of defender RSS per parked conversation; RSS before and after (MB)."""
    with stack(redis=redis, tracing=False) as bench:
        model = bench.start_scripted_model("model", 0)
        defender = bench.start_defender("defender", model, ARENA_DEFENDER_TURN_MODE="input-required")
        # Warm-up: the code paths, pools and caches a first request builds.
        a2a_load(defender.url, requests=500, turns=1, conversations=CONCURRENCY)
        time.sleep(SETTLE_S)
        before = defender.rss_bytes()
        a2a_load(defender.url, requests=conversations, turns=1, conversations=CONCURRENCY)
        time.sleep(SETTLE_S)
        after = defender.rss_bytes()
    return (after - before) / conversations / 1024, before / 2**20, after / 2**20


def run(options: BenchOptions) -> Outcome:
    conversations = options.scale(CONVERSATIONS, 1_000)
    with_redis: list[float] = []
    in_memory: list[float] = []
    rss: dict[str, list[tuple[float, float]]] = {"redis": [], "memory": []}
    for _ in range(options.rounds):
        kb, before, after = _per_conversation_kb(True, conversations)
        with_redis.append(kb)
        rss["redis"].append((before, after))
        kb, before, after = _per_conversation_kb(False, conversations)
        in_memory.append(kb)
        rss["memory"].append((before, after))
    worst = max(with_redis)
    met = worst <= GOAL_KB
    explanation = (
        f"with Redis a parked conversation costs {worst:.1f} KB of the defender's resident memory"
        + ("" if met else f", missing {GOAL_KB:g} KB by {(worst / GOAL_KB - 1) * 100:.0f}%")
        + f"; in memory {max(in_memory):.1f} KB (the task, its history and a2a-sdk's active task "
        "object stay in the process until ARENA_TASK_IDLE_TIMEOUT_S, 600 s unset, and "
        "ARENA_MAX_CONVERSATIONS bounds the history)"
    )
    return Outcome(
        id="held_conversations",
        title=f"Held conversations: {conversations} parked in input-required",
        goal=f"<= {GOAL_KB:g} KB of defender RSS per parked conversation with Redis",
        measured=(
            f"Redis {min(with_redis):.1f}-{worst:.1f} KB; in memory "
            f"{min(in_memory):.1f}-{max(in_memory):.1f} KB per conversation"
        ),
        met=met,
        explanation=explanation,
        details={
            "conversations": conversations,
            "kb_per_conversation_redis": with_redis,
            "kb_per_conversation_memory": in_memory,
            "rss_mb_before_after": rss,
        },
    )
