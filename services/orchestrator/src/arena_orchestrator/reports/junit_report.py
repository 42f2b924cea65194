"""The JUnit XML report: one test case per defender x objective, for CI.

The XML validates against the Jenkins xunit plugin's ``junit-10.xsd`` (the schema most
CI servers accept). Layout::

    <testsuites name tests failures errors time>
      <testsuite name="arena.<campaign>" tests failures errors skipped time timestamp id>
        <properties>...</properties>
        <testcase classname="arena.<campaign>.<defender>" name="<objective>" time>
          <failure|error|skipped .../>   (at most one)
          <system-out>rates, counts, per-attacker lines, errors</system-out>
        </testcase>
        <system-out>campaign summary</system-out>

Each test case aggregates every attacker of its defender x objective pair:

* ``<skipped>``: no match of the pair was played (canceled, skipped by the token budget,
  or not played yet);
* ``<error>``: matches were played but nothing was measured (no win and no defence: every
  match was an error or an attacker refusal);
* ``<failure>``: ``fail_above`` is set and the pair's attack success rate is strictly above it;
* otherwise the test case passes (with ``fail_above`` unset, nothing fails: the rate is in
  ``<system-out>``).

Then, per defender, one test case per OWASP category its objectives map to (classname
``arena.<campaign>.<defender>.owasp``, name the category id and title), failing when
``fail_above_categories`` names the category and its rate is strictly above it; and, when the
campaign has over-refusal probes, one ``over-refusal`` case per defender whose output gives
the false refusal rate (it never fails: it is the price of a defence, not a finding).

A campaign's protocol-probe runs (``probes:``) add, per probed defender (classname
``arena.<campaign>.<defender>.protocol-probes``), one test case per check the run took (name
the check id): ``<failure>`` when it found something at the run's ``fail_on`` or above,
``<error>`` when the check itself broke, ``<skipped>`` when it could not look (the reason);
lower findings pass and are listed in ``<system-out>``. A run with no report is one
``protocol-probes`` case: ``<error>`` (the run's error), or ``<skipped>`` when it was not run.

Matches and repetitions are numbered from 1 in the text, as on the dashboard and in the HTML
report.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import UTC, datetime

from arena_core.probes.model import CheckResult, Finding, Severity
from arena_orchestrator.campaign_models import (
    CampaignReport,
    CategoryProgress,
    CellProgress,
    Interval,
    MatchSummary,
    OutcomeCounts,
    ProtocolProbeProgress,
    ProtocolProbeRun,
    RefusalProgress,
)
from arena_orchestrator.campaign_spec import OVER_REFUSAL, PROTOCOL_PROBES
from arena_orchestrator.reports._numbers import pct

JUNIT_MEDIA_TYPE = "application/xml"

_MAX_ERROR_LINES = 20
_MAX_ERROR_CHARS = 500

# Characters XML 1.0 cannot carry at all, even escaped (control characters, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: object) -> str:
    """``text`` as a string XML 1.0 can hold: forbidden characters become ``\\xNN`` escapes.

    Markup characters (``<``, ``&``, quotes) are left alone: ElementTree escapes them.
    """
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def _seconds(duration_ms: float) -> str:
    return f"{max(duration_ms, 0.0) / 1000:.3f}"


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _sum_counts(items: list[OutcomeCounts]) -> OutcomeCounts:
    return OutcomeCounts(
        **{name: sum(getattr(item, name) for item in items) for name in OutcomeCounts.model_fields}
    )


def _counts_line(counts: OutcomeCounts) -> str:
    return (
        f"won {counts.attacker_won}, defended {counts.defended}, refused {counts.attacker_refused}, "
        f"error {counts.error}, canceled {counts.canceled}, skipped {counts.skipped}"
    )


def _rate_line(asr: Interval) -> str:
    return f"{pct(asr.rate)} ({asr.wins}/{asr.trials}; Wilson 95% interval {pct(asr.low)} to {pct(asr.high)})"


@dataclass
class _Pair:
    defender: str
    objective: str
    cells: list[CellProgress] = field(default_factory=list)
    matches: list[MatchSummary] = field(default_factory=list)

    @property
    def counts(self) -> OutcomeCounts:
        return _sum_counts([cell.counts for cell in self.cells])


def _pairs(report: CampaignReport) -> list[_Pair]:
    """Every defender x objective pair: the spec's order first, then any other seen in the data."""
    pairs: dict[tuple[str, str], _Pair] = {}
    spec = report.campaign.spec
    for defender in spec.defenders:
        for objective in spec.objective_labels():
            pairs[(defender.name, objective)] = _Pair(defender.name, objective)
    for cell in report.progress.cells:
        key = (cell.cell.defender, cell.cell.objective)
        pairs.setdefault(key, _Pair(*key)).cells.append(cell)
    for match in report.matches:
        if match.cell.attacker in (OVER_REFUSAL, PROTOCOL_PROBES):
            continue
        key = (match.cell.defender, match.cell.objective)
        pairs.setdefault(key, _Pair(*key)).matches.append(match)
    return list(pairs.values())


def _category_case(report: CampaignReport, category: CategoryProgress, suite: ET.Element, prefix: str) -> str:
    """Append a defender x OWASP category ``<testcase>``; returns its verdict."""
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": _x(f"{prefix}.{category.defender}.owasp"), "name": _x(category.title), "time": "0.000"},
    )
    threshold = report.fail_above_categories.get(category.category)
    asr = category.asr
    verdict = "passed"
    if asr.trials == 0:
        verdict = "skipped"
        ET.SubElement(
            case, "skipped", {"message": "no attack of this category was measured (no win, no defence)"}
        )
    elif threshold is not None and asr.rate is not None and asr.rate > threshold:
        verdict = "failure"
        message = (
            f"{category.category}: attack success rate {_rate_line(asr)} is above "
            f"{threshold:g} ({pct(threshold)})"
        )
        failure = ET.SubElement(
            case, "failure", {"type": "arena.category_above_threshold", "message": message}
        )
        failure.text = message
    out = ET.SubElement(case, "system-out")
    out.text = _x(
        "\n".join(
            [
                f"defender: {category.defender}",
                f"category: {category.title}",
                f"attack success rate: {_rate_line(asr)}",
                f"counts: {_counts_line(category.counts)}",
                f"threshold: {threshold:g}" if threshold is not None else "threshold: none",
            ]
        )
        + "\n"
    )
    return verdict


def _refusal_case(refusal: RefusalProgress, suite: ET.Element, prefix: str) -> str:
    """Append a defender's over-refusal ``<testcase>`` (never failing); returns its verdict."""
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": _x(f"{prefix}.{refusal.defender}"), "name": "over-refusal", "time": "0.000"},
    )
    verdict = "passed"
    if refusal.frr.trials == 0:
        verdict = "skipped"
        ET.SubElement(case, "skipped", {"message": "no probe was answered or refused"})
    out = ET.SubElement(case, "system-out")
    out.text = _x(
        f"defender: {refusal.defender}\n"
        f"false refusal rate: {_rate_line(refusal.frr)}\n"
        "  (refused / (answered + refused) on harmless requests)\n"
        f"answered {refusal.answered}, refused {refusal.refused}, errors {refusal.counts.error}\n"
    )
    return verdict


def _finding_lines(findings: list[Finding]) -> list[str]:
    lines = []
    for finding in findings:
        where = f" on {finding.interface}" if finding.interface else ""
        lines += [
            f"  [{finding.severity.value}] {finding.title}{where}",
            f"    {finding.detail[:_MAX_ERROR_CHARS]}",
            f"    remediation: {finding.remediation[:_MAX_ERROR_CHARS]}",
        ]
    return lines


def _check_case(
    defender: str, fail_on: Severity, result: CheckResult, suite: ET.Element, classname: str
) -> str:
    """Append one protocol-probe check's ``<testcase>``; returns its verdict."""
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": _x(classname), "name": _x(result.check_id), "time": f"{result.duration_s:.3f}"},
    )
    serious = [f for f in result.findings if f.severity >= fail_on]
    verdict = "passed"
    if result.status == "error":
        verdict = "error"
        error = ET.SubElement(
            case,
            "error",
            {
                "type": "arena.probe_check_error",
                "message": _x(f"the check broke: {result.reason or 'no reason'}"),
            },
        )
        error.text = _x(result.reason or "")
    elif serious:
        verdict = "failure"
        worst = max(f.severity for f in serious)
        message = (
            f"{result.check_id}: {len(serious)} finding(s) at {fail_on.value} or above "
            f"(worst {worst.value}): {result.title}"
        )
        failure = ET.SubElement(case, "failure", {"type": "arena.probe_finding", "message": _x(message)})
        failure.text = _x("\n".join(_finding_lines(serious)))
    elif result.status == "skipped":
        verdict = "skipped"
        ET.SubElement(case, "skipped", {"message": _x(result.reason or "the check could not look")})
    lines = [
        f"defender: {defender}",
        f"check: {result.check_id} ({result.category}, {result.severity.value}): {result.title}",
        f"status: {result.status}" + (f" ({result.reason})" if result.reason else ""),
        f"fail_on: {fail_on.value}",
        f"requests: {result.requests}",
    ]
    if result.findings:
        lines += ["findings:", *_finding_lines(result.findings)]
    out = ET.SubElement(case, "system-out")
    out.text = _x("\n".join(lines) + "\n")
    return verdict


def _protocol_probe_cases(
    report: CampaignReport, row: ProtocolProbeProgress, suite: ET.Element, prefix: str
) -> list[str]:
    """Append a defender's protocol-probe test cases (see the module doc); returns their verdicts."""
    classname = f"{prefix}.{row.defender}.protocol-probes"
    run: ProtocolProbeRun | None = next(
        (r for r in report.protocol_probe_runs if r.defender == row.defender), None
    )
    if run is not None and run.probe_report is not None:
        return [
            _check_case(row.defender, row.fail_on, result, suite, classname)
            for result in run.probe_report.results
        ]
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": _x(f"{prefix}.{row.defender}"), "name": "protocol-probes", "time": "0.000"},
    )
    if run is not None and run.outcome == "error":
        message = f"the protocol-probe run ended in an error: {run.error_kind or 'error'}: {run.error or ''}"
        error = ET.SubElement(case, "error", {"type": "arena.probe_run_error", "message": _x(message[:1000])})
        error.text = _x(message)
        return ["error"]
    status = report.progress.status
    if row.counts.canceled or status == "canceled":
        reason = "the campaign was canceled before the protocol probes ran"
    elif row.counts.skipped or status == "budget_exhausted":
        reason = "the token budget ran out before the protocol probes ran"
    else:
        reason = f"the protocol probes have not run yet (campaign {status})"
    ET.SubElement(case, "skipped", {"message": reason})
    return ["skipped"]


def _not_played_reason(report: CampaignReport, counts: OutcomeCounts) -> str:
    status = report.progress.status
    if counts.canceled or status == "canceled":
        return "the campaign was canceled before any match of this pair was played"
    if counts.skipped or status == "budget_exhausted":
        return "the token budget ran out before any match of this pair was played"
    return f"no match of this pair has been played yet (campaign {status})"


def _error_lines(matches: list[MatchSummary]) -> list[str]:
    errors = [m for m in matches if m.outcome == "error" or m.error]
    lines = []
    for match in errors[:_MAX_ERROR_LINES]:
        text = (match.error or "no message").strip()
        if len(text) > _MAX_ERROR_CHARS:
            text = text[:_MAX_ERROR_CHARS] + "..."
        kind = f"{match.error_kind}: " if match.error_kind else ""
        lines.append(
            f"  match {match.match_id} (#{match.index + 1}, attacker {match.cell.attacker}, "
            f"repetition {match.repetition + 1}): {kind}{text}"
        )
    if len(errors) > _MAX_ERROR_LINES:
        lines.append(f"  ... and {len(errors) - _MAX_ERROR_LINES} more")
    return lines


def _strategies(report: CampaignReport) -> dict[str, str]:
    return {a.label: a.strategy for a in report.campaign.spec.attackers}


def _testcase(report: CampaignReport, pair: _Pair, suite: ET.Element, prefix: str) -> str:
    """Append the pair's ``<testcase>`` to ``suite``; returns its verdict."""
    counts = pair.counts
    asr = counts.asr
    played = counts.attacker_won + counts.defended + counts.attacker_refused + counts.error
    case = ET.SubElement(
        suite,
        "testcase",
        {
            "classname": _x(f"{prefix}.{pair.defender}"),
            "name": _x(pair.objective),
            "time": _seconds(sum(m.duration_ms for m in pair.matches)),
        },
    )
    threshold = report.fail_above
    verdict = "passed"
    if played == 0:
        verdict = "skipped"
        ET.SubElement(case, "skipped", {"message": _not_played_reason(report, counts)})
    elif asr.trials == 0:
        verdict = "error"
        message = (
            f"nothing measured: {played} match(es) played, {counts.error} error(s), "
            f"{counts.attacker_refused} attacker refusal(s), no win and no defence"
        )
        error = ET.SubElement(case, "error", {"type": "arena.nothing_measured", "message": message})
        error.text = _x("\n".join(_error_lines(pair.matches)))
    elif threshold is not None and asr.rate is not None and asr.rate > threshold:
        verdict = "failure"
        message = (
            f"attack success rate {_rate_line(asr)} is above fail_above {threshold:g} ({pct(threshold)})"
        )
        failure = ET.SubElement(case, "failure", {"type": "arena.asr_above_threshold", "message": message})
        failure.text = message

    strategies = _strategies(report)
    lines = [
        f"defender: {pair.defender}",
        f"objective: {pair.objective}",
        f"attack success rate: {_rate_line(asr)}",
        "  (wins / (wins + defences); errors and attacker refusals are neither)",
        f"counts: {_counts_line(counts)}",
        f"time: {_seconds(sum(m.duration_ms for m in pair.matches))} s (sum of match durations)",
        (
            f"threshold: fail_above {threshold:g} ({pct(threshold)}): {verdict}"
            if threshold is not None
            else "threshold: none (fail_above not set; nothing fails)"
        ),
        "per attacker:",
    ]
    for cell in pair.cells:
        attacker = cell.cell.attacker
        lines.append(
            f"  {attacker} (strategy {strategies.get(attacker, 'unknown')}): {_rate_line(cell.asr)}; "
            f"{_counts_line(cell.counts)}; tokens {cell.tokens.total_tokens}"
        )
    if not pair.cells:
        lines.append("  (no results)")
    errors = _error_lines(pair.matches)
    if errors:
        lines += ["errors:", *errors]
    out = ET.SubElement(case, "system-out")
    out.text = _x("\n".join(lines) + "\n")
    return verdict


def _properties(report: CampaignReport, suite: ET.Element) -> None:
    progress = report.progress
    spec = report.campaign.spec
    values: list[tuple[str, object]] = [
        ("arena.report_version", report.report_version),
        ("arena.campaign.id", report.campaign.id),
        ("arena.campaign.name", spec.name),
        ("arena.campaign.status", progress.status),
        ("arena.created_at", progress.created_at.isoformat()),
        ("arena.started_at", progress.started_at.isoformat() if progress.started_at else ""),
        ("arena.finished_at", progress.finished_at.isoformat() if progress.finished_at else ""),
        ("arena.generated_at", report.generated_at.isoformat()),
        ("arena.fail_above", "" if report.fail_above is None else f"{report.fail_above:g}"),
        ("arena.total", progress.total),
        ("arena.done", progress.done),
        ("arena.asr", _rate_line(progress.asr)),
        ("arena.attackers", ", ".join(f"{a.label} ({a.strategy})" for a in spec.attackers)),
        ("arena.defenders", ", ".join(d.name for d in spec.defenders)),
        ("arena.objectives", ", ".join(spec.objective_labels())),
        ("arena.repetitions", spec.repetitions),
        ("arena.max_turns", spec.max_turns),
        ("arena.tokens", progress.tokens.total_tokens),
    ]
    properties = ET.SubElement(suite, "properties")
    for name, value in values:
        ET.SubElement(properties, "property", {"name": name, "value": _x(value)})


def _probe_line(row: ProtocolProbeProgress) -> str:
    found = ", ".join(f"{count} {name}" for name, count in row.findings.items() if count) or "no finding"
    verdict = "FAIL" if row.failed else ("pass" if row.counts.defended else "not run")
    return f"protocol probes of {row.defender}: {found} (fail_on {row.fail_on.value}): {verdict}"


def render_junit(report: CampaignReport) -> str:
    """``report`` as JUnit XML (UTF-8 text with an XML declaration), valid against ``junit-10.xsd``.

    One ``<testcase>`` per defender x objective (spec order), classname
    ``arena.<campaign name>.<defender>``, name ``<objective>``, aggregated over attackers; see
    the module docstring for when a case fails, errors or is skipped. A case fails only when
    its rate is *strictly* above ``report.fail_above``. Times are sums of match durations in
    seconds; the suite's ``timestamp`` is the campaign's start (or creation) in UTC. All text
    is escaped by ElementTree, and characters XML cannot hold are written as ``\\xNN``.
    """
    prefix = f"arena.{report.campaign.spec.name}"
    progress = report.progress
    moment = _utc(progress.started_at or progress.created_at)
    root = ET.Element("testsuites", {"name": _x(prefix)})
    suite = ET.SubElement(root, "testsuite", {"name": _x(prefix)})
    _properties(report, suite)
    verdicts = [_testcase(report, pair, suite, prefix) for pair in _pairs(report)]
    verdicts += [_category_case(report, category, suite, prefix) for category in progress.categories]
    verdicts += [_refusal_case(refusal, suite, prefix) for refusal in progress.over_refusal]
    for row in progress.protocol_probes:
        verdicts += _protocol_probe_cases(report, row, suite, prefix)
    summary = ET.SubElement(suite, "system-out")
    summary.text = _x(
        "\n".join(
            [
                f"campaign {report.campaign.spec.name} ({report.campaign.id}): {progress.status}, "
                f"{progress.done}/{progress.total} matches accounted for",
                f"counts: {_counts_line(progress.counts)}",
                f"attack success rate (all cells): {_rate_line(progress.asr)}",
                "attack success rate = wins / (wins + defences); errors and attacker refusals are neither",
                *(f"false refusal rate of {r.defender}: {_rate_line(r.frr)}" for r in progress.over_refusal),
                *(_probe_line(p) for p in progress.protocol_probes),
                f"tokens: {progress.tokens.total_tokens} (prompt {progress.tokens.prompt_tokens}, "
                f"completion {progress.tokens.completion_tokens})",
            ]
        )
        + "\n"
    )
    total_time = _seconds(sum(m.duration_ms for m in report.matches))
    tallies = {
        "tests": str(len(verdicts)),
        "failures": str(verdicts.count("failure")),
        "errors": str(verdicts.count("error")),
    }
    suite.attrib.update(
        {
            **tallies,
            "skipped": str(verdicts.count("skipped")),
            "time": total_time,
            "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%S"),
            "id": _x(report.campaign.id),
        }
    )
    root.attrib.update({**tallies, "time": total_time})
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["JUNIT_MEDIA_TYPE", "render_junit"]
