"""The probes against the arena's own agents: no finding of medium severity or above.

A scripted model, a defender (in memory, and one on a real redis-server), an attacker and an
orchestrator, each `arena serve` on loopback with two named callers in ARENA_API_TOKENS. The
probes run as both callers (the isolation checks need two), every category, through the
real CLI for the defender (what a user runs) and through the library for the others. The
orchestrator is an A2A client only: it serves no agent card, which the probe reports as
nothing to probe (exit 3), and the attacker's own ``probe`` skill is driven once over A2A.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from arena.local_services import LocalServices
from arena_core.probes.base import ProbeOptions
from arena_core.probes.model import ProbeReport, Severity
from arena_core.probes.runner import run_probes
from support.processes import clean_env, run_arena
from support.redis_server import RedisServer

pytestmark = pytest.mark.system

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef0"
TOKENS = f"alice:{ALICE},bob:{BOB}"
TARGET_VAR = "ARENA_TARGET_TOKEN_SELF"
SECOND_VAR = "ARENA_TARGET_TOKEN_SELF_SECOND"
# Polite but quick: the agents answer a probe turn with a scripted model in milliseconds.
OPTIONS = ProbeOptions(wait_s=2.0, stream_grace_s=2.0, rate_per_s=50, concurrent_tasks=5)


@dataclass(frozen=True)
class Arena:
    defender: str
    redis_defender: str
    attacker: str
    orchestrator: str


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Iterator[Arena]:
    log_dir = tmp_path_factory.mktemp("self-check-logs")
    with LocalServices(log_dir, env=clean_env()) as services:
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "refuse"])
        services.wait_ready(model, timeout_s=60)
        env = {"ARENA_MODEL_BASE_URL": f"{model.url}/v1", "ARENA_API_TOKENS": TOKENS}
        defender = services.start("defender", env=env)
        redis_env = {
            **env,
            "ARENA_REDIS_URL": redis_server.url,
            "ARENA_REDIS_NAMESPACE": f"self-{uuid.uuid4().hex[:8]}",
        }
        redis_defender = services.start("defender", env=redis_env, name="redis-defender")
        attacker = services.start("attacker", env={**env, TARGET_VAR: ALICE, SECOND_VAR: BOB})
        for service in (defender, redis_defender, attacker):
            services.wait_ready(service, timeout_s=60)
        orchestrator = services.start("orchestrator", env={**env, "ARENA_ATTACKER_URL": attacker.url})
        services.wait_ready(orchestrator, timeout_s=60)
        yield Arena(defender.url, redis_defender.url, attacker.url, orchestrator.url)


def _serious(report: ProbeReport) -> list[str]:
    problems = [
        f"{finding.check_id} ({finding.severity.value}): {finding.detail}"
        for finding in report.findings
        if finding.severity >= Severity.MEDIUM
    ]
    problems += [f"{result.check_id} errored: {result.reason}" for result in report.errored()]
    return problems


def _probe(url: str) -> ProbeReport:
    return asyncio.run(run_probes(url, OPTIONS, token=ALICE, second_token=BOB))


def test_the_cli_finds_nothing_serious_in_the_defender(arena: Arena, tmp_path: Path) -> None:
    out = tmp_path / "defender.json"
    env = clean_env(PROBE_TOKEN_A=ALICE, PROBE_TOKEN_B=BOB)
    done = run_arena(
        [
            "probe",
            "--target",
            arena.defender,
            "--token-env",
            "PROBE_TOKEN_A",
            "--second-token-env",
            "PROBE_TOKEN_B",
            "--fail-on",
            "medium",
            "--wait",
            "2",
            "--rate",
            "50",
            "--concurrent-tasks",
            "5",
            "--out",
            str(out),
        ],
        env=env,
        timeout_s=300,
    )
    report = ProbeReport.model_validate_json(out.read_text())
    assert done.returncode == 0, (_serious(report), done.stdout[-3000:], done.stderr[-3000:])
    assert not _serious(report)
    # Every category looked at something: a self-check that skips everything proves nothing.
    ran = {result.category for result in report.results if result.status in ("passed", "failed")}
    assert {"card", "auth", "isolation", "input", "leaks"} <= ran, report.results
    assert ALICE not in out.read_text() and BOB not in out.read_text()


@pytest.mark.parametrize("which", ["redis_defender", "attacker"])
def test_the_probes_find_nothing_serious(arena: Arena, which: str) -> None:
    report = _probe(getattr(arena, which))
    assert not _serious(report)
    isolation = [r for r in report.results if r.category == "isolation"]
    assert isolation and all(r.status != "skipped" or "streaming" in (r.reason or "") for r in isolation), (
        isolation
    )


def test_the_orchestrator_serves_no_a2a_surface(arena: Arena) -> None:
    done = run_arena(["probe", "--target", arena.orchestrator], env=clean_env(), timeout_s=120)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no agent card" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_the_attackers_probe_skill_reports_over_a2a(arena: Arena) -> None:
    request = {
        "probe": {
            "target": arena.defender,
            "only": ["card", "auth"],
            "target_token_env": TARGET_VAR,
            "rate_per_s": 50,
        }
    }
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"data": request, "mediaType": "application/json"}],
    }
    envelope = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    answer = httpx.post(
        arena.attacker,
        json=envelope,
        headers={"A2A-Version": "1.0", "Authorization": f"Bearer {ALICE}"},
        timeout=120,
    )
    task = answer.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", json.dumps(task)[:2000]
    (artifact,) = [a for a in task["artifacts"] if a["name"] == "probe-report"]
    report = ProbeReport.model_validate(artifact["parts"][0]["data"])
    assert {r.category for r in report.results} == {"card", "auth"}
    assert not _serious(report)
    assert ALICE not in json.dumps(task)
