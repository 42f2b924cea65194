"""The isolation and resources checks against the deliberately vulnerable agent, each in its own process.

Every check has a true positive (its flag on: the finding appears) and a true negative (no flag:
the check looked and found nothing). One agent process per flag set: all the isolation and
resource flags together with two named callers, a well-behaved agent with the same callers (also
probed with one token and with none), and an agent asking for no credentials with and without
``foreign-list`` (the anonymous pair). The agents expire parked tasks after half a second, so the
probes wait 1.5 s; the 0.3-only and HTTP+JSON-only agents show the checks adapt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from arena_core.probes.base import ProbeOptions
from arena_core.probes.checks.isolation import ASKS_CREDENTIALS, NO_CREDENTIALS, ONE_CALLER
from arena_core.probes.model import CheckResult, ProbeReport, Severity
from arena_core.probes.runner import run_probes
from support.vulnerable_agent import running_vulnerable_agent

pytestmark = [pytest.mark.system, pytest.mark.timeout(180)]

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef0"
TOKENS = {"alice": ALICE, "bob": BOB}
EXPIRY_S = 0.5
OPTIONS = ProbeOptions(
    only=frozenset({"isolation", "resources"}),
    wait_s=1.5,
    stream_grace_s=0.5,
    rate_per_s=50,
    concurrent_tasks=10,
)
# Room for the probe's own tasks (one per interface, four interfaces), fewer than concurrent_tasks.
MAX_OPEN_TASKS = 7

ISOLATION_FLAGS = {
    "isolation.read-foreign-task": "foreign-read",
    "isolation.cancel-foreign-task": "foreign-cancel",
    "isolation.subscribe-foreign-task": "foreign-subscribe",
    "isolation.list-foreign-tasks": "foreign-list",
    "isolation.foreign-context": "foreign-context",
    "isolation.guessable-ids": "sequential-ids",
}
RESOURCE_FLAGS = {
    "resources.parked-forever": "park-forever",
    "resources.stream-never-closes": "stream-hang",
    "resources.concurrent-tasks": "unlimited-tasks",
}
CHECKS = {**ISOLATION_FLAGS, **RESOURCE_FLAGS}
TWO_CALLER_CHECKS = sorted(set(ISOLATION_FLAGS) - {"isolation.guessable-ids"})
NO_CREDENTIAL_SKIPS = sorted(set(TWO_CALLER_CHECKS) - {"isolation.list-foreign-tasks"})


def _probe(url: str, *, token: str | None = None, second_token: str | None = None) -> ProbeReport:
    return asyncio.run(run_probes(url, OPTIONS, token=token, second_token=second_token))


def _result(report: ProbeReport, check_id: str) -> CheckResult:
    (result,) = [result for result in report.results if result.check_id == check_id]
    return result


@pytest.fixture(scope="module")
def vulnerable() -> ProbeReport:
    """Every isolation and resource flag on, probed by alice and bob."""
    with running_vulnerable_agent(CHECKS.values(), tokens=TOKENS, expiry_s=EXPIRY_S) as url:
        return _probe(url, token=ALICE, second_token=BOB)


@pytest.fixture(scope="module")
def well_behaved_url() -> Iterator[str]:
    with running_vulnerable_agent((), tokens=TOKENS, expiry_s=EXPIRY_S, max_open_tasks=MAX_OPEN_TASKS) as url:
        yield url


@pytest.fixture(scope="module")
def well_behaved(well_behaved_url: str) -> ProbeReport:
    return _probe(well_behaved_url, token=ALICE, second_token=BOB)


# -- true positives and true negatives ----------------------------------------------------------


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_the_check_finds_its_flag(vulnerable: ProbeReport, check_id: str) -> None:
    result = _result(vulnerable, check_id)
    assert result.status == "failed", result
    assert result.findings and {finding.check_id for finding in result.findings} == {check_id}
    assert all(finding.evidence for finding in result.findings), result


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_the_check_passes_a_well_behaved_agent(well_behaved: ProbeReport, check_id: str) -> None:
    result = _result(well_behaved, check_id)
    assert result.status == "passed", result
    assert result.reason  # what was looked at


def test_the_foreign_task_findings_are_high_on_every_interface(vulnerable: ProbeReport) -> None:
    interfaces = {interface.url for interface in vulnerable.interfaces}
    assert len(vulnerable.interfaces) == 4
    for check_id in (
        "isolation.read-foreign-task",
        "isolation.cancel-foreign-task",
        "isolation.subscribe-foreign-task",
        "isolation.foreign-context",
    ):
        findings = _result(vulnerable, check_id).findings
        assert len(findings) == 4, findings
        assert {finding.severity for finding in findings} == {Severity.HIGH}
        assert {(finding.interface or "").split()[-1] for finding in findings} == interfaces
    cancel = _result(vulnerable, "isolation.cancel-foreign-task").findings[0]
    assert "the second caller canceled the first caller's task" in cancel.detail
    (listed, *_) = _result(vulnerable, "isolation.list-foreign-tasks").findings
    assert listed.severity is Severity.HIGH and (listed.interface or "").startswith("1.0")


def test_guessable_ids_name_the_counter(vulnerable: ProbeReport) -> None:
    details = sorted(finding.detail for finding in _result(vulnerable, "isolation.guessable-ids").findings)
    assert len(details) == 2, details
    assert details[0].startswith("the context ids share all but") and "ctx-1" in details[0]
    assert details[1].startswith("the task ids are sequential numbers (1, 2, 3")


def test_resource_findings_are_low_and_say_what_held(vulnerable: ProbeReport) -> None:
    for check_id in RESOURCE_FLAGS:
        findings = _result(vulnerable, check_id).findings
        assert findings and {finding.severity for finding in findings} == {Severity.LOW}
    stream = _result(vulnerable, "resources.stream-never-closes").findings[0]
    assert "(stream still open)" in stream.evidence[0].response
    parked = _result(vulnerable, "resources.parked-forever").findings[0]
    assert "still input-required after at least 1.5 s" in parked.detail


def test_no_token_shows_in_the_reports(vulnerable: ProbeReport, well_behaved: ProbeReport) -> None:
    for report in (vulnerable, well_behaved):
        text = report.model_dump_json()
        assert ALICE not in text and BOB not in text
        assert not report.errored() and report.stopped is None


def test_the_well_behaved_agent_refuses_beyond_its_task_limit(well_behaved: ProbeReport) -> None:
    reason = _result(well_behaved, "resources.concurrent-tasks").reason or ""
    assert "refused for a limit" in reason


# -- fewer callers --------------------------------------------------------------------------------


def test_one_token_skips_the_two_caller_checks(well_behaved_url: str) -> None:
    report = _probe(well_behaved_url, token=ALICE)
    for check_id in TWO_CALLER_CHECKS:
        result = _result(report, check_id)
        assert (result.status, result.reason) == ("skipped", ONE_CALLER)
        assert result.requests == 0
    assert _result(report, "isolation.guessable-ids").status == "passed"


def test_no_token_on_an_agent_asking_for_credentials_says_so(well_behaved_url: str) -> None:
    report = _probe(well_behaved_url)
    for check_id in ISOLATION_FLAGS:
        result = _result(report, check_id)
        assert (result.status, result.reason) == ("skipped", ASKS_CREDENTIALS)
    concurrent = _result(report, "resources.concurrent-tasks")
    assert concurrent.status == "skipped" and "HTTP 401" in (concurrent.reason or "")
    assert not report.errored()


@pytest.mark.parametrize("flags", [("foreign-list",), ()], ids=["foreign-list", "well-behaved"])
def test_an_anonymous_pair_lists_and_compares_ids_only(flags: tuple[str, ...]) -> None:
    with running_vulnerable_agent(flags, expiry_s=EXPIRY_S) as url:
        report = _probe(url)
    assert report.identities == 2  # two anonymous callers
    for check_id in NO_CREDENTIAL_SKIPS:
        result = _result(report, check_id)
        assert (result.status, result.reason) == ("skipped", NO_CREDENTIALS)
    assert _result(report, "isolation.guessable-ids").status == "passed"
    listed = _result(report, "isolation.list-foreign-tasks")
    if flags:
        assert listed.status == "failed"
        assert {finding.severity for finding in listed.findings} == {Severity.MEDIUM}
        assert "any client" in listed.findings[0].detail
    else:
        assert listed.status == "passed", listed


# -- other surfaces ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["v03-only", "rest-only"])
def test_the_checks_adapt_to_one_version_or_one_binding(mode: str) -> None:
    with running_vulnerable_agent(CHECKS.values(), tokens=TOKENS, mode=mode, expiry_s=EXPIRY_S) as url:
        report = _probe(url, token=ALICE, second_token=BOB)
    assert not report.errored(), report.errored()
    listed = _result(report, "isolation.list-foreign-tasks")
    if mode == "v03-only":
        assert {interface.protocol_version for interface in report.interfaces} == {"0.3"}
        assert listed.status == "skipped" and "1.0" in (listed.reason or "")
    else:
        assert {interface.binding for interface in report.interfaces} == {"http+json"}
        assert listed.status == "failed"
    for check_id in set(CHECKS) - {"isolation.list-foreign-tasks"}:
        assert _result(report, check_id).status == "failed", _result(report, check_id)
