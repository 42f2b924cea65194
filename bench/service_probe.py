"""Run an arena service exactly as its image does, with a garbage-collector probe.

``python bench/service_probe.py KIND --host H --port P`` installs a ``gc.callbacks`` hook, then
calls the service's console-script entry point (``arena_<kind>.main``), so the service
is the same code with the same settings as in production. Every collection's pause is
recorded with its end time on the monotonic clock (shared by every process on Linux);
twice a second the probe appends the pauses recorded since, one ``end_s pause_s generation``
line each, to the file named by ``BENCH_GC_FILE``, so the benchmark can pick the pauses inside
its load window. (It once rewrote every pause so far as JSON each time: 2% of a busy
service's CPU by the end of a campaign, charged to the service.)

With ``BENCH_TRACEMALLOC`` set to a path, the first ``SIGUSR1`` starts tracing allocations
(20 frames; tracing from start-up would slow it past the readiness wait) and every later one
writes the 40 biggest allocation sites since by traceback (size and count) to ``PATH.N`` (N
counting up): how the orchestrator's memory was read during a campaign
(docs/performance.md). Tracing slows the service; never in a timed run.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time
import tracemalloc
from types import FrameType
from typing import Any

from arena_attacker import main as attacker
from arena_defender import main as defender
from arena_model import main as model
from arena_orchestrator import main as orchestrator

_pauses: list[tuple[float, float, int]] = []
_started = [0.0]
_MAX_PAUSES = 500_000


def _on_gc(phase: str, info: dict[str, Any]) -> None:
    now = time.monotonic()
    if phase == "start":
        _started[0] = now
    elif len(_pauses) < _MAX_PAUSES:
        _pauses.append((now, now - _started[0], int(info["generation"])))


def _writer(path: str) -> None:
    written = 0
    while True:
        time.sleep(0.5)
        new = _pauses[written:]
        if not new:
            continue
        with open(path, "a", encoding="utf-8") as handle:
            handle.writelines(f"{end!r} {pause!r} {generation}\n" for end, pause, generation in new)
        written += len(new)


def _tracemalloc_on_signal(path: str) -> None:
    written = [0]

    def dump(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        if not tracemalloc.is_tracing():
            tracemalloc.start(20)
            return
        snapshot = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        stats = snapshot.statistics("traceback")
        total = sum(stat.size for stat in stats)
        written[0] += 1
        with open(f"{path}.{written[0]}", "w", encoding="utf-8") as handle:
            handle.write(f"total {total / 2**20:.1f} MiB traced in {len(stats)} sites\n")
            for stat in stats[:40]:
                handle.write(f"\n{stat.size / 2**20:.2f} MiB in {stat.count} blocks\n")
                for line in stat.traceback.format()[-24:]:
                    handle.write(f"  {line}\n")

    signal.signal(signal.SIGUSR1, dump)


def main() -> None:
    kind, argv = sys.argv[1], sys.argv[2:]
    gc.callbacks.append(_on_gc)
    path = os.environ.get("BENCH_GC_FILE")
    if path:
        threading.Thread(target=_writer, args=(path,), daemon=True).start()
    traced = os.environ.get("BENCH_TRACEMALLOC")
    if traced:
        _tracemalloc_on_signal(traced)
    entry = {
        "defender": defender.main,
        "attacker": attacker.main,
        "orchestrator": orchestrator.main,
        "model": model.main,
    }[kind]
    entry(argv)


if __name__ == "__main__":
    main()
