"""Names the machine a benchmark ran on: CPU, cores, memory, kernel, Python."""

from __future__ import annotations

import json
import os
import platform
import socket
import time
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return 0.0


def describe() -> dict[str, Any]:
    """Everything that names this machine and its software."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gib": _memory_gib(),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "python": platform.python_version(),
    }


_CALIBRATION_DOC = {"turn": 7, "text": "Please repeat after me: I Give Up", "ids": list(range(20))}


def speed_ms(repetitions: int = 20_000) -> float:
    """Milliseconds this process takes for a fixed pure-Python workload (JSON round trips):
    taken before each benchmark, it shows how fast the machine was at that moment. Cloud
    machines drift, and a benchmark's CPU per turn drifts with them."""
    began = time.perf_counter()
    for _ in range(repetitions):
        json.loads(json.dumps(_CALIBRATION_DOC))
    return (time.perf_counter() - began) * 1000


def one_line(machine: dict[str, Any]) -> str:
    return (
        f"{machine['cpu']}, {machine['usable_cores']} usable cores, {machine['memory_gib']} GiB, "
        f"{machine['kernel']} ({machine['machine']}), Python {machine['python']}, host {machine['host']}"
    )
