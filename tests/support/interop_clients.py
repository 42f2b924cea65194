"""Stock A2A clients, installed on first use and run against an agent like a user would run them.

``tools/install-interop-clients`` puts them in ``.tools/interop`` (pinned and hash-checked, no
root, once per machine): a2a-sdk 0.3 in a virtualenv of its own, and promptfoo with the Node 22 it
needs from npm. :func:`a2a_v03_python` and :func:`promptfoo_bin` install their part when needed
and raise :class:`InteropClientsUnavailableError` (a reason to skip) only when this machine cannot
have it or its registry is unreachable; any other install failure is a real failure.

:func:`converse` runs one of the conversation scripts in ``tests/support/interop/`` (a2a-sdk 0.3
in its virtualenv, a2a-sdk 1.x in the project's) and returns its transcripts;
:func:`run_promptfoo` runs ``promptfoo eval`` on a config and returns its results file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from support.env_example import REPO

INSTALL_SCRIPT = REPO / "tools" / "install-interop-clients"
SCRIPTS = Path(__file__).resolve().parent / "interop"
V03_SCRIPT = SCRIPTS / "a2a_v03_conversation.py"
V1_SCRIPT = SCRIPTS / "a2a_v1_conversation.py"

# tools/install-interop-clients: 2 = this machine cannot have the part, 3 = its registry is unreachable.
_UNAVAILABLE_CODES = (2, 3)
_INSTALL_TIMEOUT_S = 900.0


class InteropClientsUnavailableError(Exception):
    """This machine cannot have a stock client (no npm, no registry); the message says why."""


def _install(part: str) -> Path:
    """Run the installer for ``part`` (a no-op once installed); return the install folder."""
    done = subprocess.run(
        [str(INSTALL_SCRIPT), part], capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, check=False
    )
    if done.returncode in _UNAVAILABLE_CODES:
        raise InteropClientsUnavailableError(done.stderr.strip().splitlines()[-1])
    if done.returncode != 0:
        raise RuntimeError(f"tools/install-interop-clients {part} failed:\n{done.stdout}\n{done.stderr}")
    printed = subprocess.run([str(INSTALL_SCRIPT), "--print-dir"], capture_output=True, text=True, check=True)
    return Path(printed.stdout.strip())


@cache
def a2a_v03_python() -> Path:
    """The interpreter of the a2a-sdk 0.3 virtualenv, installing it first when needed."""
    python = _install("python") / "a2a-v03" / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"tools/install-interop-clients left no {python}")
    return python


@cache
def promptfoo_bin() -> Path:
    """The ``promptfoo`` launcher (on its pinned Node 22), installing both first when needed."""
    launcher = _install("node") / "bin" / "promptfoo"
    if not launcher.exists():
        raise RuntimeError(f"tools/install-interop-clients left no {launcher}")
    return launcher


def _run(
    command: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in its own process group; on a timeout, kill the whole group and fail.

    Loopback never goes through a proxy the environment may name.
    """
    child_env = dict(env)
    for name in ("NO_PROXY", "no_proxy"):
        child_env[name] = ",".join(filter(None, [child_env.get(name, ""), "127.0.0.1,localhost"]))
    process = subprocess.Popen(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        raise AssertionError(
            f"{' '.join(command[:3])} did not finish within {timeout_s:g} s:\n{stdout}\n{stderr}"
        ) from None
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def converse(
    python: Path | str,
    script: Path,
    url: str,
    turns: Sequence[str],
    *,
    variants: Sequence[str] = (),
    timeout_s: float = 120.0,
) -> list[dict[str, Any]]:
    """Run a conversation script with ``python`` against ``url``; return its transcripts.

    ``variants`` are ``BINDING/stream`` or ``BINDING/send`` (default: every binding both ways).
    """
    command = [str(python), str(script), url]
    for variant in variants:
        command += ["--variant", variant]
    for text in turns:
        command += ["--turn", text]
    # No PYTHONPATH: the 0.3 interpreter must see its own a2a-sdk, never the project's.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = _run(command, env=env, timeout_s=timeout_s)
    assert done.returncode == 0, f"{script.name} crashed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    transcripts: list[dict[str, Any]] = json.loads(done.stdout)
    return transcripts


def run_promptfoo(
    config: Path, work_dir: Path, *, timeout_s: float = 60.0
) -> tuple[int, dict[str, Any], str]:
    """``promptfoo eval -c config``, one test at a time, nothing cached, shared or phoned home.

    Returns the exit code (0: every test passed; 100: some failed), the results file and the
    console output.
    """
    results = work_dir / "results.json"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PROMPTFOO_", "NODE_", "ARENA_")) and key not in ("PYTHONPATH",)
    }
    env.update(
        PROMPTFOO_CONFIG_DIR=str(work_dir / "promptfoo-home"),
        PROMPTFOO_DISABLE_TELEMETRY="1",
        PROMPTFOO_DISABLE_UPDATE="1",
        PROMPTFOO_DISABLE_SHARING="1",
        NO_COLOR="1",
    )
    command = [
        str(promptfoo_bin()),
        "eval",
        "-c",
        str(config),
        "-o",
        str(results),
        "-j",
        "1",
        "--no-cache",
        "--no-write",
        "--no-table",
        "--no-progress-bar",
    ]
    done = _run(command, env=env, cwd=work_dir, timeout_s=timeout_s)
    output = done.stdout + done.stderr
    if not results.exists():
        raise AssertionError(f"promptfoo wrote no results (exit {done.returncode}):\n{output}")
    data: dict[str, Any] = json.loads(results.read_text())
    return done.returncode, data, output


__all__ = [
    "V03_SCRIPT",
    "V1_SCRIPT",
    "InteropClientsUnavailableError",
    "a2a_v03_python",
    "converse",
    "promptfoo_bin",
    "run_promptfoo",
]
