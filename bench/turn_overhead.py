"""Benchmark 1: the cost of a defender turn over A2A against a direct call to the same model.

The defender runs as in production: JSON-RPC A2A 1.0 ``SendMessage``, the Redis task store,
tracing exported over OTLP/HTTP to a receiver. Its model is the scripted model server at
20 ms; the baseline is the same load client calling that model server directly with the
messages the defender would send (system prompt, conversation so far, new message). Both
are measured in alternating batches, each conversation five turns long.

CPU per turn is read from /proc for a second defender whose model answers at 0 ms, so that
the defender is busy all the time and its own CPU is all there is to see. Beside it, under the
same load, a stock a2a-sdk agent (:mod:`bench.sdk_floor_agent`: the SDK's routes and handler,
its in-memory store, no model call, no tracing) gives the floor of any turn served by a2a-sdk
on this machine, the part of the defender's CPU the arena cannot remove while a2a-sdk serves A2A.
"""

from __future__ import annotations

from bench.harness import a2a_load, model_load, percentile, ratio, stack, summary_ms
from bench.scenario import BenchOptions, Outcome

MODEL_LATENCY_MS = 20
TURNS_PER_CONVERSATION = 5
P50_GOAL, P99_GOAL, CPU_GOAL_MS = 1.15, 1.35, 4.0


def run(options: BenchOptions) -> Outcome:
    requests = options.scale(500, 60)
    cpu_turns = options.scale(2000, 200)
    with stack() as bench:
        model = bench.start_scripted_model("model-20ms", MODEL_LATENCY_MS)
        defender = bench.start_defender("defender", model)
        model0 = bench.start_scripted_model("model-0ms", 0)
        defender0 = bench.start_defender("defender-0ms", model0)
        floor = bench.start_floor_agent()
        spec = {"turns": TURNS_PER_CONVERSATION, "warmup": 20}
        model_load(model.url, requests=20, **spec)  # warm both paths
        a2a_load(defender.url, requests=20, **spec)
        a2a_load(defender0.url, requests=100, **spec)
        a2a_load(floor.url, requests=100, **spec)

        rounds: list[dict[str, object]] = []
        direct_all: list[float] = []
        arena_all: list[float] = []
        for _ in range(options.rounds):
            direct = model_load(model.url, requests=requests, **spec).latencies
            arena = a2a_load(defender.url, requests=requests, **spec).latencies
            direct_all += direct
            arena_all += arena
            rounds.append(
                {
                    "direct_ms": summary_ms(direct),
                    "arena_ms": summary_ms(arena),
                    "p50_ratio": ratio(percentile(arena, 50), percentile(direct, 50)),
                    "p99_ratio": ratio(percentile(arena, 99), percentile(direct, 99)),
                }
            )

        cpu_rounds: list[dict[str, float]] = []
        for _ in range(options.rounds):
            before, model_before = defender0.cpu_seconds(), model0.cpu_seconds()
            load = a2a_load(defender0.url, requests=cpu_turns, turns=TURNS_PER_CONVERSATION)
            turns = len(load.samples)
            defender_ms = (defender0.cpu_seconds() - before) * 1000 / turns
            model_ms = (model0.cpu_seconds() - model_before) * 1000 / turns
            floor_before = floor.cpu_seconds()
            floor_load = a2a_load(floor.url, requests=cpu_turns, turns=TURNS_PER_CONVERSATION)
            floor_ms = (floor.cpu_seconds() - floor_before) * 1000 / len(floor_load.samples)
            cpu_rounds.append(
                {
                    "defender_cpu_ms_per_turn": defender_ms,
                    "model_server_cpu_ms_per_call": model_ms,
                    "latency_ms": summary_ms(load.latencies)["p50"],
                    "floor_cpu_ms_per_turn": floor_ms,
                    "floor_latency_ms": summary_ms(floor_load.latencies)["p50"],
                }
            )
        spans = bench.spans_received()

    p50 = ratio(percentile(arena_all, 50), percentile(direct_all, 50))
    p99 = ratio(percentile(arena_all, 99), percentile(direct_all, 99))
    cpu_ms = min(r["defender_cpu_ms_per_turn"] for r in cpu_rounds)
    cpu_worst = max(r["defender_cpu_ms_per_turn"] for r in cpu_rounds)
    floor_ms = min(r["floor_cpu_ms_per_turn"] for r in cpu_rounds)
    floor_worst = max(r["floor_cpu_ms_per_turn"] for r in cpu_rounds)
    met = p50 <= P50_GOAL and p99 <= P99_GOAL and cpu_ms <= CPU_GOAL_MS
    misses = []
    if p50 > P50_GOAL:
        misses.append(f"p50 {p50:.2f}x misses {P50_GOAL}x by {(p50 / P50_GOAL - 1) * 100:.0f}%")
    if p99 > P99_GOAL:
        misses.append(f"p99 {p99:.2f}x misses {P99_GOAL}x by {(p99 / P99_GOAL - 1) * 100:.0f}%")
    if cpu_ms > CPU_GOAL_MS:
        misses.append(
            f"{cpu_ms:.1f} ms CPU misses {CPU_GOAL_MS} ms by {(cpu_ms / CPU_GOAL_MS - 1) * 100:.0f}%"
        )
    if misses:
        misses.append(
            f"a stock a2a-sdk agent answering from memory (no model, store or tracing) took "
            f"{floor_ms:.1f}-{floor_worst:.1f} ms CPU per turn in the same run"
        )
    return Outcome(
        id="turn_overhead",
        title="Turn overhead (Redis store, tracing on)",
        goal=(
            f"<= {P50_GOAL}x p50, <= {P99_GOAL}x p99 of a direct model call at 20 ms; "
            f"<= {CPU_GOAL_MS} ms CPU/turn"
        ),
        measured=(
            f"{p50:.2f}x p50, {p99:.2f}x p99 ({percentile(arena_all, 50):.1f} vs "
            f"{percentile(direct_all, 50):.1f} ms); {cpu_ms:.1f}-{cpu_worst:.1f} ms CPU/turn "
            f"(stock a2a-sdk floor {floor_ms:.1f}-{floor_worst:.1f} ms)"
        ),
        met=met,
        explanation="; ".join(misses),
        details={
            "model_latency_ms": MODEL_LATENCY_MS,
            "requests_per_batch": requests,
            "p50_ratio": p50,
            "p99_ratio": p99,
            "direct_ms": summary_ms(direct_all),
            "arena_ms": summary_ms(arena_all),
            "rounds": rounds,
            "cpu_rounds": cpu_rounds,
            "floor_cpu_ms_per_turn": floor_ms,
            "spans_exported": spans,
        },
    )
