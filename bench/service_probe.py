"""Run an arena service exactly as its image does, with a garbage-collector probe.

``python bench/service_probe.py KIND --host H --port P`` installs a ``gc.callbacks`` hook, then
calls the service's console-script entry point (``arena_<kind>.main``), so the service
is the same code with the same settings as in production. Every collection's pause is
recorded with its end time on the monotonic clock (shared by every process on Linux);
twice a second the probe writes ``{"pauses": [[end_s, pause_s, generation], ...]}`` to the
file named by ``BENCH_GC_FILE``, so the benchmark can pick the pauses inside its load window.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
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
    while True:
        time.sleep(0.5)
        temporary = f"{path}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"pauses": list(_pauses)}, handle)
        os.replace(temporary, path)


def main() -> None:
    kind, argv = sys.argv[1], sys.argv[2:]
    gc.callbacks.append(_on_gc)
    path = os.environ.get("BENCH_GC_FILE")
    if path:
        threading.Thread(target=_writer, args=(path,), daemon=True).start()
    entry = {
        "defender": defender.main,
        "attacker": attacker.main,
        "orchestrator": orchestrator.main,
        "model": model.main,
    }[kind]
    entry(argv)


if __name__ == "__main__":
    main()
