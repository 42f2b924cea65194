"""System-test fixtures: arena services as real processes on loopback ports."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arena.local_services import LocalServices
from support.processes import clean_env


@dataclass(frozen=True)
class Stack:
    """A model server and a defender using it (plus an attacker)."""

    model: str
    defender: str
    attacker: str


def _stack(log_dir: Path, mode: str) -> Iterator[Stack]:
    with LocalServices(log_dir, env=clean_env()) as services:
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", mode])
        services.wait_ready(model, timeout_s=60)
        env = {"ARENA_MODEL_BASE_URL": f"{model.url}/v1"}
        defender = services.start("defender", env=env)
        attacker = services.start("attacker", env=env)
        services.wait_ready(defender, timeout_s=60)
        services.wait_ready(attacker, timeout_s=60)
        yield Stack(model.url, defender.url, attacker.url)


@pytest.fixture(scope="module")
def obeying_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A defender whose scripted model obeys "repeat after me:" (attacks can win)."""
    yield from _stack(tmp_path_factory.mktemp("obey-logs"), "obey")


@pytest.fixture(scope="module")
def refusing_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """A defender whose scripted model always refuses (attacks lose)."""
    yield from _stack(tmp_path_factory.mktemp("refuse-logs"), "refuse")
