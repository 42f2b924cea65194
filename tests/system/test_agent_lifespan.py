"""Every service runs its ASGI lifespan, so its shutdown hooks run at SIGTERM.

Each service is a real process (``python -m arena serve KIND``), with the scripted model. uvicorn
logs "ASGI 'lifespan' protocol appears unsupported" when the app (or a middleware in front of it)
fails the lifespan scope; it then never runs the app's shutdown: the agents' state store, rate
limiter, match runner and model client were never closed. With the lifespan running, uvicorn logs
"Application shutdown complete." once the app's shutdown has returned without an error, and the
agents log the hooks they ran (:mod:`arena_core.a2a.agent_lifespan`).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from arena.local_services import LocalServices, ServiceProcess
from support.processes import clean_env

pytestmark = [pytest.mark.system, pytest.mark.timeout(180)]

UNSUPPORTED = "ASGI 'lifespan' protocol appears unsupported"
STARTED = "Application startup complete."
SHUT_DOWN = "Application shutdown complete."
STOP_TIMEOUT_S = 30.0
"""Nothing is in flight: each service stops at once; this only guards against a hang."""


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServices]:
    with LocalServices(tmp_path_factory.mktemp("lifespan-logs"), env=clean_env()) as started:
        yield started


@pytest.fixture(scope="module")
def model(services: LocalServices) -> ServiceProcess:
    """The scripted model the agents use (their readiness checks it)."""
    service = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "refuse"])
    services.wait_ready(service, timeout_s=60)
    return service


def _start(services: LocalServices, kind: str, **env: str) -> ServiceProcess:
    service = services.start(kind, name=f"{kind}-lifespan", env=env)
    services.wait_ready(service, timeout_s=60)
    log = service.log_path.read_text()
    assert UNSUPPORTED not in log, log
    assert STARTED in log, log
    return service


def _terminate(service: ServiceProcess) -> tuple[int, str]:
    """SIGTERM ``service``, wait for it to exit; its exit code and whole log."""
    os.kill(service.process.pid, signal.SIGTERM)
    code = service.process.wait(timeout=STOP_TIMEOUT_S)
    return code, Path(service.log_path).read_text()


@pytest.mark.parametrize(
    ("kind", "hooks"),
    [
        ("defender", ["ChatModel.aclose"]),
        ("attacker", ["RateLimiter.close", "MatchRunner.aclose"]),
    ],
)
def test_an_agent_runs_its_shutdown_hooks_at_sigterm(
    services: LocalServices, model: ServiceProcess, kind: str, hooks: list[str]
) -> None:
    agent = _start(services, kind, ARENA_MODEL_BASE_URL=f"{model.url}/v1")
    code, log = _terminate(agent)
    assert code == 0, log
    assert UNSUPPORTED not in log, log
    ran = [line for line in log.splitlines() if "shutdown hooks ran (" in line]
    assert len(ran) == 1, log
    assert ", 0 failed)" in ran[0], ran[0]
    for hook in hooks:
        assert hook in ran[0], ran[0]
    assert SHUT_DOWN in log, log


def test_the_orchestrator_runs_its_lifespan_shutdown_at_sigterm(
    services: LocalServices, model: ServiceProcess
) -> None:
    # No campaign is submitted: the attacker URL is never called.
    orchestrator = _start(services, "orchestrator", ARENA_ATTACKER_URL="http://127.0.0.1:9")
    code, log = _terminate(orchestrator)
    assert code == 0, log
    assert UNSUPPORTED not in log, log
    # Its lifespan stops the worker and closes the queue and the store: done without an error.
    assert SHUT_DOWN in log, log


def test_the_model_server_runs_its_lifespan_shutdown_at_sigterm(services: LocalServices) -> None:
    model = services.start(
        "model", name="model-lifespan", extra_args=["--engine", "scripted", "--scripted-mode", "echo"]
    )
    services.wait_ready(model, timeout_s=60)
    assert UNSUPPORTED not in model.log_path.read_text()
    code, log = _terminate(model)
    assert UNSUPPORTED not in log, log
    assert SHUT_DOWN in log, log
    # A graceful stop: the engine is closed and the process exits 0, not by the signal.
    assert "model engine closed" in log, log
    assert code == 0, log
