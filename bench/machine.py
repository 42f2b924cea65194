"""Names the machine a benchmark ran on: CPU, cores, memory, kernel, Python."""

from __future__ import annotations

import os
import platform
import socket
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


def one_line(machine: dict[str, Any]) -> str:
    return (
        f"{machine['cpu']}, {machine['usable_cores']} usable cores, {machine['memory_gib']} GiB, "
        f"{machine['kernel']} ({machine['machine']}), Python {machine['python']}, host {machine['host']}"
    )
