"""Start arena services as local child processes and clean them up.

``arena demo`` runs the model, defender and attacker as separate processes on
free loopback ports, exactly as they would run on separate hosts, talking A2A
and HTTP to each other. Each child gets its own process group and log file;
:class:`LocalServices` stops every child (SIGTERM, then SIGKILL) when it
exits, whether the demo ended normally, failed or was interrupted.

SIGTERM is a graceful stop: a service gives the work it has in flight up to its
``ARENA_SHUTDOWN_GRACE_S`` and exits 0. So the SIGKILL comes only after the
longest grace among the children plus :data:`STOP_MARGIN_S` (unless the caller
of :meth:`LocalServices.stop_all` gives a deadline of its own). Children with
nothing in flight exit at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from arena_core.errors import ArenaError

LOOPBACK = "127.0.0.1"
DEFAULT_SHUTDOWN_GRACE_S = 25.0
"""A child's grace when its environment does not set ``ARENA_SHUTDOWN_GRACE_S`` (the settings' default)."""
MAX_SHUTDOWN_GRACE_S = 3600.0
STOP_MARGIN_S = 5.0
"""After a child's grace: time to hand work back and exit before it is killed."""


class ServiceStartError(ArenaError):
    """A child service exited or never became ready."""

    kind = "service_start_failed"
    exit_code = 5


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago (the child binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@dataclass(slots=True)
class ServiceProcess:
    """One running child service."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path
    shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S
    """The child's ``ARENA_SHUTDOWN_GRACE_S``: how long it may take to stop after SIGTERM."""

    def log_tail(self, lines: int = 15) -> str:
        """The last lines the child wrote, for error messages."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class LocalServices:
    """Context manager owning the child services of one run."""

    def __init__(self, log_dir: Path, *, env: Mapping[str, str] | None = None) -> None:
        self._log_dir = log_dir
        self._env = dict(os.environ if env is None else env)
        self.services: list[ServiceProcess] = []

    def __enter__(self) -> LocalServices:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop_all()

    def start(
        self,
        kind: str,
        *,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        port: int | None = None,
        launcher: Sequence[str] | None = None,
    ) -> ServiceProcess:
        """Start ``arena serve KIND`` on ``port`` (default: a free loopback port).

        ``name`` tells replicas apart: it names the log file (default: ``KIND``).
        ``launcher`` replaces ``python -m arena serve`` (the benchmarks' GC probe); it is
        given ``KIND --host ... --port ...`` like the ``arena-<kind>`` entry points.
        """
        port = port or free_port()
        self._log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self._log_dir / f"{name or kind}.log"
        inherited = dict(self._env)
        inherited.pop("ARENA_PUBLIC_URL", None)  # a parent's own URL is never a child's
        child_env = {**inherited, **(env or {}), "PYTHONUNBUFFERED": "1"}
        command = [
            *(launcher or (sys.executable, "-m", "arena", "serve")),
            kind,
            "--host",
            LOOPBACK,
            "--port",
            str(port),
            *extra_args,
        ]
        with log_path.open("ab") as log:
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_env,
                start_new_session=True,
            )
        service = ServiceProcess(
            name or kind, f"http://{LOOPBACK}:{port}", process, log_path, shutdown_grace_for(child_env)
        )
        self.services.append(service)
        return service

    def wait_ready(
        self,
        service: ServiceProcess,
        *,
        timeout_s: float,
        on_wait: Callable[[float], None] | None = None,
    ) -> None:
        """Poll ``/readyz`` until it answers 200; fail fast if the child dies."""
        deadline = time.monotonic() + timeout_s
        started = time.monotonic()
        with httpx.Client(timeout=2.0) as client:
            while True:
                code = service.process.poll()
                if code is not None:
                    raise ServiceStartError(
                        f"the {service.name} service exited with code {code} while starting; "
                        f"its log ({service.log_path}) ends with:\n{service.log_tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{service.url}/readyz").status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise ServiceStartError(
                        f"the {service.name} service was not ready after {timeout_s:g} s; "
                        f"its log ({service.log_path}) ends with:\n{service.log_tail()}"
                    )
                if on_wait is not None:
                    on_wait(time.monotonic() - started)
                time.sleep(0.2)

    def stop_all(self, *, grace_s: float | None = None) -> None:
        """Stop every child: SIGTERM to its process group, SIGKILL after ``grace_s``.

        ``grace_s`` None: the longest ``shutdown_grace_s`` of the children plus
        :data:`STOP_MARGIN_S`, so that none is killed while it finishes or hands back its work.
        """
        for service in self.services:
            _signal_group(service.process, signal.SIGTERM)
        if grace_s is None:
            grace_s = max((s.shutdown_grace_s for s in self.services), default=0.0) + STOP_MARGIN_S
        deadline = time.monotonic() + grace_s
        for service in self.services:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                service.process.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                _signal_group(service.process, signal.SIGKILL)
                service.process.wait()
        self.services.clear()


def shutdown_grace_for(env: Mapping[str, str]) -> float:
    """A child's ``ARENA_SHUTDOWN_GRACE_S`` from its environment (the default when unset or unreadable)."""
    raw = env.get("ARENA_SHUTDOWN_GRACE_S", "").strip()
    try:
        grace = float(raw) if raw else DEFAULT_SHUTDOWN_GRACE_S
    except ValueError:
        return DEFAULT_SHUTDOWN_GRACE_S  # the child refuses to start with it anyway
    return grace if 0 <= grace <= MAX_SHUTDOWN_GRACE_S else DEFAULT_SHUTDOWN_GRACE_S


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


__all__ = [
    "DEFAULT_SHUTDOWN_GRACE_S",
    "LOOPBACK",
    "STOP_MARGIN_S",
    "LocalServices",
    "ServiceProcess",
    "ServiceStartError",
    "free_port",
    "shutdown_grace_for",
]
