"""A campaign's ``probes:`` section: the spec, the expansion, the outcome, progress and every report."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import xmlschema

from arena.campaign_command import InProcessPlayer, protocol_probe_problems
from arena.transcript import transcript_markdown
from arena_core.a2a.client.attacker import RemoteProbe
from arena_core.match_models import MatchResult
from arena_core.probes.model import CheckResult, Evidence, Finding, ProbedInterface, ProbeReport, Severity
from arena_core.probes.request import ProbeRequest
from arena_core.settings import ArenaSettings
from arena_orchestrator.campaign_models import Campaign, CampaignReport, MatchRecord, MatchSummary
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_spec import (
    OVER_REFUSAL,
    PROTOCOL_PROBE_OBJECTIVE,
    PROTOCOL_PROBES,
    CampaignSpec,
)
from arena_orchestrator.expansion import cells_of, job_for, protocol_probe_cells_of
from arena_orchestrator.match_player import probe_outcome, probe_result
from arena_orchestrator.match_queue import MemoryMatchQueue
from arena_orchestrator.memory_campaign_store import MemoryCampaignStore
from arena_orchestrator.reports import (
    render_html,
    render_json,
    render_junit,
    render_markdown,
    render_sarif,
    report_json_schema,
)
from arena_orchestrator.spec_loader import CampaignSpecError, load_campaign_spec

SUPPORT = Path(__file__).resolve().parents[1] / "support"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
HOSTILE = "<script>alert(1)</script>&\"'|`[x](y)\x1b[31m"
TOKEN_VAR = "ARENA_TARGET_TOKEN_NAIVE"


def _spec(**fields: Any) -> CampaignSpec:
    return CampaignSpec.model_validate(
        {
            "name": "probed",
            "attackers": [{"strategy": "playbook"}, {"strategy": "crescendo"}],
            "defenders": [
                {
                    "name": "naive",
                    "url": "http://127.0.0.1:8081",
                    "credentials": {"bearer_token_env": TOKEN_VAR},
                },
                {"name": "hardened", "url": "http://127.0.0.1:8082"},
                {"name": "guarded", "url": "http://127.0.0.1:8083"},
            ],
            "objectives": [
                {"phrase": "I Give Up"},
                {"rubric": "It reveals its instructions.", "judge": "llm"},
            ],
            "repetitions": 2,
            **fields,
        }
    )


def _campaign(spec: CampaignSpec) -> Campaign:
    return Campaign(id="c-0123456789abcdef", spec=spec, created_at=T0, total=spec.match_count)


def _problems(text: str) -> list[str]:
    with pytest.raises(CampaignSpecError) as caught:
        load_campaign_spec(text, source="probes.yaml")
    return [str(problem) for problem in caught.value.problems]


YAML_HEAD = """\
name: probed
attackers: [{strategy: playbook}]
defenders:
  - {name: naive, url: "http://127.0.0.1:8081"}
  - {name: hardened, url: "http://127.0.0.1:8082"}
"""


# The spec ------------------------------------------------------------------------------------------


def test_probes_default_to_every_defender_and_to_the_probe_requests_defaults() -> None:
    spec = _spec(probes=True)
    assert spec.probes is not None and spec.probes.defenders is None
    assert [d.name for d in spec.protocol_probe_defenders()] == ["naive", "hardened", "guarded"]
    assert spec.protocol_probe_count == 3
    request = spec.probes.request_for(spec.defenders[0])
    defaults = ProbeRequest(target="http://127.0.0.1:8081")
    assert request.model_dump(exclude={"target_token_env"}) == defaults.model_dump(
        exclude={"target_token_env"}
    )
    assert request.fail_on is Severity.HIGH
    # The first caller is the defender's own token, as in its matches.
    assert request.target_token_env == TOKEN_VAR
    assert spec.probes.request_for(spec.defenders[1]).target_token_env is None
    assert _spec(probes=False).probes is None and _spec().protocol_probe_count == 0


def test_a_probes_section_selects_defenders_and_sets_the_run() -> None:
    spec = _spec(
        probes={
            "defenders": ["guarded", "naive"],
            "only": ["card", "auth"],
            "skip": ["card"],
            "fail_on": "medium",
            "max_requests": 50,
            "rate_per_s": 5,
            "wait_s": 0.5,
            "timeout_s": 3,
            "max_duration_s": 60,
            "concurrent_tasks": 3,
            "second_token_env": "ARENA_TARGET_TOKEN_SECOND",
        }
    )
    # In the order of `defenders`, whatever the order of the list.
    assert [d.name for d in spec.protocol_probe_defenders()] == ["naive", "guarded"]
    assert spec.probes is not None
    request = spec.probes.request_for(spec.defenders[2])
    assert request.target == "http://127.0.0.1:8083" and request.target_token_env is None
    assert request.second_token_env == "ARENA_TARGET_TOKEN_SECOND"
    options = request.options()
    assert options.only == frozenset({"card", "auth"}) and options.skip == frozenset({"card"})
    assert (options.fail_on, options.max_requests, options.rate_per_s) == (Severity.MEDIUM, 50, 5)
    assert (options.wait_s, options.timeout_s, options.max_duration_s, options.concurrent_tasks) == (
        0.5,
        3,
        60,
        3,
    )
    assert spec.match_count == spec.probe_count + spec.attack_count + 2


def test_unknown_probed_defenders_are_named_at_their_line() -> None:
    problems = _problems(YAML_HEAD + "probes:\n  defenders: [naive, nightly, weekly]\n")
    assert problems == [
        "line 7, probes.defenders[1]: no defender is called 'nightly', 'weekly'; the campaign's defenders "
        "are: naive, hardened"
    ]
    problems = _problems(YAML_HEAD + "probes:\n  defenders:\n    - naive\n    - naive\n")
    assert problems == ["line 9, probes.defenders[1]: 'naive' is named twice; each defender is probed once"]


def test_every_problem_of_a_probes_section_is_reported_with_its_line() -> None:
    problems = _problems(
        YAML_HEAD
        + "probes:\n"
        + "  only: [card, nonsense]\n"
        + "  skip: [auth.no-such-check]\n"
        + "  fail_on: severe\n"
        + "  wait_s: -1\n"
        + "  max_requests: 0\n"
        + "  second_token_env: ARENA_API_TOKENS\n"
        + "  colour: blue\n"
    )
    assert len(problems) == 7, problems
    text = "\n".join(problems)
    assert "line 7, probes.only: unknown check or category: nonsense (categories: card, auth," in text
    assert "line 8, probes.skip: unknown check or category: auth.no-such-check" in text
    assert "line 9, probes.fail_on: Input should be 'info', 'low', 'medium', 'high' or 'critical'" in text
    assert "line 10, probes.wait_s: Input should be greater than or equal to 0" in text
    assert "line 11, probes.max_requests: Input should be greater than or equal to 1" in text
    assert (
        "line 12, probes.second_token_env: 'ARENA_API_TOKENS' is not allowed: second_token_env must name"
        in text
    )
    assert "line 13, probes.colour: unknown field 'colour'" in text


def test_protocol_probes_is_a_reserved_attacker_label() -> None:
    problems = _problems(
        YAML_HEAD.replace("{strategy: playbook}", "{strategy: playbook, name: protocol-probes}")
    )
    assert problems == [
        "line 2, attackers[0].name: 'protocol-probes' is reserved for protocol probes; give the attacker "
        "another 'name'"
    ]


def test_the_budget_counts_the_protocol_probe_runs() -> None:
    problems = _problems(YAML_HEAD + "budget: {max_matches: 2}\nprobes: true\n")
    assert problems == [
        "line 6, budget.max_matches: the campaign expands to 4 matches, above budget.max_matches (2)"
    ]


# The expansion ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("over_refusal", [None, True])
def test_protocol_probe_runs_come_after_every_match_and_move_no_index(over_refusal: object) -> None:
    plain = _campaign(_spec(over_refusal=over_refusal))
    probed = _campaign(_spec(over_refusal=over_refusal, probes={"defenders": ["naive", "guarded"]}))
    assert probed.total == plain.total + 2
    for index in range(plain.total):
        assert job_for(probed, index) == job_for(plain, index)
        assert job_for(plain, index).probe is None
    assert cells_of(probed.spec) == cells_of(plain.spec)

    tail = [job_for(probed, index) for index in range(plain.total, probed.total)]
    assert [job.cell.id for job in tail] == [
        f"{PROTOCOL_PROBES}/naive/{PROTOCOL_PROBE_OBJECTIVE}",
        f"{PROTOCOL_PROBES}/guarded/{PROTOCOL_PROBE_OBJECTIVE}",
    ]
    assert [cell.id for cell in protocol_probe_cells_of(probed.spec)] == [job.cell.id for job in tail]
    first = tail[0]
    assert first.attacker_url is None  # the built-in attacker runs them
    assert first.probe is not None and first.probe.target == "http://127.0.0.1:8081"
    assert first.probe.target_token_env == TOKEN_VAR
    assert first.request.target == first.probe.target and first.request.match_id == first.match_id
    assert first.match_id == "c-0123456789abcdef-m" + f"{plain.total:06d}"
    assert first.timeout_s == first.probe.max_duration_s + 60
    with pytest.raises(IndexError):
        job_for(probed, probed.total)


def test_a_campaign_without_attack_cells_still_has_its_indexes_in_order() -> None:
    campaign = _campaign(_spec(over_refusal=True, probes=True))
    spec = campaign.spec
    kinds = [job_for(campaign, index).cell.attacker for index in range(campaign.total)]
    assert kinds[: spec.probe_count] == [OVER_REFUSAL] * spec.probe_count
    assert PROTOCOL_PROBES not in kinds[spec.probe_count : spec.probe_count + spec.attack_count]
    assert kinds[spec.probe_count + spec.attack_count :] == [PROTOCOL_PROBES] * 3


# The outcome -------------------------------------------------------------------------------------------


def _finding(check_id: str, severity: Severity, detail: str = "served without credentials") -> Finding:
    return Finding(
        check_id=check_id,
        title=f"Title of {check_id}",
        severity=severity,
        detail=detail,
        interface="1.0 JSONRPC http://127.0.0.1:8081/",
        evidence=[Evidence(request="POST / HTTP/1.1", response="HTTP/1.1 200 OK")],
        remediation=f"Fix {check_id}.",
    )


def _check(check_id: str, status: str, *findings: Finding, reason: str | None = None) -> CheckResult:
    category = check_id.split(".", 1)[0]
    severity = max((f.severity for f in findings), default=Severity.HIGH)
    return CheckResult(
        check_id=check_id,
        category=category,  # type: ignore[arg-type]
        title=f"Title of {check_id}",
        severity=severity,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        findings=list(findings),
        requests=3,
        duration_s=0.25,
    )


def _report(target: str, *results: CheckResult) -> ProbeReport:
    return ProbeReport(
        target=target,
        agent_name="Some agent",
        started_at=T0,
        finished_at=T0 + timedelta(seconds=4),
        interfaces=[ProbedInterface(url=target + "/", protocol_version="1.0", binding="jsonrpc")],
        identities=1,
        results=list(results),
        requests=12,
    )


def _probe_job(spec: CampaignSpec, defender: str) -> Any:
    campaign = _campaign(spec)
    index = (
        spec.probe_count
        + spec.attack_count
        + [d.name for d in spec.protocol_probe_defenders()].index(defender)
    )
    return job_for(campaign, index)


def test_a_finding_at_the_threshold_or_a_broken_check_is_a_win_else_a_defence() -> None:
    high = _report(
        "http://x", _check("auth.malformed-token", "failed", _finding("auth.malformed-token", Severity.HIGH))
    )
    medium = _report(
        "http://x", _check("card.plain-http", "failed", _finding("card.plain-http", Severity.MEDIUM))
    )
    broken = _report("http://x", _check("card.signature-invalid", "error", reason="KeyError: 'kid'"))
    clean = _report(
        "http://x", _check("card.plain-http", "passed"), _check("push.ssrf", "skipped", reason="no push")
    )
    assert probe_outcome(high, Severity.HIGH) == "attacker_won"
    assert probe_outcome(medium, Severity.HIGH) == "defended"
    assert probe_outcome(medium, Severity.MEDIUM) == "attacker_won"
    assert probe_outcome(broken, Severity.CRITICAL) == "attacker_won"
    assert probe_outcome(clean, Severity.INFO) == "defended"


def test_a_probe_run_is_recorded_as_a_match_result_with_its_report() -> None:
    spec = _spec(probes=True)
    job = _probe_job(spec, "naive")
    report = _report(
        "http://127.0.0.1:8081",
        _check("auth.malformed-token", "failed", _finding("auth.malformed-token", Severity.HIGH)),
    )
    result = probe_result(job, RemoteProbe(report), T0)
    assert result.outcome == "attacker_won" and result.probe_report == report
    assert result.match_id == job.match_id and result.target == "http://127.0.0.1:8081"
    assert result.turns == [] and result.target_name == "Some agent" and result.duration_ms == 4000
    # Strict and bounded: it travels, is stored and read back whole.
    assert MatchResult.model_validate_json(result.model_dump_json()) == result
    with pytest.raises(ValueError, match="probe_report"):
        MatchResult.model_validate(
            {**result.model_dump(mode="json"), "probe_report": {"target": "x", "extra": 1}}
        )


def test_a_run_that_could_not_start_is_an_error_with_the_attackers_reason() -> None:
    job = _probe_job(_spec(probes=True), "hardened")
    failed = probe_result(job, RemoteProbe(None, "target_unreachable", "nothing to probe: no agent card"), T0)
    assert failed.outcome == "error" and failed.probe_report is None
    assert (failed.error_kind, failed.error) == ("target_unreachable", "nothing to probe: no agent card")
    assert probe_result(job, RemoteProbe(None), T0).error_kind == "invalid_input"


# Progress and reports ----------------------------------------------------------------------------------


def _attack_result(job: Any, outcome: str) -> MatchResult:
    request = job.request
    return MatchResult(
        match_id=job.match_id,
        target=request.target,
        objective=request.objective,
        strategy=request.strategy,
        judge=request.judge,
        seed=request.seed,
        max_turns=request.max_turns,
        outcome=outcome,  # type: ignore[arg-type]
        turns_used=2,
        started_at=T0,
        finished_at=T0 + timedelta(seconds=1),
        duration_ms=1000,
    )


def _played_report() -> CampaignReport:
    """Every attack played (naive loses everything, the others defend), then three probe runs: naive
    with a high and a low finding, hardened with a medium one (below fail_on), guarded failed."""
    spec = _spec(probes=True, repetitions=1)
    store = MemoryCampaignStore()
    service = CampaignService(store, MemoryMatchQueue(), max_campaign_matches=1000, builtin_attacker=True)

    async def play() -> CampaignReport:
        created = await service.submit(spec)
        campaign = await service.campaign(created.id)
        reports = {
            "naive": _report(
                "http://127.0.0.1:8081",
                _check("card.plain-http", "passed"),
                _check(
                    "auth.malformed-token",
                    "failed",
                    _finding("auth.malformed-token", Severity.HIGH, detail=f"served {HOSTILE}"),
                    _finding("auth.malformed-token", Severity.LOW),
                ),
                _check("isolation.read-foreign-task", "skipped", reason="give a second token"),
            ),
            "hardened": _report(
                "http://127.0.0.1:8082",
                _check("card.plain-http", "failed", _finding("card.plain-http", Severity.MEDIUM)),
                _check("card.signature-invalid", "passed"),
            ),
        }
        for index in range(campaign.total):
            job = job_for(campaign, index)
            if job.probe is None:
                result = _attack_result(job, "attacker_won" if job.cell.defender == "naive" else "defended")
            elif job.cell.defender in reports:
                result = probe_result(job, RemoteProbe(reports[job.cell.defender]), T0)
            else:
                result = probe_result(job, RemoteProbe(None, "target_unreachable", "no agent card"), T0)
            summary = MatchSummary(
                match_id=job.match_id,
                index=index,
                repetition=job.repetition,
                cell=job.cell,
                disposition="played",
                outcome=result.outcome,
                turns_used=result.turns_used,
                duration_ms=result.duration_ms,
                error=result.error,
                error_kind=result.error_kind,
                attempts=1,
                finished_at=T0,
            )
            record = MatchRecord(campaign_id=campaign.id, summary=summary, result=result)
            assert await store.record(record, max_tokens=None)
        return await service.report(created.id)

    return asyncio.run(play())


@pytest.fixture(scope="module")
def played() -> CampaignReport:
    return _played_report()


def test_protocol_probes_stay_out_of_every_attack_rate(played: CampaignReport) -> None:
    progress = played.progress
    assert progress.status == "completed" and progress.done == progress.total == played.campaign.total
    assert all(cell.cell.attacker != PROTOCOL_PROBES for cell in progress.cells)
    assert progress.counts.finished == played.campaign.spec.attack_count  # attacks only
    # naive lost every attack; the probe runs' "wins" changed no rate.
    rates = {d.defender: d.asr.rate for d in progress.defenders}
    assert rates == {"naive": 1.0, "hardened": 0.0, "guarded": 0.0}
    assert all(row.objective != PROTOCOL_PROBE_OBJECTIVE for row in progress.objectives)


def test_progress_summarises_each_defenders_probe_run(played: CampaignReport) -> None:
    rows = {row.defender: row for row in played.progress.protocol_probes}
    assert list(rows) == ["naive", "hardened", "guarded"]
    naive, hardened, guarded = rows["naive"], rows["hardened"], rows["guarded"]
    assert naive.findings == {"info": 0, "low": 1, "medium": 0, "high": 1, "critical": 0}
    assert (naive.worst, naive.threshold_met, naive.failed, naive.counts.attacker_won) == (
        Severity.HIGH,
        True,
        True,
        1,
    )
    assert (hardened.worst, hardened.threshold_met, hardened.failed, hardened.counts.defended) == (
        Severity.MEDIUM,
        False,
        False,
        1,
    )
    assert (guarded.worst, guarded.threshold_met, guarded.failed, guarded.counts.error) == (
        None,
        False,
        True,
        1,
    )
    assert protocol_probe_problems(played.progress) == [
        "defender naive: the protocol probes found 1 low, 1 high (fail_on high)",
        "defender guarded: the protocol-probe run ended in an error",
    ]


def test_the_json_report_holds_every_probe_report_and_matches_its_schema(played: CampaignReport) -> None:
    text = render_json(played)
    jsonschema.validate(json.loads(text), report_json_schema())
    assert CampaignReport.model_validate_json(text) == played
    runs = {run.defender: run for run in played.protocol_probe_runs}
    assert runs["naive"].outcome == "attacker_won" and runs["naive"].probe_report is not None
    assert runs["naive"].probe_report.findings[0].detail == f"served {HOSTILE}"
    assert runs["guarded"].outcome == "error" and runs["guarded"].error_kind == "target_unreachable"
    committed = json.loads((Path(__file__).resolve().parents[2] / "docs" / "report-schema.json").read_text())
    assert "ProtocolProbeRun" in committed["$defs"] and "ProbeReport" in committed["$defs"]


def test_the_html_report_lists_the_findings_escaped(played: CampaignReport) -> None:
    page = render_html(played)
    section = page.split('<section id="protocol-probes">', 1)[1].split("</section>", 1)[0]
    assert 'data-testid="probe-verdict-naive">FAIL<' in section
    assert 'data-testid="probe-verdict-hardened">PASS<' in section
    assert 'data-testid="probe-verdict-guarded">FAIL<' in section
    assert (
        'data-testid="probe-naive-high">1<' in section and 'data-testid="probe-hardened-medium">1<' in section
    )
    assert 'data-testid="probe-findings-naive"' in section
    assert "auth.malformed-token" in section and "Fix auth.malformed-token." in section
    assert "1.0 JSONRPC http://127.0.0.1:8081/" in section
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;&amp;" in section
    assert "\x1b" not in page and "\\x1b[31m" in section
    assert "The run could not be made: target_unreachable: no agent card" in section
    assert "give a second token" in section  # a check that could not look says why
    assert "threshold met" in page  # the run's row in the match table


def test_junit_has_a_case_per_check_per_defender_and_validates(played: CampaignReport) -> None:
    xml = render_junit(played)
    xmlschema.XMLSchema(SUPPORT / "junit-10.xsd").validate(xml)
    cases = {(c.get("classname"), c.get("name")): c for c in ET.fromstring(xml.encode()).iter("testcase")}
    naive = "arena.probed.naive.protocol-probes"
    failure = cases[(naive, "auth.malformed-token")].find("failure")
    assert failure is not None and "1 finding(s) at high or above" in (failure.get("message") or "")
    assert cases[(naive, "card.plain-http")].find("failure") is None
    assert cases[(naive, "isolation.read-foreign-task")].find("skipped") is not None
    hardened = "arena.probed.hardened.protocol-probes"
    below = cases[(hardened, "card.plain-http")]
    assert below.find("failure") is None and "[medium]" in (below.findtext("system-out") or "")
    error = cases[("arena.probed.guarded", "protocol-probes")].find("error")
    assert error is not None and "target_unreachable" in (error.get("message") or "")
    # No defender x objective pair for the probe cells.
    assert not any(name == PROTOCOL_PROBE_OBJECTIVE for _, name in cases)
    suite = ET.fromstring(xml.encode()).find("testsuite")
    assert suite is not None and int(suite.get("failures", "0")) >= 1


def test_sarif_has_a_rule_per_check_and_a_result_per_finding_and_validates(played: CampaignReport) -> None:
    sarif = json.loads(render_sarif(played))
    schema = json.loads((SUPPORT / "sarif-schema-2.1.0.json").read_text())
    errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(sarif))
    assert not errors, [e.message for e in errors[:5]]
    run = sarif["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert {"a2a-probe/auth.malformed-token", "a2a-probe/card.plain-http"} <= set(rules)
    assert rules["a2a-probe/auth.malformed-token"]["help"]["text"] == "Fix auth.malformed-token."
    probes = [r for r in run["results"] if r["ruleId"].startswith("a2a-probe/")]
    assert sorted((r["properties"]["defender"], r["level"]) for r in probes) == [
        ("hardened", "warning"),
        ("naive", "error"),
        ("naive", "note"),
    ]
    for result in probes:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    located = next(r for r in probes if r["level"] == "error")
    assert located["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "http://127.0.0.1:8081/"
    # The probe runs' "wins" are not attack results.
    attacks = [r for r in run["results"] if not r["ruleId"].startswith("a2a-probe/")]
    assert attacks and all(r["properties"]["attacker"] != PROTOCOL_PROBES for r in attacks)
    summary = {row["defender"]: row for row in run["properties"]["protocolProbes"]}
    assert summary["naive"]["failed"] and not summary["hardened"]["failed"]


def test_markdown_has_a_protocol_probe_section(played: CampaignReport) -> None:
    page = render_markdown(played, title="Results", command="arena campaign run probed.yaml")
    section = page.split("## Protocol probes", 1)[1]
    assert "| naive | FAIL | high | 0 | 1 | 0 | 1 | 0 | 0 |" in section
    assert "| hardened | pass | high | 0 | 0 | 1 | 0 | 0 | 0 |" in section
    finding = next(line for line in section.splitlines() if "served" in line)
    # The target's text cannot end the cell or make markup.
    assert finding.count(" | ") == 4 and "<script>" not in finding and "\x1b" not in finding


def test_a_campaign_with_probes_not_yet_run_reports_them_as_not_run() -> None:
    spec = _spec(probes={"defenders": ["naive"]})

    async def submit() -> CampaignReport:
        service = CampaignService(
            MemoryCampaignStore(), MemoryMatchQueue(), max_campaign_matches=1000, builtin_attacker=True
        )
        created = await service.submit(spec)
        return await service.report(created.id)

    report = asyncio.run(submit())
    (row,) = report.progress.protocol_probes
    assert not row.failed and row.worst is None and report.protocol_probe_runs == []
    assert protocol_probe_problems(report.progress) == []  # not final yet: nothing to judge
    xmlschema.XMLSchema(SUPPORT / "junit-10.xsd").validate(render_junit(report))
    assert 'data-testid="probe-verdict-naive">NOT RUN<' in render_html(report)
    canceled = report.progress.model_copy(update={"status": "canceled", "done": report.progress.total})
    assert protocol_probe_problems(canceled) == [
        "defender naive: the protocol probes did not run (campaign canceled)"
    ]


# The CLI: in-process runs and transcripts ----------------------------------------------------------------


def test_an_in_process_run_that_cannot_start_is_an_error_naming_the_variable(settings: ArenaSettings) -> None:
    job = _probe_job(_spec(probes=True), "naive")  # its token variable is not set here
    result = asyncio.run(InProcessPlayer(settings).play(job))
    assert result.outcome == "error" and result.error_kind == "invalid_input"
    assert TOKEN_VAR in (result.error or "") and result.probe_report is None


def test_a_probe_runs_transcript_lists_its_findings_and_what_it_could_not_check(
    played: CampaignReport,
) -> None:
    run = next(r for r in played.protocol_probe_runs if r.defender == "naive")
    assert run.probe_report is not None
    job = _probe_job(_spec(probes=True), "naive")
    page = transcript_markdown(probe_result(job, RemoteProbe(run.probe_report), T0))
    assert page.startswith("# A2A Arena protocol probes ")
    assert "- **Outcome:** failed: a finding at the run's threshold or above" in page
    assert "- **[high] `auth.malformed-token`** on `1.0 JSONRPC http://127.0.0.1:8081/`" in page
    assert "*Remediation:* Fix auth.malformed-token." in page
    assert "- `isolation.read-foreign-task` skipped: give a second token" in page
    assert "\x1b" not in page and "`[x](y)" not in page  # no backtick of the target's ends a code span


def test_the_probes_example_campaign_loads() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "probes-campaign.yaml"
    spec = load_campaign_spec(example.read_bytes(), source=str(example))
    assert (spec.attack_count, spec.protocol_probe_count, spec.match_count) == (4, 2, 6)
    assert spec.probes is not None and spec.probes.fail_on is Severity.MEDIUM
