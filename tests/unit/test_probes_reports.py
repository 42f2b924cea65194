"""The probe reports (arena_core.probes.reports) from hand-built reports: JSON reads back, HTML and
the console never carry the target's markup or control characters, JUnit and SARIF validate."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
import xmlschema
from rich.console import Console

from arena_core.probes.model import (
    CheckResult,
    Evidence,
    Finding,
    ProbedInterface,
    ProbeReport,
    Severity,
)
from arena_core.probes.reports import (
    SECURITY_SEVERITY,
    render_console,
    report_format,
    to_html,
    to_json,
    to_junit,
    to_sarif,
    write_report,
)
from arena_core.probes.runner import catalogue

SUPPORT = Path(__file__).resolve().parents[1] / "support"
TARGET = "http://127.0.0.1:8123"
RPC = ProbedInterface(url=f"{TARGET}/", protocol_version="1.0", binding="jsonrpc")
REST = ProbedInterface(url=f"{TARGET}/rest", protocol_version="0.3", binding="http+json")
HOSTILE = '<script>alert("x")</script>\x1b[2J\x1b]0;owned\x07[bold red]markup[/]\x9b31m\u202eevil\x00'
STARTED = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)


def finding(
    check_id: str = "isolation.read-foreign-task",
    severity: Severity = Severity.HIGH,
    *,
    interface: str | None = f"1.0 JSONRPC {TARGET}/",
    text: str = "the second caller read the first caller's task",
) -> Finding:
    return Finding(
        check_id=check_id,
        title="Another caller's task can be read",
        severity=severity,
        detail=text,
        interface=interface,
        evidence=[
            Evidence(
                request=f'POST {TARGET}/\nA2A-Version: 1.0\n\n{{"method": "GetTask", "note": "{text}"}}',
                response=f'HTTP 200\ncontent-type: application/json\n\n{{"result": "{text}"}}',
            )
        ],
        remediation="Scope tasks to the caller that created them.",
    )


def result(
    check_id: str,
    status: str,
    *,
    category: str = "isolation",
    severity: Severity = Severity.HIGH,
    findings: list[Finding] | None = None,
    reason: str | None = None,
) -> CheckResult:
    return CheckResult.model_validate(
        {
            "check_id": check_id,
            "category": category,
            "title": f"title of {check_id}",
            "severity": severity,
            "status": status,
            "reason": reason,
            "findings": findings or [],
            "requests": 3,
            "duration_s": 0.25,
        }
    )


def make_report(
    results: list[CheckResult] | None = None, *, name: str | None = "demo agent", stopped: str | None = None
) -> ProbeReport:
    return ProbeReport(
        target=TARGET,
        agent_name=name,
        started_at=STARTED,
        finished_at=STARTED + timedelta(seconds=12.5),
        interfaces=[RPC, REST],
        identities=2,
        results=results if results is not None else [],
        requests=42,
        stopped=stopped,
    )


def mixed_report() -> ProbeReport:
    """One check of each status; findings of several severities, on an interface and on the card."""
    return make_report(
        [
            result(
                "card.foreign-interface",
                "failed",
                category="card",
                findings=[finding("card.foreign-interface", interface=None)],
            ),
            result(
                "isolation.read-foreign-task",
                "failed",
                findings=[
                    finding(),
                    finding(interface=f"0.3 HTTP+JSON {TARGET}/rest", severity=Severity.MEDIUM),
                ],
            ),
            result(
                "input.unknown-method", "passed", category="input", severity=Severity.LOW, reason="-32601"
            ),
            result("push.ssrf", "skipped", category="push", reason="the card offers no push notifications"),
            result("leaks.stack-trace", "error", category="leaks", reason="the check broke: KeyError: 'x'"),
        ]
    )


def hostile_report() -> ProbeReport:
    """Every text the target can influence carries markup, escape sequences and control characters."""
    return make_report(
        [
            result(
                "leaks.stack-trace",
                "failed",
                category="leaks",
                severity=Severity.MEDIUM,
                findings=[finding("leaks.stack-trace", Severity.MEDIUM, text=HOSTILE)],
                reason=HOSTILE,
            ),
            result("push.ssrf", "skipped", category="push", reason=HOSTILE),
            result("auth.query-token", "error", category="auth", reason=HOSTILE),
        ],
        name=HOSTILE,
        stopped=HOSTILE,
    )


REPORTS = {
    "empty": lambda: make_report(),
    "mixed": mixed_report,
    "hostile": hostile_report,
    "nameless-stopped": lambda: make_report(
        [result("push.ssrf", "skipped")], name=None, stopped="budget spent"
    ),
}


# JSON ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", REPORTS.values(), ids=REPORTS.keys())
def test_json_reads_back_as_the_same_report(build: object) -> None:
    report = build()  # type: ignore[operator]
    text = to_json(report)
    assert ProbeReport.model_validate_json(text) == report
    assert json.loads(text)["target"] == TARGET


# HTML ---------------------------------------------------------------------------------------


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, name, value) for name, value in attrs]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


@pytest.mark.parametrize("build", REPORTS.values(), ids=REPORTS.keys())
def test_html_is_self_contained(build: object) -> None:
    page = to_html(build())  # type: ignore[operator]
    assert page.startswith("<!DOCTYPE html>")
    parsed = parse(page)
    assert "script" not in parsed.tags
    assert not {"img", "iframe", "object", "embed", "a", "form", "base"} & set(parsed.tags)
    csp = [value for tag, name, value in parsed.attrs if tag == "meta" and name == "content" and value]
    assert any("default-src 'none'" in value and "script-src" not in value for value in csp)
    for tag, name, value in parsed.attrs:
        if name in ("href", "src", "action"):
            assert (tag, value) == ("link", "data:,")
    assert "@import" not in page and "url(" not in page


def test_html_escapes_the_targets_text() -> None:
    page = to_html(hostile_report())
    parsed = parse(page)
    assert parsed.tags.count("script") == 0
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\x00"):
        assert raw not in page
    text = "".join(parsed.text)
    assert (
        '<script>alert("x")</script>\\x1b[2J\\x1b]0;owned\\x07[bold red]markup[/]\\x9b31m\\u202eevil\\x00'
        in text
    )


def test_html_shows_counts_interfaces_checks_and_findings() -> None:
    page = to_html(mixed_report())
    assert 'data-testid="count-high">2<' in page
    assert 'data-testid="count-medium">1<' in page
    assert 'data-testid="count-critical">0<' in page
    assert f"{TARGET}/rest" in page
    for check_id in ("card.foreign-interface", "input.unknown-method", "push.ssrf", "leaks.stack-trace"):
        assert f'data-testid="check-{check_id}"' in page
    assert page.count('class="finding"') == 3
    assert page.count("<pre>") == 6  # request and response of each finding's evidence
    assert "Scope tasks to the caller that created them." in page
    # Worst first: the medium finding comes after both high ones.
    assert page.index('badge medium">MEDIUM</span> Another') > page.rindex('badge high">HIGH</span> Another')


# JUnit --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def junit_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SUPPORT / "junit-10.xsd"))


@pytest.mark.parametrize("build", REPORTS.values(), ids=REPORTS.keys())
def test_junit_validates_against_the_xsd(junit_schema: xmlschema.XMLSchema, build: object) -> None:
    xml = to_junit(build())  # type: ignore[operator]
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    junit_schema.validate(xml)


def test_junit_has_a_testcase_per_check() -> None:
    root = ET.fromstring(to_junit(mixed_report()))
    suite = root.find("testsuite")
    assert suite is not None
    assert suite.get("name") == "arena-probe"
    cases = {(case.get("classname"), case.get("name")): case for case in suite.iter("testcase")}
    assert list(cases) == [
        ("probe.card", "card.foreign-interface"),
        ("probe.isolation", "isolation.read-foreign-task"),
        ("probe.input", "input.unknown-method"),
        ("probe.push", "push.ssrf"),
        ("probe.leaks", "leaks.stack-trace"),
    ]
    failure = cases[("probe.isolation", "isolation.read-foreign-task")].find("failure")
    assert failure is not None
    assert failure.get("type") == "probe.high"
    assert "2 finding(s)" in (failure.get("message") or "")
    assert "remediation: Scope tasks" in (failure.text or "")
    assert cases[("probe.input", "input.unknown-method")].find("failure") is None
    skipped = cases[("probe.push", "push.ssrf")].find("skipped")
    assert skipped is not None and skipped.get("message") == "the card offers no push notifications"
    error = cases[("probe.leaks", "leaks.stack-trace")].find("error")
    assert error is not None and "KeyError" in (error.get("message") or "")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "5",
        "2",
        "1",
        "1",
    )
    assert suite.get("time") == "12.500"


def test_junit_strips_what_xml_cannot_hold(junit_schema: xmlschema.XMLSchema) -> None:
    xml = to_junit(hostile_report())
    junit_schema.validate(xml)
    assert "<script>" not in xml
    assert "\x1b" not in xml and "\x00" not in xml and "\x07" not in xml
    assert "&lt;script&gt;" in xml
    ET.fromstring(xml)  # well-formed


# SARIF --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads((SUPPORT / "sarif-schema-2.1.0.json").read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


@pytest.mark.parametrize("build", REPORTS.values(), ids=REPORTS.keys())
def test_sarif_validates_against_the_schema(
    sarif_validator: jsonschema.protocols.Validator, build: object
) -> None:
    log = json.loads(to_sarif(build()))  # type: ignore[operator]
    errors = sorted(sarif_validator.iter_errors(log), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def test_sarif_rules_are_the_catalogue_and_results_the_findings() -> None:
    report = mixed_report()
    run = json.loads(to_sarif(report))["runs"][0]
    assert run["tool"]["driver"]["name"] == "arena probe"
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    known = [definition.id for definition in catalogue()]
    assert ids[: len(known)] == known
    assert set(ids) == set(known) | {r.check_id for r in report.results}
    for rule in rules:
        assert rule["properties"]["tags"] == ["security"]
        assert rule["properties"]["security-severity"] in SECURITY_SEVERITY.values()
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
    by_id = {rule["id"]: rule for rule in rules}
    assert by_id["isolation.read-foreign-task"]["properties"]["security-severity"] == 8.0
    assert by_id["input.unknown-method"]["properties"]["security-severity"] == 3.0

    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("card.foreign-interface", "error"),
        ("isolation.read-foreign-task", "error"),
        ("isolation.read-foreign-task", "warning"),
    ]
    for item in results:
        assert rules[item["ruleIndex"]]["id"] == item["ruleId"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris == [f"{TARGET}/.well-known/agent-card.json", f"{TARGET}/", f"{TARGET}/rest"]
    prints = [r["partialFingerprints"]["arenaProbe/v1"] for r in results]
    assert len(set(prints)) == 3
    assert prints == [
        r["partialFingerprints"]["arenaProbe/v1"] for r in json.loads(to_sarif(report))["runs"][0]["results"]
    ]

    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False  # leaks.stack-trace broke
    assert [n["descriptor"]["id"] for n in invocation["toolExecutionNotifications"]] == ["leaks.stack-trace"]


def test_sarif_levels_follow_severity() -> None:
    severities = [Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM, Severity.LOW, Severity.INFO]
    findings = [finding("card.x", severity) for severity in severities]
    report = make_report(
        [result("card.x", "failed", category="card", severity=Severity.CRITICAL, findings=findings)]
    )
    run = json.loads(to_sarif(report))["runs"][0]
    assert [r["level"] for r in run["results"]] == ["error", "error", "warning", "note", "note"]
    assert run["invocations"][0]["executionSuccessful"] is True


# console ------------------------------------------------------------------------------------


def console_text(report: ProbeReport, *, terminal: bool) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=160, force_terminal=terminal, color_system="truecolor" if terminal else None
    )
    render_console(report, console)
    return buffer.getvalue()


@pytest.mark.parametrize("terminal", [False, True], ids=["plain", "terminal"])
def test_console_never_passes_control_characters_through(terminal: bool) -> None:
    out = console_text(hostile_report(), terminal=terminal)
    assert "\x1b[2J" not in out
    assert "\x1b]0;" not in out
    for raw in ("\x07", "\x9b", "\u202e", "\x00"):
        assert raw not in out
    if not terminal:
        assert "\x1b" not in out
        assert "\\x1b[2J" in out
        assert "[bold red]markup[/]" in out  # text, never markup
        assert '<script>alert("x")</script>' in out


def test_console_shows_checks_findings_and_remediation() -> None:
    out = console_text(mixed_report(), terminal=False)
    for check_id in (
        "card.foreign-interface",
        "isolation.read-foreign-task",
        "push.ssrf",
        "leaks.stack-trace",
    ):
        assert check_id in out
    for status in ("failed", "passed", "skipped", "error"):
        assert status in out
    assert out.count("remediation: Scope tasks") == 3
    assert f"where: 1.0 JSONRPC {TARGET}/" in out
    assert "where: the agent (its card, no one interface)" in out
    assert "3 finding(s): 0 critical, 2 high, 1 medium, 0 low, 0 info; 1 check(s) broke; 42 requests" in out


def test_console_trims_long_evidence() -> None:
    long = finding().model_copy(
        update={"evidence": [Evidence(request="GET /\n" + "q" * 1_900, response="\n".join(["r"] * 40))]}
    )
    report = make_report([result("leaks.file-path", "failed", category="leaks", findings=[long])])
    out = console_text(report, terminal=False)
    assert "q" * 300 in out.replace("\n", "")
    assert "q" * 500 not in out.replace("\n", "")
    assert out.count("\nr") < 20


# files --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "form"),
    [
        ("r.json", "json"),
        ("r.html", "html"),
        ("R.HTM", "html"),
        ("r.xml", "junit"),
        ("r.junit.xml", "junit"),
        ("r.sarif", "sarif"),
        ("r.sarif.json", "sarif"),
    ],
)
def test_the_suffix_picks_the_format(tmp_path: Path, name: str, form: str) -> None:
    assert report_format(Path(name)) == form
    path = tmp_path / "deeper" / name
    assert write_report(mixed_report(), path) == form
    text = path.read_text(encoding="utf-8")
    first = {"json": "{", "html": "<!DOCTYPE html>", "junit": "<?xml", "sarif": "{"}[form]
    assert text.startswith(first)
    if form == "sarif":
        assert json.loads(text)["version"] == "2.1.0"
    if form == "json":
        ProbeReport.model_validate_json(text)


@pytest.mark.parametrize("name", ["r.txt", "r", ".json", "report.md", "r.yaml"])
def test_an_unknown_suffix_is_refused_before_writing(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="cannot tell the report format"):
        write_report(mixed_report(), tmp_path / name)
    assert list(tmp_path.iterdir()) == []
