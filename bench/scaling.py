"""Benchmark 7: 1, 2 and 4 defender replicas and orchestrator workers under the campaign load.

The campaign of bench/campaign.py runs against N defender replicas (sharing Redis, behind a
round-robin proxy standing in for a Kubernetes Service, so the attacker sees one URL) with
N orchestrator replicas taking matches from the shared Redis queue. N goes 1, 2, 4, then
4, 2, 1 in the next round, so machine drift hits every N alike. On a machine with two
cores, more processes cannot add CPU: the curve says how much the arena gains from
spreading its work over both cores and what extra replicas then cost. The goal (issue 23):
with 4 replicas of each, the arena's CPU per match (orchestrators, attacker, defenders; not
the model server) is at most 1.1x that of one, so replicas add no overhead of their own
(polling, heartbeats, pools) and add capacity where there are cores for them.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from arena.local_services import LOOPBACK, free_port
from bench.campaign import CONCURRENCY, MODEL_LATENCY_MS, TURNS, CampaignRun, play
from bench.harness import BENCH_DIR, BenchError, Service, Stack, stack
from bench.scenario import BenchOptions, Outcome

REPLICAS = (1, 2, 4)
CPU_RATIO_GOAL = 1.1
"""Arena CPU per match with the most replicas, at most this many times that with one."""


def _proxy(listen: int, upstreams: list[int]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and script
        [sys.executable, str(BENCH_DIR / "rr_proxy.py"), str(listen), *map(str, upstreams)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(f"http://{LOOPBACK}:{listen}/healthz", timeout=1).raise_for_status()
            return process
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                process.kill()
                raise BenchError("the round-robin proxy did not start") from None
            time.sleep(0.1)


def _measure(replicas: int, matches: int, name: str) -> CampaignRun:
    with stack() as bench:
        assert bench.redis is not None
        model = bench.start_scripted_model("model", MODEL_LATENCY_MS)
        front = free_port()
        processes: dict[str, Service] = {"model": model}
        for index in range(replicas):
            processes[f"defender-{index}"] = bench.start_defender(
                f"defender-{index}", model, ARENA_PUBLIC_URL=f"http://{LOOPBACK}:{front}"
            )
        upstreams = [int(processes[f"defender-{i}"].url.rsplit(":", 1)[1]) for i in range(replicas)]
        proxy = _proxy(front, upstreams)
        try:
            attacker = bench.start(
                "attacker",
                "attacker",
                bench.base_env(ARENA_REDIS_URL=bench.redis.url, ARENA_MODEL_BASE_URL=f"{model.url}/v1"),
            )
            processes["attacker"] = attacker
            for index in range(replicas):
                processes[f"orchestrator-{index}"] = _orchestrator(bench, attacker, index)
            url = processes["orchestrator-0"].url
            play(url, f"http://{LOOPBACK}:{front}", 20, processes, "warm-up")
            return play(url, f"http://{LOOPBACK}:{front}", matches, processes, name)
        finally:
            proxy.kill()
            proxy.wait()


def _orchestrator(bench: Stack, attacker: Service, index: int) -> Service:
    assert bench.redis is not None
    return bench.start(
        "orchestrator",
        f"orchestrator-{index}",
        bench.base_env(
            ARENA_REDIS_URL=bench.redis.url,
            ARENA_ATTACKER_URL=attacker.url,
            ARENA_ORCHESTRATOR_CONCURRENCY=str(CONCURRENCY),
        ),
    )


def run(options: BenchOptions) -> Outcome:
    matches = options.scale(300, 40)
    results: dict[int, list[CampaignRun]] = {n: [] for n in REPLICAS}
    for round_index in range(options.rounds):
        order = REPLICAS if round_index % 2 == 0 else tuple(reversed(REPLICAS))
        for replicas in order:
            results[replicas].append(_measure(replicas, matches, f"scale-{replicas}-{round_index}"))
    rate = {n: max(run.matches / run.wall_s for run in runs) for n, runs in results.items()}
    base = rate[REPLICAS[0]]
    curve = ", ".join(f"{n}: {rate[n]:.1f} matches/s ({rate[n] / base:.2f}x)" for n in REPLICAS)
    cpu = {
        n: {label: sum(run.cpu_s[label] for run in runs) / len(runs) for label in runs[0].cpu_s}
        for n, runs in results.items()
    }
    busy = {n: max(sum(run.cpu_s.values()) / run.wall_s for run in runs) for n, runs in results.items()}
    cpu_per_match = {n: min(run.arena_cpu_ms_per_match for run in runs) for n, runs in results.items()}
    most = REPLICAS[-1]
    cpu_ratio = cpu_per_match[most] / cpu_per_match[REPLICAS[0]]
    met = cpu_ratio <= CPU_RATIO_GOAL
    explanation = (
        "arena processes kept "
        + ", ".join(f"{busy[n]:.1f}" for n in REPLICAS)
        + " of the machine's cores busy and spent "
        + ", ".join(f"{cpu_per_match[n]:.0f}" for n in REPLICAS)
        + f" ms of CPU per match with {', '.join(map(str, REPLICAS))} replicas "
        + f"({most} replicas: {cpu_ratio:.2f}x the CPU per match of one"
        + (f", goal {CPU_RATIO_GOAL}x" if met else f", missing {CPU_RATIO_GOAL}x")
        + "); on two cores the work is CPU-bound and one replica of each already spreads it over "
        "both, so more replicas cannot add matches per second here, only their own overhead"
    )
    return Outcome(
        id="scaling",
        title="Scaling: defender replicas and orchestrator workers",
        goal=(
            f"arena CPU per match with {most} replicas <= {CPU_RATIO_GOAL}x that of one; "
            "report the curve for 1, 2, 4 replicas"
        ),
        measured=f"{curve}; CPU per match {cpu_ratio:.2f}x",
        met=met,
        explanation=explanation,
        details={
            "matches": matches,
            "turns": TURNS,
            "concurrency": CONCURRENCY,
            "matches_per_s": rate,
            "arena_cpu_ms_per_match": cpu_per_match,
            "cpu_s_per_process": cpu,
            "runs": {n: [run.as_dict() for run in runs] for n, runs in results.items()},
        },
    )
