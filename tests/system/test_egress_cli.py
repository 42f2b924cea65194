"""The SSRF guard with real processes: `arena match` and the attacker service refuse a target
outside ARENA_TARGET_ALLOWLIST before any connection, with one clear line."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.local_services import LocalServices
from support.processes import clean_env, run_arena

pytestmark = pytest.mark.system


class CountingListener:
    """A TCP listener on 127.0.0.2 that never answers; counts the connections made to it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.2", 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.url = f"http://127.0.0.2:{self.sock.getsockname()[1]}"
        self._count = 0

    def connections(self) -> int:
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return self._count
            conn.close()
            self._count += 1


@pytest.fixture
def listener() -> Iterator[CountingListener]:
    outside = CountingListener()
    yield outside
    outside.sock.close()


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def test_match_in_process_refuses_a_target_outside_the_allowlist(listener: CountingListener) -> None:
    env = clean_env(ARENA_TARGET_ALLOWLIST="127.0.0.1")
    done = run_arena(["match", "--target", listener.url, "--max-turns", "3"], env=env)
    assert done.returncode == 2, done.stderr
    # Besides the attacker's own INFO log of the match, one line says what happened.
    lines = [line for line in _error_lines(done.stderr) if " INFO " not in line]
    assert lines == [
        f"error: refused to connect to {listener.url} (the target): 127.0.0.2 is not on the target "
        "allowlist (ARENA_TARGET_ALLOWLIST=127.0.0.1)"
    ], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert listener.connections() == 0


def test_match_json_reports_the_kind(listener: CountingListener) -> None:
    env = clean_env(ARENA_TARGET_ALLOWLIST="localhost, 10.0.0.0/8")
    done = run_arena(["match", "--target", listener.url, "--json"], env=env)
    assert done.returncode == 2, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "error"
    assert result["error_kind"] == "target_not_allowed"
    assert listener.connections() == 0


def test_a_bad_allowlist_is_a_settings_error() -> None:
    done = run_arena(
        ["match", "--target", "http://127.0.0.1:9"], env=clean_env(ARENA_TARGET_ALLOWLIST="http://x")
    )
    assert done.returncode == 2
    assert "ARENA_TARGET_ALLOWLIST" in done.stderr and "'http://x'" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_attacker_service_refuses_and_fails_the_task(listener: CountingListener, tmp_path: Path) -> None:
    with LocalServices(tmp_path, env=clean_env()) as services:
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "obey"])
        services.wait_ready(model, timeout_s=60)
        attacker = services.start(
            "attacker", env={"ARENA_MODEL_BASE_URL": f"{model.url}/v1", "ARENA_TARGET_ALLOWLIST": "127.0.0.1"}
        )
        services.wait_ready(attacker, timeout_s=60)
        done = run_arena(["match", "--target", listener.url, "--attacker", attacker.url, "--json"])
    assert done.returncode == 2, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "error"
    assert result["error_kind"] == "target_not_allowed"
    assert "127.0.0.2 is not on the target allowlist" in result["error"]
    assert listener.connections() == 0
