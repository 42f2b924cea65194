"""`arena probe`'s option checks, in process: every invalid input exits 2 with one clear line
before any request (tests/system/test_probe_cli.py runs the real process against real agents)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arena.cli import app
from arena.local_services import free_port

TOKEN = "alice-token-" + "a" * 20
ENV = {"PROBE_ALICE": TOKEN, "PROBE_BOB": "bob-token-" + "b" * 22, "PROBE_SAME": TOKEN, "PROBE_EMPTY": " "}


def invoke(*args: str) -> tuple[int, str]:
    # A port where nothing listens: none of these may get as far as a request.
    target = ["--target", f"http://127.0.0.1:{free_port()}"] if "--target" not in args else []
    result = CliRunner().invoke(app, ["probe", *target, *args], env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, " ".join((result.stdout + result.stderr).split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--only", "isolation.no-such-check"],
            "unknown check or category in --only: 'isolation.no-such-check'",
        ),
        (["--skip", "nonsense", "--skip", "auth"], "unknown check or category in --skip: 'nonsense'"),
        (
            ["--token-env", "PROBE_NOBODY"],
            "the environment variable PROBE_NOBODY (--token-env) is not set or empty",
        ),
        (["--token-env", "PROBE_EMPTY"], "PROBE_EMPTY (--token-env) is not set or empty"),
        (
            ["--token-env", "PROBE_ALICE", "--second-token-env", "PROBE_NOBODY"],
            "PROBE_NOBODY (--second-token-env)",
        ),
        (["--token-env", "PROBE_ALICE", "--second-token-env", "PROBE_SAME"], "hold the same token"),
        (["--second-token-env", "PROBE_BOB"], "--second-token-env needs --token-env"),
        (["--rate", "0"], "--rate must be above 0"),
        (["--rate", "5000"], "'--rate'"),
        (["--rate", "fast"], "'--rate'"),
        (["--max-requests", "0"], "'--max-requests'"),
        (["--max-requests", "10001"], "'--max-requests'"),
        (["--concurrent-tasks", "101"], "'--concurrent-tasks'"),
        (["--timeout", "0"], "'--timeout'"),
        (["--fail-on", "severe"], "'--fail-on'"),
        (["--out", "report.txt"], "cannot tell the report format of 'report.txt'"),
        (["--out", "ok.json", "--out", "report"], "cannot tell the report format of 'report'"),
        (["--card-keys", "/nonexistent/keys.json"], "cannot read --card-keys /nonexistent/keys.json"),
        (["--target", "file:///etc/passwd"], "--target must be an http(s) URL with a host"),
        (["--target", "not a url"], "--target must be an http(s) URL with a host"),
    ],
)
def test_bad_options_exit_2(args: list[str], message: str) -> None:
    code, output = invoke(*args)
    assert code == 2, output
    assert message in output
    assert "Traceback" not in output


def test_target_is_required_unless_list() -> None:
    result = CliRunner().invoke(app, ["probe"], env=ENV)
    assert result.exit_code == 2
    assert "--target is required" in result.stderr


def test_a_token_given_instead_of_a_variable_name_is_not_echoed() -> None:
    code, output = invoke("--token-env", f"Bearer {TOKEN}")
    assert code == 2
    assert "takes the NAME of an environment variable" in output
    assert TOKEN not in output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        ('{"keys": []}', "is not a JWK set"),
        ("[1]", "is not a JWK set"),
        ('{"keys": [{"kid": "k1"}]}', "key 1 is not a JWK"),
    ],
)
def test_card_keys_must_be_a_jwk_set(tmp_path: Path, content: str, message: str) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(content)
    code, output = invoke("--card-keys", str(keys))
    assert code == 2, output
    assert message in output


def test_list_json_is_the_catalogue() -> None:
    result = CliRunner().invoke(app, ["probe", "--list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and {"id", "category", "severity", "title", "description", "remediation"} <= set(rows[0])
    assert len({row["id"] for row in rows}) == len(rows)
