"""Services logging at DEBUG never write a token: real processes, their real log files.

At DEBUG, a2a-sdk's server logs each request's call context, ``Authorization`` header
included. A defender and an attacker run with ``ARENA_LOG_LEVEL=debug`` and tokens on; a
match is played through the attacker (which sends the target token to the defender), and
neither log file may hold a token, while both show that something was redacted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from arena.local_services import LocalServices, ServiceProcess
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.match_models import MatchRequest
from support.processes import clean_env

pytestmark = pytest.mark.system

TOKEN = "debug-log-token-0123456789abcdef"
TARGET_VAR = "ARENA_TARGET_TOKEN_ARENA"


@pytest.fixture
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServices]:
    with LocalServices(tmp_path_factory.mktemp("debug-logs"), env=clean_env()) as started:
        yield started


def test_debug_logs_hold_no_token(services: LocalServices) -> None:
    model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "obey"])
    services.wait_ready(model, timeout_s=60)
    env = {"ARENA_MODEL_BASE_URL": f"{model.url}/v1", "ARENA_API_TOKENS": TOKEN, "ARENA_LOG_LEVEL": "debug"}
    defender = services.start("defender", env=env)
    attacker = services.start("attacker", env={**env, TARGET_VAR: TOKEN})
    services.wait_ready(defender, timeout_s=60)
    services.wait_ready(attacker, timeout_s=60)
    request = MatchRequest.model_validate(
        {"target": defender.url, "max_turns": 6, "target_token_env": TARGET_VAR}
    )
    result = asyncio.run(play_remote_match(attacker.url, request, token=TOKEN, timeout_s=120))
    assert result.outcome in ("attacker_won", "defended"), result.error  # played, with the token

    logs: dict[str, str] = {}
    for service in (defender, attacker):
        logs[service.name] = _read(service)
    for name, text in logs.items():
        assert TOKEN not in text, f"{name} logged a token"
    # The check is not vacuous: the defender logged the request's headers, redacted.
    assert "[redacted]" in logs["defender"], logs["defender"][-3000:]


def _read(service: ServiceProcess) -> str:
    return service.log_path.read_text(encoding="utf-8", errors="replace")
