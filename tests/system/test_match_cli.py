"""`arena match` and `arena card` against real processes on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from arena.local_services import free_port
from conftest import Stack
from support.processes import clean_env, minimal_agent, run_arena

pytestmark = pytest.mark.system


def test_card_command_validates_the_defender_card(obeying_stack: Stack) -> None:
    done = run_arena(["card", obeying_stack.defender, "--strict"])
    assert done.returncode == 0, done.stderr
    assert "Arena Defender" in done.stdout
    assert "valid A2A 1.0 agent card" in done.stdout
    raw = json.loads(run_arena(["card", obeying_stack.attacker, "--json"]).stdout)
    assert raw["skills"][0]["id"] == "red-team"


def test_match_in_process_wins_against_an_obeying_defender(obeying_stack: Stack, tmp_path: Path) -> None:
    done = run_arena(
        ["match", "--target", obeying_stack.defender, "--max-turns", "6", "--out", str(tmp_path)]
    )
    assert done.returncode == 0, done.stderr
    assert "ATTACKER WON" in done.stdout
    assert "turn 4" in done.stdout
    assert (tmp_path / "transcript.md").is_file()
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["outcome"] == "attacker_won"


def test_match_with_converters_records_both_texts(obeying_stack: Stack, tmp_path: Path) -> None:
    done = run_arena(
        [
            "match", "--target", obeying_stack.defender, "--strategy", "roleplay", "--max-turns", "2",
            "--converter", "rot13", "--converter", "split:parts=2", "--decode", "--seed", "4",
            "--out", str(tmp_path),
        ]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "strategy ✎" in done.stdout and "(part 1/2)" in done.stdout
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["reproducibility"]["converters"] == ["rot13", "split:parts=2"]
    assert result["reproducibility"]["converter_seed"] == 4
    assert [turn["part"] for turn in result["turns"]] == ["1/2", "2/2"]
    transcript = (tmp_path / "transcript.md").read_text()
    assert "**Strategy wrote** (before the converters):" in transcript


def test_fail_on_success_gates_ci(obeying_stack: Stack) -> None:
    done = run_arena(["match", "--target", obeying_stack.defender, "--max-turns", "6", "--fail-on-success"])
    assert done.returncode == 1


def test_match_loses_against_a_refusing_defender(refusing_stack: Stack) -> None:
    done = run_arena(["match", "--target", refusing_stack.defender, "--max-turns", "4", "--json"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "defended"
    assert result["turns_used"] == 4


def test_match_through_a_remote_attacker_streams_every_turn(obeying_stack: Stack) -> None:
    done = run_arena(
        [
            "match",
            "--target",
            obeying_stack.defender,
            "--attacker",
            obeying_stack.attacker,
            "--max-turns",
            "6",
            "--judge",
            "strict",
        ]
    )
    assert done.returncode == 0, done.stderr
    for turn in range(1, 5):
        assert f"turn {turn}" in done.stdout
    assert "ATTACKER WON" in done.stdout


@pytest.mark.parametrize(("comply", "outcome"), [(True, "attacker_won"), (False, "defended")])
def test_match_against_an_agent_that_is_not_ours(comply: bool, outcome: str) -> None:
    with minimal_agent(comply=comply) as url:
        done = run_arena(["match", "--target", url, "--max-turns", "5", "--json"])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == outcome
    assert result["target_name"] == "Weather Agent"


def test_unreachable_target_is_a_clear_error() -> None:
    port = free_port()
    done = run_arena(["match", "--target", f"http://127.0.0.1:{port}"])
    assert done.returncode == 3
    assert "not reachable" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_url_without_a_card_is_a_clear_error(obeying_stack: Stack) -> None:
    done = run_arena(["match", "--target", obeying_stack.model])
    assert done.returncode == 3
    assert "no A2A agent card" in done.stderr


def test_non_a2a_server_is_a_clear_error(tmp_path: Path) -> None:
    well_known = tmp_path / ".well-known"
    well_known.mkdir()
    (well_known / "agent-card.json").write_text("<html>not a card</html>")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        from support.processes import wait_until_ready

        wait_until_ready(url, server)
        done = run_arena(["match", "--target", url])
        assert done.returncode == 3
        assert "did not return JSON" in done.stderr
        card = run_arena(["card", url])
        assert card.returncode == 3 and "not an A2A agent card" in card.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_model_server_down_is_an_error_not_a_defence(tmp_path: Path) -> None:
    from arena.local_services import LocalServices

    dead = free_port()
    with LocalServices(
        tmp_path, env=clean_env(ARENA_MODEL_BASE_URL=f"http://127.0.0.1:{dead}/v1")
    ) as services:
        defender = services.start("defender", env={"ARENA_MODEL_MAX_RETRIES": "0"})
        # /readyz reports the missing model, so wait for liveness instead.
        from support.processes import wait_until_ready

        wait_until_ready(f"{defender.url}/healthz", defender.process)
        assert httpx.get(f"{defender.url}/readyz").status_code == 503
        done = run_arena(["match", "--target", defender.url, "--json"])
        assert done.returncode == 3
        result = json.loads(done.stdout)
        assert result["outcome"] == "error"
        assert "could not answer" in result["error"] and "unavailable" in result["error"]
        # The defender is still serving.
        assert httpx.get(f"{defender.url}/healthz").status_code == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "nope"], "unknown strategy 'nope'"),
        (["--judge", "nope"], "unknown judge 'nope'"),
        (["--max-turns", "0"], "max-turns"),
        (["--converter", "bas64"], "unknown converter 'bas64'"),
        (["--converter", "split", "--converter", "rot13"], "converters: converter 'split' turns a message"),
        (["--converter", "noise:sigma=3"], "invalid params for converter 'noise'"),
        (["--strategy", "best-of-n", "--param", "n=0"], "invalid params for strategy 'best-of-n'"),
    ],
)
def test_bad_options_exit_2_with_a_reason(args: list[str], message: str) -> None:
    done = run_arena(["match", "--target", "http://127.0.0.1:9", *args])
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_target_that_is_not_a_url() -> None:
    done = run_arena(["match", "--target", "defender"])
    assert done.returncode == 2
    assert "http(s) URL" in done.stderr


def test_attacker_service_fails_bad_input_and_keeps_serving(obeying_stack: Stack) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "bad",
                "role": "user",
                "parts": [{"kind": "data", "data": {"target": obeying_stack.defender, "strategy": "nope"}}],
            }
        },
    }
    reply = httpx.post(obeying_stack.attacker, json=body, timeout=30).json()["result"]
    assert reply["status"]["state"] == "failed"
    assert "unknown strategy 'nope'" in reply["status"]["message"]["parts"][0]["text"]
    good = run_arena(
        ["match", "--target", obeying_stack.defender, "--attacker", obeying_stack.attacker, "--json"]
    )
    assert good.returncode == 0
