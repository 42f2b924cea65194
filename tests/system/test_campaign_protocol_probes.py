"""A campaign with ``probes:``, end to end: real processes, through an orchestrator and in-process.

A scripted model, an arena defender that asks for a token (``ARENA_API_TOKENS``), the
deliberately vulnerable agent with ``accept-any-token`` (it serves a malformed or unknown
token: a high finding of ``auth.malformed-token``), an attacker holding both agents' tokens in
``ARENA_TARGET_TOKEN_*`` variables, and an orchestrator on a real redis-server. The campaign
attacks both agents for a turn and probes them (``only: [card, auth]``, short waits): the
vulnerable agent's run fails (``arena campaign run`` exits 1, naming it), the defender's
passes, and every report says so (JSON with the probe reports, HTML, JUnit valid against
junit-10.xsd, SARIF valid against the SARIF 2.1.0 schema, the dashboard). The same campaign
run in-process (no orchestrator) with the defender alone passes (exit 0).
"""

from __future__ import annotations

import json
import subprocess
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema
import yaml
from playwright.sync_api import expect

from arena.local_services import LocalServices
from support.browser import SKIP_REASON, find_chromium, launch_chromium, open_page
from support.processes import clean_env, run_arena
from support.redis_server import RedisServer
from support.vulnerable_agent import running_vulnerable_agent

pytestmark = pytest.mark.system

SUPPORT = Path(__file__).resolve().parents[1] / "support"
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef0"
DEFENDER_VAR = "ARENA_TARGET_TOKEN_ARENA"
VULNERABLE_VAR = "ARENA_TARGET_TOKEN_VULN"
TOKENS = {DEFENDER_VAR: ALICE, VULNERABLE_VAR: ALICE}


@dataclass(frozen=True)
class Stack:
    orchestrator: str
    defender: str
    vulnerable: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("campaign-probes")
    with (
        running_vulnerable_agent(
            flags=("accept-any-token",), tokens={"alice": ALICE, "bob": BOB}
        ) as vulnerable,
        LocalServices(logs, env=clean_env()) as services,
    ):
        model = services.start("model", extra_args=["--engine", "scripted", "--scripted-mode", "refuse"])
        services.wait_ready(model, timeout_s=60)
        defender = services.start(
            "defender",
            env={"ARENA_MODEL_BASE_URL": f"{model.url}/v1", "ARENA_API_TOKENS": f"alice:{ALICE},bob:{BOB}"},
        )
        attacker = services.start("attacker", env={"ARENA_MODEL_BASE_URL": f"{model.url}/v1", **TOKENS})
        orchestrator = services.start(
            "orchestrator",
            env=clean_env(
                ARENA_ATTACKER_URL=attacker.url,
                ARENA_REDIS_URL=redis_server.url,
                ARENA_REDIS_NAMESPACE=f"probes-{uuid.uuid4().hex[:8]}",
            ),
        )
        for service in (defender, attacker, orchestrator):
            services.wait_ready(service, timeout_s=60)
        yield Stack(orchestrator.url, defender.url, vulnerable)


def _spec(stack: Stack, defenders: list[str]) -> dict[str, Any]:
    urls = {"arena": (stack.defender, DEFENDER_VAR), "vuln": (stack.vulnerable, VULNERABLE_VAR)}
    return {
        "name": "probed",
        "attackers": [{"strategy": "playbook"}],
        "defenders": [
            {"name": name, "url": urls[name][0], "credentials": {"bearer_token_env": urls[name][1]}}
            for name in defenders
        ],
        "max_turns": 1,
        "probes": {"only": ["card", "auth"], "wait_s": 0.5, "rate_per_s": 50, "fail_on": "high"},
    }


@pytest.fixture(scope="module")
def played(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], Path]:
    folder = tmp_path_factory.mktemp("campaign-probes-run")
    spec_file = folder / "campaign.yaml"
    spec_file.write_text(yaml.safe_dump(_spec(stack, ["arena", "vuln"]), sort_keys=False))
    out = folder / "reports"
    arguments = [
        "campaign",
        "run",
        str(spec_file),
        "--orchestrator",
        stack.orchestrator,
        "--wait",
        "--out",
        str(out),
    ]
    return run_arena(arguments, timeout_s=600), out


def test_a_campaign_probes_each_defender_and_fails_on_the_vulnerable_one(
    played: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    run, out = played
    assert run.returncode == 1, run.stdout + run.stderr
    assert "defender vuln: the protocol probes found" in run.stderr
    assert "defender arena" not in run.stderr
    assert "protocol probes of arena: no finding (fail_on high): pass" in run.stdout

    report = json.loads((out / "report.json").read_text())
    progress = report["progress"]
    assert progress["status"] == "completed" and progress["done"] == progress["total"] == 4
    assert all(cell["cell"]["attacker"] != "protocol-probes" for cell in progress["cells"])
    assert (
        progress["counts"]["attacker_won"] + progress["counts"]["defended"] + progress["counts"]["error"] == 2
    )  # the two attacks only
    rows = {row["defender"]: row for row in progress["protocol_probes"]}
    assert (
        rows["vuln"]["failed"] and rows["vuln"]["worst"] == "high" and rows["vuln"]["findings"]["high"] >= 1
    )
    assert not rows["arena"]["failed"] and rows["arena"]["counts"]["defended"] == 1, rows["arena"]
    runs = {run["defender"]: run for run in report["protocol_probe_runs"]}
    vulnerable = runs["vuln"]["probe_report"]
    checks = {result["check_id"]: result for result in vulnerable["results"]}
    assert {result["category"] for result in vulnerable["results"]} == {"card", "auth"}
    assert checks["auth.malformed-token"]["status"] == "failed"
    # The token went as the first caller, and never into a report.
    assert checks["auth.malformed-token"]["findings"] and ALICE not in (out / "report.json").read_text()
    assert all(r["status"] != "error" for r in runs["arena"]["probe_report"]["results"])

    page = (out / "report.html").read_text()
    assert 'data-testid="probe-verdict-vuln">FAIL<' in page
    assert 'data-testid="probe-verdict-arena">PASS<' in page

    junit = (out / "junit.xml").read_text()
    xmlschema.XMLSchema(SUPPORT / "junit-10.xsd").validate(junit)
    cases = {(c.get("classname"), c.get("name")): c for c in ET.fromstring(junit.encode()).iter("testcase")}
    assert cases[("arena.probed.vuln.protocol-probes", "auth.malformed-token")].find("failure") is not None
    assert cases[("arena.probed.arena.protocol-probes", "auth.malformed-token")].find("failure") is None

    sarif = json.loads((out / "report.sarif").read_text())
    schema = json.loads((SUPPORT / "sarif-schema-2.1.0.json").read_text())
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(sarif))
    assert not errors, [e.message for e in errors[:5]]
    results = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "a2a-probe/auth.malformed-token"]
    assert results and {r["properties"]["defender"] for r in results} == {"vuln"}


def test_the_dashboard_shows_each_defenders_probe_summary(
    stack: Stack, played: tuple[subprocess.CompletedProcess[str], Path]
) -> None:
    if find_chromium() is None:
        pytest.skip(SKIP_REASON)
    _, out = played
    campaign_id = json.loads((out / "report.json").read_text())["campaign"]["id"]
    with launch_chromium() as browser, open_page(browser) as (tab, log):
        tab.goto(f"{stack.orchestrator}/dashboard#/campaigns/{campaign_id}")
        probes = tab.get_by_test_id("protocol-probes")
        expect(probes.locator("tbody tr")).to_have_count(2)
        expect(probes.get_by_test_id("probe-vuln").get_by_test_id("probe-verdict")).to_have_text("fail")
        expect(probes.get_by_test_id("probe-vuln").get_by_test_id("probe-worst")).to_have_text("high")
        expect(probes.get_by_test_id("probe-arena").get_by_test_id("probe-verdict")).to_have_text("pass")
        assert log.problems() == []


def test_an_in_process_campaign_runs_the_probes_too(stack: Stack, tmp_path: Path) -> None:
    spec_file = tmp_path / "campaign.yaml"
    spec_file.write_text(yaml.safe_dump(_spec(stack, ["arena"]), sort_keys=False))
    out = tmp_path / "reports"
    run = run_arena(
        ["campaign", "run", str(spec_file), "--out", str(out)], env=clean_env(**TOKENS), timeout_s=300
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((out / "report.json").read_text())
    (row,) = report["progress"]["protocol_probes"]
    assert row["defender"] == "arena" and not row["failed"] and row["counts"]["defended"] == 1
    (probe_run,) = report["protocol_probe_runs"]
    assert {r["category"] for r in probe_run["probe_report"]["results"]} == {"card", "auth"}
    # The transcript folder keeps the whole result, report included.
    result = json.loads((out / "matches" / probe_run["match_id"] / "result.json").read_text())
    assert result["probe_report"]["target"] == stack.defender
