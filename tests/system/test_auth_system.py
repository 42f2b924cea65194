"""Authentication between real processes: every hop of the arena with ARENA_API_TOKENS on.

A scripted model, a defender, an attacker and an orchestrator, each `arena serve` on
loopback with the same ARENA_API_TOKENS, two named callers (``ops:...,ci:...``). The CLI
reaches the orchestrator with ARENA_ORCHESTRATOR_TOKEN, the orchestrator the attacker with the
token of the first entry of its ARENA_API_TOKENS (never its ``ops:``), the attacker the defender
with the campaign's ARENA_TARGET_TOKEN_ARENA. Without the right token each hop fails with a
reason and an exit code, never a traceback; one caller's task is unknown to the other.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from arena.local_services import LocalServices
from support.processes import clean_env, run_arena

pytestmark = pytest.mark.system

TOKEN = "system-token-0123456789abcdef"
OTHER = "another-token-0123456789abcdef"
READ = "system-read-0123456789abcdef"
TARGET_VAR = "ARENA_TARGET_TOKEN_ARENA"


@dataclass(frozen=True)
class Protected:
    model: str
    defender: str
    attacker: str
    orchestrator: str


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Protected]:
    log_dir = tmp_path_factory.mktemp("auth-logs")
    with LocalServices(log_dir, env=clean_env()) as services:
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "obey"])
        services.wait_ready(model, timeout_s=60)
        env = {
            "ARENA_MODEL_BASE_URL": f"{model.url}/v1",
            "ARENA_API_TOKENS": f"ops:{TOKEN},ci:{OTHER}",
            "ARENA_API_READ_TOKENS": f"ops:{READ}",
        }
        defender = services.start("defender", env=env)
        attacker = services.start("attacker", env={**env, TARGET_VAR: TOKEN})
        services.wait_ready(defender, timeout_s=60)
        services.wait_ready(attacker, timeout_s=60)
        orchestrator = services.start("orchestrator", env={**env, "ARENA_ATTACKER_URL": attacker.url})
        services.wait_ready(orchestrator, timeout_s=60)
        yield Protected(model.url, defender.url, attacker.url, orchestrator.url)


def _spec(tmp_path: Path, protected: Protected, *, credentials: bool) -> Path:
    defender: dict[str, object] = {"name": "arena", "url": protected.defender}
    if credentials:
        defender["credentials"] = {"bearer_token_env": TARGET_VAR}
    spec = {
        "name": "auth",
        "attackers": [{"strategy": "playbook"}],
        "defenders": [defender],
        "objectives": [{"name": "give-up", "phrase": "I Give Up"}],
        "repetitions": 2,
        "max_turns": 6,
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_every_agent_endpoint_refuses_a_request_without_a_token(protected: Protected) -> None:
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}
    for url in (protected.defender, protected.attacker):
        card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=10)
        assert card.status_code == 200
        assert "bearer" in card.json()["securitySchemes"]
        refused = httpx.post(f"{url}/", json=rpc, headers={"A2A-Version": "1.0"}, timeout=10)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Bearer")
    checked = run_arena(["card", protected.defender, "--strict"])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "valid A2A 1.0 agent card" in checked.stdout
    listing = httpx.get(f"{protected.orchestrator}/v1/campaigns", timeout=10)
    assert listing.status_code == 401
    read = httpx.get(
        f"{protected.orchestrator}/v1/campaigns", headers={"Authorization": f"Bearer {READ}"}, timeout=10
    )
    assert read.status_code == 200


def test_one_callers_task_is_unknown_to_the_other(protected: Protected) -> None:
    message = {"messageId": "m-ci", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    headers = {"A2A-Version": "1.0"}
    sent = httpx.post(
        f"{protected.defender}/",
        json=send,
        headers={**headers, "Authorization": f"Bearer {OTHER}"},
        timeout=30,
    )
    task_id = sent.json()["result"]["task"]["id"]
    get = {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
    answers = {
        token: httpx.post(
            f"{protected.defender}/",
            json=get,
            headers={**headers, "Authorization": f"Bearer {token}"},
            timeout=10,
        ).json()
        for token in (OTHER, TOKEN)
    }
    assert answers[OTHER]["result"]["id"] == task_id
    assert answers[TOKEN]["error"]["code"] == -32001  # TaskNotFound: ops cannot see ci's task


def test_arena_match_sends_the_named_token_to_a_protected_target(protected: Protected) -> None:
    env = clean_env(**{TARGET_VAR: TOKEN})
    bare = run_arena(["match", "--target", protected.defender, "--max-turns", "6"], env=env)
    assert bare.returncode != 0
    assert "Traceback" not in bare.stderr + bare.stdout
    assert "credentials" in bare.stdout + bare.stderr
    assert TOKEN not in bare.stdout + bare.stderr
    done = run_arena(
        ["match", "--target", protected.defender, "--max-turns", "6", "--token-env", TARGET_VAR, "--json"],
        env=env,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "attacker_won"
    assert TOKEN not in done.stdout + done.stderr


def test_arena_match_through_the_protected_attacker(protected: Protected) -> None:
    args = ["match", "--target", protected.defender, "--attacker", protected.attacker, "--max-turns", "6"]
    args += ["--token-env", TARGET_VAR, "--json"]
    refused = run_arena(args)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr
    assert "ARENA_ATTACKER_TOKEN" in refused.stderr + refused.stdout
    done = run_arena(args, env=clean_env(ARENA_ATTACKER_TOKEN=TOKEN))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "attacker_won"


def test_a_campaign_runs_through_every_protected_hop(protected: Protected, tmp_path: Path) -> None:
    spec = _spec(tmp_path, protected, credentials=True)
    run = ["campaign", "run", str(spec), "--orchestrator", protected.orchestrator, "--wait"]
    refused = run_arena(run)
    assert refused.returncode == 2
    assert "ARENA_ORCHESTRATOR_TOKEN" in refused.stderr + refused.stdout
    assert "Traceback" not in refused.stderr
    read_only = run_arena(run, env=clean_env(ARENA_ORCHESTRATOR_TOKEN=READ))
    assert read_only.returncode == 2
    assert "read-only" in read_only.stderr + read_only.stdout
    done = run_arena([*run, "--out", str(tmp_path / "out")], env=clean_env(ARENA_ORCHESTRATOR_TOKEN=TOKEN))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    counts = report["progress"]["counts"]
    # Every match played through every hop: none failed for want of a token.
    assert counts["error"] == 0, counts
    assert counts["attacker_won"] + counts["defended"] == 2, counts
    assert TOKEN not in json.dumps(report)


def test_a_campaign_without_target_credentials_ends_in_errors_not_defences(
    protected: Protected, tmp_path: Path
) -> None:
    spec = _spec(tmp_path, protected, credentials=False)
    out = tmp_path / "out"
    done = run_arena(
        ["campaign", "run", str(spec), "--orchestrator", protected.orchestrator, "--wait", "--out", str(out)],
        env=clean_env(ARENA_ORCHESTRATOR_TOKEN=TOKEN),
    )
    assert "Traceback" not in done.stderr
    report = json.loads((out / "report.json").read_text())
    counts = report["progress"]["counts"]
    assert counts["error"] == 2 and counts["defended"] == 0, counts
    assert {m["error_kind"] for m in report["matches"]} == {"target_unauthorized"}
