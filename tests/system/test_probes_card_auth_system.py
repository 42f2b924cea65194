"""The card and auth probes against the vulnerable agent: each check fires with its flag, never without.

One agent process per flag set, one probe run (card and auth checks) per process, shared by
the tests of that set. Flags that do not disturb each other's checks share a process; the
sets also cover the agent's modes (all four wires, 0.3 only, HTTP+JSON only, JSON-RPC only
and without tokens), so the checks are seen adapting to what an agent offers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from arena_core.probes.base import ProbeOptions
from arena_core.probes.model import CheckResult, Finding, ProbeReport, Severity
from arena_core.probes.runner import run_probes
from support.vulnerable_agent import FOREIGN_INTERFACE, PLAIN_HTTP_INTERFACE, running_vulnerable_agent

pytestmark = [pytest.mark.system, pytest.mark.timeout(120)]

ALICE = "a" * 24
BOB = "b" * 24
TOKENS = {"alice": ALICE, "bob": BOB}
OPTIONS = ProbeOptions(only=frozenset({"card", "auth"}), rate_per_s=200, timeout_s=5.0)
CHECKS = (
    "card.foreign-interface",
    "card.plain-http",
    "card.security-not-enforced",
    "card.security-undeclared",
    "card.signature-invalid",
    "card.extended-unauthenticated",
    "auth.missing-credentials",
    "auth.malformed-token",
    "auth.query-token",
    "auth.binding-inconsistent",
)
POLITE = 80
"""Requests the ten checks may take on the four wires (the whole run's default budget is 400)."""


def _probe(flags: tuple[str, ...], *, mode: str = "all", tokens: bool = True) -> Iterator[ProbeReport]:
    with running_vulnerable_agent(
        flags, tokens=TOKENS if tokens else None, mode=mode, max_open_tasks=50
    ) as url:
        token, second = (ALICE, BOB) if tokens else (None, None)
        report = asyncio.run(run_probes(url, OPTIONS, token=token, second_token=second))
        assert not report.errored(), [(r.check_id, r.reason) for r in report.errored()]
        assert report.stopped is None
        assert report.requests <= POLITE
        # Never off the origin: every request any finding shows went to the agent itself.
        for finding in report.findings:
            for evidence in finding.evidence:
                assert evidence.request.split(" ")[1].startswith(url + "/"), evidence.request
        yield report


@pytest.fixture(scope="module")
def vulnerable() -> Iterator[ProbeReport]:
    """All four wires, tokens, and every flag whose check does not disturb the others'."""
    yield from _probe(
        (
            "foreign-interface",
            "plain-http",
            "bad-signature",
            "open-extended-card",
            "accept-any-token",
            "query-token",
        )
    )


@pytest.fixture(scope="module")
def open_gettask() -> Iterator[ProbeReport]:
    """A2A 0.3 only (JSON-RPC and HTTP+JSON), GetTask served without a token."""
    yield from _probe(("open-gettask",), mode="v03-only")


@pytest.fixture(scope="module")
def rest_without_auth() -> Iterator[ProbeReport]:
    """HTTP+JSON checks no token, and the card declares no security."""
    yield from _probe(("rest-no-auth", "auth-undeclared"))


@pytest.fixture(scope="module")
def not_enforced() -> Iterator[ProbeReport]:
    """HTTP+JSON only; the card declares bearer security that nothing checks."""
    yield from _probe(("no-auth-enforced",), mode="rest-only")


@pytest.fixture(scope="module")
def clean() -> Iterator[ProbeReport]:
    """No flag: a well-behaved agent with tokens, on all four wires."""
    yield from _probe(())


@pytest.fixture(scope="module")
def open_agent() -> Iterator[ProbeReport]:
    """No flag, no tokens (it asks for no credentials), JSON-RPC only."""
    yield from _probe((), mode="jsonrpc-only", tokens=False)


def _result(report: ProbeReport, check_id: str) -> CheckResult:
    return next(result for result in report.results if result.check_id == check_id)


def _findings(report: ProbeReport, check_id: str) -> list[Finding]:
    return _result(report, check_id).findings


def _on(findings: list[Finding]) -> set[str]:
    """The interfaces findings are about, as ``version BINDING`` (the URL's port differs per run)."""
    return {" ".join((finding.interface or "card").split(" ")[:2]) for finding in findings}


ALL_WIRES = {"1.0 JSONRPC", "1.0 HTTP+JSON", "0.3 JSONRPC", "0.3 HTTP+JSON"}

# -- true positives -------------------------------------------------------------------------------


def test_foreign_interfaces_are_reported_from_the_card(vulnerable: ProbeReport) -> None:
    findings = _findings(vulnerable, "card.foreign-interface")
    assert len(findings) == 2
    assert {finding.severity for finding in findings} == {Severity.HIGH}
    assert any(FOREIGN_INTERFACE in finding.detail for finding in findings)
    assert any(PLAIN_HTTP_INTERFACE in finding.detail for finding in findings)
    assert all("did not contact" in finding.detail and finding.remediation for finding in findings)
    assert _on(findings) == {"card"}


def test_plain_http_is_reported_beyond_loopback_only(vulnerable: ProbeReport) -> None:
    findings = _findings(vulnerable, "card.plain-http")
    assert len(findings) == 1
    assert PLAIN_HTTP_INTERFACE in findings[0].detail
    assert findings[0].severity is Severity.MEDIUM
    assert "127.0.0" not in findings[0].detail  # the agent and 127.0.0.2 are loopback


def test_a_tampered_card_signature_is_invalid(vulnerable: ProbeReport) -> None:
    findings = _findings(vulnerable, "card.signature-invalid")
    assert len(findings) == 2  # the 1.0 and the 0.3 rendering
    assert {finding.severity for finding in findings} == {Severity.HIGH}
    assert all("k1" in finding.detail and "does not verify" in finding.detail for finding in findings)
    assert any("jwks.json" in evidence.request for finding in findings for evidence in finding.evidence)


def test_an_open_extended_card_is_reported_on_every_wire(vulnerable: ProbeReport) -> None:
    findings = _findings(vulnerable, "card.extended-unauthenticated")
    assert _on(findings) == ALL_WIRES
    assert all("admin-notes" in finding.detail for finding in findings)


def test_any_token_accepted_is_reported_on_every_wire(vulnerable: ProbeReport) -> None:
    findings = _findings(vulnerable, "auth.malformed-token")
    assert _on(findings) == ALL_WIRES
    assert all(
        finding.severity is Severity.HIGH and "unknown bearer token" in finding.detail for finding in findings
    )


def test_a_token_in_the_query_string_is_reported_and_redacted(vulnerable: ProbeReport) -> None:
    findings = _findings(vulnerable, "auth.query-token")
    assert _on(findings) == ALL_WIRES
    for finding in findings:
        assert "?access_token=, ?token=, ?api_key=" in finding.detail
        assert all(ALICE not in evidence.request for evidence in finding.evidence)
        assert any("access_token=[REDACTED]" in evidence.request for evidence in finding.evidence)


def test_gettask_without_credentials_is_reported_on_0_3_wires(open_gettask: ProbeReport) -> None:
    assert [interface.protocol_version for interface in open_gettask.interfaces] == ["0.3", "0.3"]
    findings = _findings(open_gettask, "auth.missing-credentials")
    assert _on(findings) == {"0.3 JSONRPC", "0.3 HTTP+JSON"}
    by_wire = {" ".join((finding.interface or "").split(" ")[:2]): finding.detail for finding in findings}
    assert "served tasks/get," in by_wire["0.3 JSONRPC"]
    assert "served GetTask," in by_wire["0.3 HTTP+JSON"]
    assert all(finding.severity is Severity.HIGH for finding in findings)
    assert all("SendMessage, " not in detail.split("although")[0] for detail in by_wire.values())


def test_a_binding_without_auth_is_inconsistent(rest_without_auth: ProbeReport) -> None:
    findings = _findings(rest_without_auth, "auth.binding-inconsistent")
    assert _on(findings) == {"1.0 HTTP+JSON", "0.3 HTTP+JSON"}
    assert all("JSONRPC" in finding.detail and "refuse" in finding.detail for finding in findings)


def test_security_the_card_does_not_declare_is_reported_where_it_is_required(
    rest_without_auth: ProbeReport,
) -> None:
    findings = _findings(rest_without_auth, "card.security-undeclared")
    assert _on(findings) == {"1.0 JSONRPC", "0.3 JSONRPC"}  # HTTP+JSON asks for nothing here
    assert all(
        finding.severity is Severity.LOW and "securitySchemes" in finding.detail for finding in findings
    )


def test_declared_security_that_is_not_enforced(not_enforced: ProbeReport) -> None:
    findings = _findings(not_enforced, "card.security-not-enforced")
    assert _on(findings) == {"1.0 HTTP+JSON", "0.3 HTTP+JSON"}
    assert all("bearer" in finding.detail and "SendMessage" in finding.detail for finding in findings)


# -- true negatives -------------------------------------------------------------------------------


@pytest.mark.parametrize("check_id", CHECKS)
def test_a_well_behaved_agent_passes(clean: ProbeReport, check_id: str) -> None:
    result = _result(clean, check_id)
    assert result.status == "passed", (result.reason, [finding.detail for finding in result.findings])


def test_a_valid_signature_verifies_with_the_jku_key(clean: ProbeReport) -> None:
    reason = _result(clean, "card.signature-invalid").reason or ""
    assert "signature 1 of the 1.0 card verifies with key k1" in reason
    assert "signature 1 of the 0.3 card verifies with key k1" in reason


@pytest.mark.parametrize(
    ("check_id", "report"),
    [
        ("card.security-not-enforced", "vulnerable"),
        ("card.security-undeclared", "vulnerable"),
        ("auth.binding-inconsistent", "vulnerable"),
        ("auth.malformed-token", "rest_without_auth"),
        ("auth.query-token", "rest_without_auth"),
        ("card.signature-invalid", "rest_without_auth"),
        ("card.foreign-interface", "open_gettask"),
        ("card.plain-http", "open_gettask"),
        ("card.extended-unauthenticated", "open_gettask"),
        ("auth.binding-inconsistent", "open_gettask"),
    ],
)
def test_other_flags_do_not_trip_a_check(check_id: str, report: str, request: pytest.FixtureRequest) -> None:
    result = _result(request.getfixturevalue(report), check_id)
    assert not result.findings, [finding.detail for finding in result.findings]
    assert result.status == "passed"


def test_auth_checks_skip_an_agent_that_asks_for_no_credentials(open_agent: ProbeReport) -> None:
    for check_id in CHECKS:
        result = _result(open_agent, check_id)
        assert not result.findings, (check_id, [finding.detail for finding in result.findings])
        if check_id.startswith("auth."):
            assert (result.status, result.reason) == ("skipped", "the agent asks for no credentials")
    assert _result(open_agent, "card.signature-invalid").status == "passed"
    assert (
        _result(open_agent, "card.security-not-enforced").reason
        == "the card declares no security requirement"
    )
