"""The images' entry points (arena-defender, arena-attacker, arena-orchestrator, arena-model).

Started as the Dockerfiles and compose.yaml start them; bad input ends with one line and a
non-zero exit code, never a traceback. tests/system/test_compose_topology.py runs them for real.
``arena serve <name>`` runs the same runner (``arena_<name>.main.RUNNER``), so it refuses the same
settings; the other system tests start every service that way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.processes import clean_env

pytestmark = pytest.mark.system

BIN = Path(sys.executable).parent
SERVICES = ("defender", "attacker", "orchestrator", "model")


def run(service: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_command([str(BIN / f"arena-{service}"), *args], **env)


def run_command(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env=clean_env(**env),
    )


@pytest.mark.parametrize("service", SERVICES)
def test_help_names_the_options(service: str) -> None:
    done = run(service, "--help")
    assert done.returncode == 0, done.stderr
    assert f"usage: arena-{service}" in done.stdout
    assert "--host" in done.stdout and "--port" in done.stdout and "ARENA_*" in done.stdout


@pytest.mark.parametrize("service", SERVICES)
def test_a_bad_port_is_refused(service: str) -> None:
    done = run(service, "--port", "70000")
    assert done.returncode == 2
    assert "port must be 0-65535" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("service", SERVICES)
def test_bad_settings_are_refused_by_name(service: str) -> None:
    done = run(service, ARENA_HISTORY_MAX_MESSAGES="many")
    assert done.returncode == 2, done.stderr
    expected = f"arena-{service}: error: invalid settings: ARENA_HISTORY_MAX_MESSAGES"
    assert done.stderr.strip().startswith(expected)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("service", SERVICES)
def test_arena_serve_refuses_bad_settings_by_name_too(service: str) -> None:
    done = run_command([sys.executable, "-m", "arena", "serve", service], ARENA_HISTORY_MAX_MESSAGES="many")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().startswith("error: invalid settings: ARENA_HISTORY_MAX_MESSAGES")
    assert "Traceback" not in done.stderr
