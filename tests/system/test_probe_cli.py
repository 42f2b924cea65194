"""`arena probe` as a user runs it: a real CLI process against the vulnerable agent (its own process).

Exit codes: 1 with a finding at or above --fail-on, 0 without; 2 for bad options before any
request; 3 when there is nothing to probe (no card, nothing answering, the allowlist refusing).
Tokens come from environment variables and never show in any output or report file.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from arena.local_services import free_port
from arena_core.probes.model import ProbeReport
from support.http_stub import serve_handler
from support.processes import clean_env, default_sigint, interrupt_when, run_arena
from support.vulnerable_agent import running_vulnerable_agent

pytestmark = pytest.mark.system

ALICE = "alice-token-" + "a" * 20
BOB = "bob-token-" + "b" * 22
TOKENS = {"alice": ALICE, "bob": BOB}
CHECK = "isolation.read-foreign-task"
TOKEN_ARGS = ["--token-env", "PROBE_ALICE", "--second-token-env", "PROBE_BOB"]


def env(**extra: str) -> dict[str, str]:
    return clean_env(PROBE_ALICE=ALICE, PROBE_BOB=BOB, **extra)


def probe(*args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return run_arena(["probe", *args], env=env(**extra_env), timeout_s=120)


def assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    """No traceback, and neither token anywhere in the output."""
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert ALICE not in output and BOB not in output


@pytest.fixture(scope="module")
def foreign_read() -> Iterator[str]:
    with running_vulnerable_agent(("foreign-read",), tokens=TOKENS) as url:
        yield url


@pytest.fixture(scope="module")
def well_behaved() -> Iterator[str]:
    with running_vulnerable_agent((), tokens=TOKENS) as url:
        yield url


# findings and exit codes ----------------------------------------------------------------------


def test_a_high_finding_fails_the_run(foreign_read: str) -> None:
    done = probe("--target", foreign_read, "--only", CHECK, *TOKEN_ARGS)
    assert done.returncode == 1, done.stdout + done.stderr
    assert_clean(done)
    assert CHECK in done.stdout
    assert "HIGH" in done.stdout
    assert "remediation:" in done.stdout
    assert f"failed {CHECK}" in " ".join(done.stderr.split())  # progress, as each check finishes
    assert "finding(s) at or above high" in done.stderr


def test_a_finding_below_fail_on_passes(foreign_read: str) -> None:
    done = probe("--target", foreign_read, "--only", CHECK, *TOKEN_ARGS, "--fail-on", "critical")
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(done)
    assert "HIGH" in done.stdout


def test_a_well_behaved_agent_passes(well_behaved: str) -> None:
    done = probe("--target", well_behaved, "--only", CHECK, *TOKEN_ARGS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_clean(done)
    assert "0 finding(s)" in done.stdout


def test_json_prints_only_the_report(foreign_read: str) -> None:
    done = probe("--target", foreign_read, "--only", CHECK, *TOKEN_ARGS, "--json")
    assert done.returncode == 1, done.stderr
    assert_clean(done)
    report = ProbeReport.model_validate_json(done.stdout)
    assert [result.check_id for result in report.results] == [CHECK]
    assert report.results[0].status == "failed"
    assert report.worst() is not None and report.worst().value == "high"  # type: ignore[union-attr]
    assert report.identities == 2
    assert "probing" not in done.stderr  # no progress with --json


def test_out_writes_every_format(foreign_read: str, tmp_path: Path) -> None:
    names = ["report.json", "report.html", "report.junit.xml", "report.sarif"]
    outs = [arg for name in names for arg in ("--out", str(tmp_path / "reports" / name))]
    done = probe("--target", foreign_read, "--only", CHECK, *TOKEN_ARGS, *outs)
    assert done.returncode == 1, done.stdout + done.stderr
    assert_clean(done)
    texts = {name: (tmp_path / "reports" / name).read_text(encoding="utf-8") for name in names}
    for text in texts.values():
        assert ALICE not in text and BOB not in text
    report = ProbeReport.model_validate_json(texts["report.json"])
    assert report.results[0].status == "failed"
    assert texts["report.html"].startswith("<!DOCTYPE html>")
    assert CHECK in texts["report.html"]
    suite = ET.fromstring(texts["report.junit.xml"]).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    case = suite.find("testcase")
    assert case is not None and (case.get("classname"), case.get("name")) == ("probe.isolation", CHECK)
    sarif = json.loads(texts["report.sarif"])
    assert {result["ruleId"] for result in sarif["runs"][0]["results"]} == {CHECK}


def test_list_prints_the_catalogue() -> None:
    done = probe("--list")
    assert done.returncode == 0, done.stderr
    assert CHECK in done.stdout and "isolation" in done.stdout
    listed = probe("--list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    by_id = {row["id"]: row for row in rows}
    assert by_id[CHECK]["category"] == "isolation"
    assert by_id[CHECK]["severity"] == "high"
    assert by_id[CHECK]["title"]
    assert {row["category"] for row in rows} == {
        "card",
        "auth",
        "isolation",
        "push",
        "resources",
        "input",
        "leaks",
    }


# invalid input: exit 2, before any request (the whole matrix: tests/unit/test_probe_command.py) -----


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--only", "isolation.no-such-check"],
            "unknown check or category in --only: 'isolation.no-such-check'",
        ),
        (["--token-env", "PROBE_NOBODY"], "PROBE_NOBODY (--token-env) is not set"),
        (["--rate", "0"], "--rate must be above 0"),
    ],
)
def test_bad_options_exit_2(args: list[str], message: str) -> None:
    # A port where nothing listens: none of these may get as far as a request.
    done = probe("--target", f"http://127.0.0.1:{free_port()}", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in " ".join(done.stderr.split())
    assert_clean(done)


# nothing to probe: exit 3 ---------------------------------------------------------------------


def test_nothing_answering_is_exit_3() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = probe("--target", url)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"no agent card at {url}/.well-known/agent-card.json" in done.stderr
    assert_clean(done)


class _NoCard(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"not here")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


class _ForeignCard(BaseHTTPRequestHandler):
    """A card whose only interface is on another origin: nothing the probes may contact."""

    def do_GET(self) -> None:
        body = json.dumps(
            {
                "name": "elsewhere",
                "supportedInterfaces": [
                    {"url": "http://127.0.0.2:9/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def test_no_card_is_exit_3() -> None:
    with serve_handler(_NoCard) as port:
        done = probe("--target", f"http://127.0.0.1:{port}")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no agent card at" in done.stderr and "HTTP 404" in done.stderr
    assert_clean(done)


def test_a_card_with_no_interface_on_its_origin_is_exit_3() -> None:
    with serve_handler(_ForeignCard) as port:
        done = probe("--target", f"http://127.0.0.1:{port}")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "nothing to probe" in done.stderr
    assert_clean(done)


def test_a_target_outside_the_allowlist_is_exit_3(well_behaved: str) -> None:
    done = probe("--target", well_behaved, ARENA_TARGET_ALLOWLIST="10.0.0.0/8")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "ARENA_TARGET_ALLOWLIST" in done.stderr
    assert_clean(done)


# interrupted: exit 130 ------------------------------------------------------------------------


def test_ctrl_c_stops_the_run() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    silent.settimeout(0.05)
    accepted: list[socket.socket] = []

    def connected() -> bool:
        with contextlib.suppress(TimeoutError):
            accepted.append(silent.accept()[0])
        return bool(accepted)

    process = subprocess.Popen(
        [sys.executable, "-m", "arena", "probe", "--target", f"http://127.0.0.1:{silent.getsockname()[1]}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env(),
        preexec_fn=default_sigint,
    )
    try:
        output = interrupt_when(process, connected, signal_number=signal.SIGINT, timeout_s=60)
    finally:
        for connection in accepted:
            connection.close()
        silent.close()
    assert process.returncode == 130, output
    assert "interrupted" in output
    assert "Traceback" not in output
