"""The probes' framework: the session's rules, redaction, reading answers, the report model."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.parse
from datetime import UTC, datetime

import httpx
import pytest
from pydantic import ValidationError

from arena_core.errors import TargetNotAllowedError
from arena_core.probes.base import CHECKS, ProbeOptions, read_answer, task_in, tasks_listed
from arena_core.probes.model import (
    MAX_EXCERPT_CHARS,
    CheckResult,
    Evidence,
    Finding,
    ProbeReport,
    Severity,
)
from arena_core.probes.runner import catalogue, unknown_names
from arena_core.probes.surface import NoSurface, discover
from arena_core.probes.wire import Exchange, Identity, Interface, Limits, ProbeSession, ProbeStopped, Redactor

TOKEN = "s3cr3t-token-0123456789abcdef"
JSONRPC_10 = Interface("http://agent.test/", "1.0", "jsonrpc")
REST_03 = Interface("http://agent.test/rest", "0.3", "http+json")


def _session(handler: httpx.MockTransport, **limits: float) -> ProbeSession:
    return ProbeSession("http://agent.test/", limits=Limits(**limits), transport=handler)  # type: ignore[arg-type]


def _echo() -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, json={"jsonrpc": "2.0", "id": 1, "result": {"saw": request.headers.get("authorization")}}
        )

    return httpx.MockTransport(answer)


# -- severity --------------------------------------------------------------------------------


def test_severities_are_ordered() -> None:
    assert Severity.CRITICAL > Severity.HIGH > Severity.MEDIUM > Severity.LOW > Severity.INFO
    assert Severity.HIGH >= Severity.HIGH
    assert max([Severity.LOW, Severity.HIGH, Severity.MEDIUM]) is Severity.HIGH
    assert Severity("medium") is Severity.MEDIUM


# -- the session's rules --------------------------------------------------------------------------


def test_requests_never_leave_the_targets_origin() -> None:
    async def go() -> None:
        session = _session(_echo())
        try:
            for elsewhere in ("http://other.test/", "https://agent.test/", "http://agent.test:8080/"):
                with pytest.raises(TargetNotAllowedError):
                    await session.request("GET", elsewhere)
            assert session.requests == 0
        finally:
            await session.aclose()

    asyncio.run(go())


def test_the_budget_stops_the_run() -> None:
    async def go() -> None:
        session = _session(_echo(), max_requests=3, rate_per_s=1000)
        try:
            for _ in range(3):
                await session.request("GET", "http://agent.test/x")
            with pytest.raises(ProbeStopped, match="budget"):
                await session.request("GET", "http://agent.test/x")
            assert session.stopped is not None
            with pytest.raises(ProbeStopped):
                await session.request("GET", "http://agent.test/x")
        finally:
            await session.aclose()

    asyncio.run(go())


def test_requests_are_paced() -> None:
    async def go() -> float:
        session = _session(_echo(), rate_per_s=50)
        try:
            started = time.monotonic()
            for _ in range(6):
                await session.request("GET", "http://agent.test/x")
            return time.monotonic() - started
        finally:
            await session.aclose()

    # Six requests at 50 a second: five gaps of 20 ms at least (a lower bound: never flaky).
    assert asyncio.run(go()) >= 0.099


def test_a_burst_is_paid_back_afterwards() -> None:
    async def go() -> tuple[float, float]:
        session = _session(_echo(), rate_per_s=20)
        try:
            async with session.burst():
                await asyncio.gather(*(session.request("GET", "http://agent.test/x") for _ in range(4)))
            during = session.paced_s
            await session.request("GET", "http://agent.test/x")
            return during, session.paced_s
        finally:
            await session.aclose()

    during, after = asyncio.run(go())
    assert during == 0.0  # the burst was not paced...
    assert after >= 0.19  # ...and its four requests' 4 x 50 ms were waited before the next one


def test_a_silent_target_times_out_and_eight_failures_stop_the_run() -> None:
    async def hang(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200)

    async def go() -> ProbeSession:
        session = _session(httpx.MockTransport(hang), timeout_s=0.05, rate_per_s=1000)
        try:
            for _ in range(8):
                exchange = await session.request("GET", "http://agent.test/x")
                assert exchange.status is None and exchange.error is not None
            with pytest.raises(ProbeStopped, match="stopped answering"):
                await session.request("GET", "http://agent.test/x")
            return session
        finally:
            await session.aclose()

    asyncio.run(go())


def test_the_run_time_bound_stops_the_run() -> None:
    async def go() -> None:
        session = _session(_echo(), max_duration_s=0.05, rate_per_s=1000)
        try:
            await asyncio.sleep(0.06)
            with pytest.raises(ProbeStopped, match="time bound"):
                await session.request("GET", "http://agent.test/x")
        finally:
            await session.aclose()

    asyncio.run(go())


def test_a_large_body_is_read_only_up_to_the_cap() -> None:
    def big(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * 3_000_000)

    async def go() -> Exchange:
        session = _session(httpx.MockTransport(big))
        try:
            return await session.request("GET", "http://agent.test/x")
        finally:
            await session.aclose()

    assert len(asyncio.run(go()).body) == 1_048_576


# -- redaction ---------------------------------------------------------------------------------


def test_tokens_are_redacted_in_every_form() -> None:
    redact = Redactor()
    redact.add(TOKEN)
    forms = [
        TOKEN,
        urllib.parse.quote(TOKEN, safe=""),
        base64.b64encode(TOKEN.encode()).decode(),
        base64.urlsafe_b64encode(TOKEN.encode()).decode().rstrip("="),
        TOKEN[3:20],  # a piece of it, as an excerpt cut in the middle would hold
    ]
    for form in forms:
        assert form not in redact(f"before {form} after")


def test_evidence_never_holds_the_token() -> None:
    async def go() -> Exchange:
        session = _session(_echo())
        session.redact.add(TOKEN)
        try:
            return await session.request(
                "POST", "http://agent.test/", identity=Identity("first", TOKEN), body={}
            )
        finally:
            await session.aclose()

    exchange = asyncio.run(go())
    evidence = exchange.excerpt()
    assert TOKEN not in evidence.request + evidence.response
    assert "[REDACTED]" in evidence.request
    assert TOKEN not in exchange.body


# -- reading answers ---------------------------------------------------------------------------


def _exchange(status: int | None, body: object = None, media: str = "application/json") -> Exchange:
    text = body if isinstance(body, str) else ("" if body is None else json.dumps(body))
    return Exchange("POST", "http://agent.test/", {}, "", status, {"content-type": media}, text)


def test_reading_answers_is_strict() -> None:
    result = {"jsonrpc": "2.0", "id": 1, "result": {"task": {"id": "t", "status": {"state": "x"}}}}
    assert read_answer(JSONRPC_10, _exchange(200, result)).served
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "no"}}
    answer = read_answer(JSONRPC_10, _exchange(200, error))
    assert not answer.served and answer.not_found and answer.error_code == -32001
    assert not read_answer(JSONRPC_10, _exchange(200, "<html>ok</html>", "text/html")).served
    assert not read_answer(JSONRPC_10, _exchange(200, "")).served
    assert read_answer(JSONRPC_10, _exchange(None)).server_error
    assert read_answer(JSONRPC_10, _exchange(401, {"error": "x"})).auth_refused
    assert read_answer(REST_03, _exchange(200, {"id": "t", "status": {}})).served
    assert not read_answer(REST_03, _exchange(200, "<html/>", "text/html")).served
    assert read_answer(REST_03, _exchange(404, {"error": {"code": 404}})).not_found
    not_cancelable = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "done"}}
    assert read_answer(JSONRPC_10, _exchange(200, not_cancelable)).reached


def test_tasks_are_found_in_every_shape() -> None:
    task = {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}
    assert task_in(JSONRPC_10, {"task": task}) == task
    assert task_in(JSONRPC_10, task) == task
    assert task_in(JSONRPC_10, {"kind": "task", **task})["id"] == "t1"  # type: ignore[index]
    assert task_in(JSONRPC_10, {"message": {}}) is None
    assert tasks_listed({"tasks": [task, "junk"]}) == [task]
    assert tasks_listed([task]) == []
    assert JSONRPC_10.state_name("TASK_STATE_INPUT_REQUIRED") == "input-required"
    assert REST_03.state_name("TASK_STATE_CANCELLED") == "canceled"


# -- discovery --------------------------------------------------------------------------------


def test_discovery_keeps_foreign_interfaces_out_of_the_probed_ones() -> None:
    card = {
        "name": "A",
        "supportedInterfaces": [
            {"url": "http://agent.test/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://elsewhere.test/", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": "http://agent.test/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        ],
    }

    async def go() -> list[Interface]:
        session = _session(httpx.MockTransport(lambda request: httpx.Response(200, json=card)))
        try:
            surface = await discover(session)
            assert ("http://elsewhere.test/", "1.0", "HTTP+JSON") in surface.declared
            return surface.interfaces
        finally:
            await session.aclose()

    assert asyncio.run(go()) == [Interface("http://agent.test/", "1.0", "jsonrpc")]


def test_no_card_means_nothing_to_probe() -> None:
    async def go() -> None:
        session = _session(httpx.MockTransport(lambda request: httpx.Response(404, text="no")))
        try:
            with pytest.raises(NoSurface, match="no agent card"):
                await discover(session)
        finally:
            await session.aclose()

    asyncio.run(go())


# -- the catalogue and options --------------------------------------------------------------------


def test_the_catalogue_is_ordered_and_unique() -> None:
    ids = [definition.id for definition in catalogue()]
    assert len(ids) == len(set(ids)) == len(CHECKS)
    categories = [definition.category for definition in catalogue()]
    assert categories[-1] == "leaks"
    for definition in catalogue():
        assert definition.id.startswith(definition.category + ".")
        assert definition.remediation and definition.description, definition.id


def test_only_and_skip_select_by_id_or_category() -> None:
    options = ProbeOptions(only=frozenset({"auth", "card.plain-http"}), skip=frozenset({"auth.query-token"}))
    assert options.selects("auth.malformed-token", "auth")
    assert options.selects("card.plain-http", "card")
    assert not options.selects("auth.query-token", "auth")
    assert not options.selects("card.foreign-interface", "card")
    assert unknown_names(frozenset({"auth", "nope.check"})) == ["nope.check"]


# -- the report model ----------------------------------------------------------------------------


def _report(*findings: Finding, status: str = "failed") -> ProbeReport:
    now = datetime.now(UTC)
    result = CheckResult(
        check_id="auth.query-token",
        category="auth",
        title="t",
        severity=Severity.MEDIUM,
        status=status,  # type: ignore[arg-type]
        findings=list(findings),
    )
    return ProbeReport(target="http://agent.test/", started_at=now, finished_at=now, results=[result])


def test_reports_round_trip_and_refuse_unknown_fields() -> None:
    finding = Finding(
        check_id="auth.query-token",
        title="t",
        severity=Severity.MEDIUM,
        detail="d",
        evidence=[Evidence(request="GET /", response="x" * 10_000)],
        remediation="r",
    )
    report = _report(finding)
    assert len(report.findings[0].evidence[0].response) <= MAX_EXCERPT_CHARS
    again = ProbeReport.model_validate_json(report.model_dump_json())
    assert again == report
    with pytest.raises(ValidationError):
        ProbeReport.model_validate({**json.loads(report.model_dump_json()), "extra": 1})
    assert report.worst() is Severity.MEDIUM
    assert report.counts()["medium"] == 1
    assert report.fails(Severity.MEDIUM) and not report.fails(Severity.HIGH)


def test_an_errored_check_fails_the_run_whatever_the_threshold() -> None:
    assert _report(status="error").fails(Severity.CRITICAL)
    assert not _report(status="passed").fails(Severity.INFO)
