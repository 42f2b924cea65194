"""Helpers for system tests: real processes on loopback, run like a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from arena.local_services import free_port

TESTS_DIR = Path(__file__).resolve().parent.parent


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without ARENA_* leaks, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
    env["PYTHONUNBUFFERED"] = "1"
    env["COLUMNS"] = "120"
    env.update(extra)
    return env


def default_sigint() -> None:
    """``preexec_fn`` of a child a test interrupts: SIGINT back to its default disposition.

    A runner started in the background by a non-interactive shell (``cmd &``, ``nohup``)
    ignores SIGINT, and its children inherit that: Python then installs no KeyboardInterrupt
    handler and asyncio none of its own, so Ctrl-C is lost and the CLI's SIGTERM handling
    (which raises KeyboardInterrupt) leaves a traceback. Tests of interruption restore it.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignore_sigint() -> None:
    """``preexec_fn`` of a child started as a background job of a non-interactive shell
    (``cmd &``, ``nohup``) would be: SIGINT ignored. SIGTERM must still stop it cleanly."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def interrupt_when(
    process: subprocess.Popen[str], ready: Callable[[], bool], *, signal_number: int, timeout_s: float
) -> str:
    """Wait until ``ready()`` while ``process`` runs, then send it ``signal_number``; return its output.

    Fails when the process ends first or ``ready()`` stays false for ``timeout_s``; the process
    is killed if it does not end within two minutes of the signal (or on any failure).
    """
    try:
        deadline = time.monotonic() + timeout_s
        while not ready():
            assert process.poll() is None, "the process ended before it was interrupted"
            assert time.monotonic() < deadline, f"not ready to be interrupted within {timeout_s:.0f} s"
            time.sleep(0.2)
        process.send_signal(signal_number)
        output, _ = process.communicate(timeout=120)
        return output or ""
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def run_arena(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the ``arena`` CLI to completion and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "arena", *args],
        capture_output=True,
        text=True,
        env=dict(env or clean_env()),
        timeout=timeout_s,
        cwd=cwd,
        check=False,
    )


def wait_until_ready(
    url: str, process: subprocess.Popen[bytes] | None = None, timeout_s: float = 60.0
) -> None:
    """Poll ``url`` until it answers 200, failing early if ``process`` dies."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise AssertionError(f"process for {url} exited with {process.returncode}")
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
    raise AssertionError(f"{url} not ready after {timeout_s} s")


@contextmanager
def minimal_agent(*, comply: bool) -> Iterator[str]:
    """Run tests/support/minimal_agent.py as its own process; yield its URL."""
    with support_agent("support.minimal_agent", MINIMAL_AGENT_MODE="comply" if comply else "refuse") as url:
        yield url


@contextmanager
def support_agent(module: str, **env: str) -> Iterator[str]:
    """Run an agent of tests/support (``python -m MODULE PORT``) as its own process with ``env``
    added to a clean environment; yield its URL once its card answers."""
    port = free_port()
    full_env = clean_env(**env)
    full_env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), full_env.get("PYTHONPATH", "")])
    process = subprocess.Popen(
        [sys.executable, "-m", module, str(port)],
        env=full_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{url}/.well-known/agent-card.json", process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def port_is_closed(url: str) -> bool:
    """True when nothing accepts connections at ``url`` any more."""
    try:
        httpx.get(url, timeout=1.0)
    except httpx.ConnectError:
        return True
    except httpx.HTTPError:
        return False
    return False
