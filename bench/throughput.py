"""Benchmark 2: turns per second of one defender replica with 32 conversations at once.

The model answers in 20 ms, so 32 conversations could make 1,600 turns/s if the defender
cost nothing; what the replica reaches is its own capacity. Reported beside it: latency
percentiles, the replica's garbage-collection pauses inside the load window (from the GC
probe, see bench/service_probe.py) and the CPU each process used, which says where the
machine's two cores went. The model server is driven directly at the same concurrency, in
alternation, to show the ceiling of the rest of the set-up.
"""

from __future__ import annotations

from bench.harness import Service, a2a_load, model_load, stack, summary_ms
from bench.scenario import BenchOptions, Outcome

MODEL_LATENCY_MS = 20
CONVERSATIONS = 32
GOAL_TURNS_S = 200.0


def _cpu(services: dict[str, Service]) -> dict[str, float]:
    return {name: service.cpu_seconds() for name, service in services.items()}


def run(options: BenchOptions) -> Outcome:
    duration = options.scale(20, 5)
    with stack() as bench:
        model = bench.start_scripted_model("model", MODEL_LATENCY_MS)
        defender = bench.start_defender("defender", model)
        load = {"conversations": CONVERSATIONS, "turns": 5, "duration_s": duration, "warmup": 3}
        a2a_load(defender.url, **{**load, "duration_s": 3})
        rounds: list[dict[str, object]] = []
        for _ in range(options.rounds):
            direct = model_load(model.url, **load)
            processes = {"defender": defender, "model": model}
            before = _cpu(processes)
            arena = a2a_load(defender.url, **load)
            after = _cpu(processes)
            wall = arena.window[1] - arena.window[0]
            pauses = defender.gc_pauses(arena.window)
            rounds.append(
                {
                    "turns_per_s": arena.throughput,
                    "latency_ms": summary_ms(arena.latencies),
                    "direct_model_calls_per_s": direct.throughput,
                    "gc_collections": len(pauses),
                    "gc_pause_total_ms": sum(p[1] for p in pauses) * 1000,
                    "gc_pause_max_ms": max((p[1] for p in pauses), default=0.0) * 1000,
                    "gc_pause_share": sum(p[1] for p in pauses) / wall if wall else 0.0,
                    "cpu_share": {name: (after[name] - before[name]) / wall for name in processes},
                }
            )

    worst = min(float(r["turns_per_s"]) for r in rounds)  # type: ignore[arg-type]
    best = max(float(r["turns_per_s"]) for r in rounds)  # type: ignore[arg-type]
    p99 = max(r["latency_ms"]["p99"] for r in rounds)  # type: ignore[index]
    gc_max = max(float(r["gc_pause_max_ms"]) for r in rounds)  # type: ignore[arg-type]
    gc_share = max(float(r["gc_pause_share"]) for r in rounds)  # type: ignore[arg-type]
    met = worst >= GOAL_TURNS_S
    return Outcome(
        id="throughput",
        title=f"Throughput, {CONVERSATIONS} conversations, one replica",
        goal=f">= {GOAL_TURNS_S:.0f} turns/s (model at {MODEL_LATENCY_MS} ms)",
        measured=(
            f"{worst:.0f}-{best:.0f} turns/s; p99 {p99:.0f} ms; GC {gc_share * 100:.1f}% of the time, "
            f"longest pause {gc_max:.0f} ms"
        ),
        met=met,
        explanation=""
        if met
        else f"misses {GOAL_TURNS_S:.0f} turns/s by {(1 - worst / GOAL_TURNS_S) * 100:.0f}%",
        details={"duration_s": duration, "rounds": rounds},
    )
