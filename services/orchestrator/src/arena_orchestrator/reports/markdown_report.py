"""A campaign report as a Markdown page: attack success rates, attackers x defenders.

``arena experiment`` writes ``docs/results.md`` with it. Every rate and interval on the
page is the campaign's own (:class:`~arena_orchestrator.campaign_models.CellProgress`'s
``asr``), so the page says exactly what ``arena campaign run`` and the other reports say
about the same matches; the page only adds the median turns of the won matches and the
kinds of the errors, read from the match summaries.

Before the per-objective tables, the page gives each defender's attack success rate over every
objective beside its false refusal rate (when the campaign had over-refusal probes), and, when
the objectives map to OWASP categories, a table of rates per category and defender. With
protocol probes (``probes:``), a last section lists each probed defender's findings per
severity and verdict, then every finding (the target's text made safe for a table cell).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from datetime import UTC

from arena_core.match_models import Outcome
from arena_core.probes.model import Severity
from arena_orchestrator.campaign_models import (
    CampaignReport,
    CellKey,
    CellProgress,
    Interval,
    MatchSummary,
)

CellText = Callable[[CampaignReport, CellProgress], str]
"""What a table shows in one cell."""

_ASR_DEFINITION = (
    "- Attack success rate (ASR) = matches won / (won + defended), with a Wilson 95% interval and the",
    "  median number of turns of the won matches. Errors and attacker refusals are neither a win",
    "  nor a defence; they are counted in the second table.",
)


def render_markdown(
    report: CampaignReport,
    *,
    title: str,
    command: str,
    environment: str = "",
    facts: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> str:
    """``report`` as a Markdown page.

    ``command`` is what produced the campaign, ``environment`` where it ran (e.g. the
    platform), both shown with the report's ``generated_at``; ``facts`` are extra bullet
    points (e.g. the models used) and ``notes`` extra lines at the end (e.g. how to read
    the numbers). Pure: no I/O, no clock.
    """
    when = f"{report.generated_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    produced = f"Produced by `{command}` on {when}" + (f" ({environment})." if environment else ".")
    lines = [f"# {title}", "", produced, "", *_setup(report), *(f"- {fact}" for fact in facts)]
    lines += [*_ASR_DEFINITION, *(_FRR_DEFINITION if report.progress.over_refusal else ()), ""]
    lines += _defenders(report)
    if report.progress.categories:
        lines += _categories(report)
    lines += _section(report, "Attack success rate", _rate_text)
    lines += ["", *_section(report, "Matches that were neither won nor defended", _other_text)]
    if report.progress.protocol_probes:
        lines += ["", *_protocol_probes(report)]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


_FRR_DEFINITION = (
    "- False refusal rate (FRR) = harmless requests refused / (answered + refused), judged by `helpful`",
    "  (an empty or looping reply counts as refused): the price of the defence.",
)


def _defenders(report: CampaignReport) -> list[str]:
    """Each defender's attack success rate over every objective, and its false refusal rate."""
    refusals = {row.defender: row for row in report.progress.over_refusal}
    head = "| defender | attack success rate |" + (" false refusal rate |" if refusals else "")
    lines = ["## Defenders", "", head, "|---|---|" + ("---|" if refusals else "")]
    for row in report.progress.defenders:
        line = f"| {row.defender} | {_interval_text(row.asr)} |"
        if refusals:
            refusal = refusals.get(row.defender)
            line += f" {_interval_text(refusal.frr) if refusal else 'n/a'} |"
        lines.append(line)
    return [*lines, ""]


def _categories(report: CampaignReport) -> list[str]:
    """Attack success rate per OWASP category (rows) and defender (columns)."""
    defenders = [d.name for d in report.campaign.spec.defenders]
    rows: dict[str, dict[str, Interval]] = {}
    titles: dict[str, str] = {}
    for row in report.progress.categories:
        rows.setdefault(row.category, {})[row.defender] = row.asr
        titles[row.category] = row.title
    lines = [
        "## By OWASP category",
        "",
        "| category | " + " | ".join(defenders) + " |",
        "|---|" + "---|" * len(defenders),
    ]
    for category, by_defender in rows.items():
        cells = [_interval_text(by_defender[d]) if d in by_defender else "n/a" for d in defenders]
        lines.append(f"| {titles[category]} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def _setup(report: CampaignReport) -> list[str]:
    """The objectives and their judges, the turn budget, the repetitions and their seeds."""
    spec = report.campaign.spec
    objectives = ", ".join(f"{o.objective.label} (judge `{o.judge}`)" for o in spec.objectives)
    last_seed = spec.seed + spec.repetitions - 1
    seeds = f"seed {spec.seed}" if spec.repetitions == 1 else f"seeds {spec.seed}..{last_seed}"
    return [
        f"- Objective{'s' if len(spec.objectives) > 1 else ''}: {objectives}; up to {spec.max_turns} "
        f"turns per match; {spec.repetitions} match(es) per cell, {seeds} (repetition r uses seed + r)"
        + _partial(report)
    ]


def _partial(report: CampaignReport) -> str:
    """``.``, or why fewer matches were played than planned."""
    progress = report.progress
    if progress.status == "completed":
        return "."
    not_played = (
        progress.counts.canceled
        + progress.counts.skipped
        + progress.probe_counts.canceled
        + progress.probe_counts.skipped
        + sum(p.counts.canceled + p.counts.skipped for p in progress.protocol_probes)
    )
    played = progress.done - not_played
    return (
        f" (partial: the campaign is {progress.status}; {played} of the {progress.total} planned "
        "matches were played)."
    )


_CELL_UNSAFE = re.compile(r"[\x00-\x1f\x7f|`<>\[\]*_\\]")
_MAX_CELL_CHARS = 300


def _cell(text: object) -> str:
    """Target text safe in a table cell: one line, no markup (``|``, backticks, brackets, ``<``)."""
    flat = " ".join(str(text).split())
    flat = flat if len(flat) <= _MAX_CELL_CHARS else flat[: _MAX_CELL_CHARS - 1] + "…"
    return _CELL_UNSAFE.sub(lambda m: "\\" + m.group() if m.group().isprintable() else " ", flat)


def _protocol_probes(report: CampaignReport) -> list[str]:
    """Each probed defender's findings per severity and verdict, then every finding."""
    severities = [severity.value for severity in reversed(Severity)]
    lines = [
        "## Protocol probes",
        "",
        "Checks of each defender's A2A surface, outside every rate above: a defender fails when a",
        "finding is at the run's threshold (fail_on) or above, a check broke, or the run could not be made.",
        "",
        "| defender | verdict | fail_on | " + " | ".join(severities) + " | errored checks |",
        "|---|---|---|" + "---|" * len(severities) + "---|",
    ]
    for row in report.progress.protocol_probes:
        verdict = "FAIL" if row.failed else ("pass" if row.counts.defended else "not run")
        counts = " | ".join(str(row.findings.get(severity, 0)) for severity in severities)
        lines.append(
            f"| {row.defender} | {verdict} | {row.fail_on.value} | {counts} | {row.errored_checks} |"
        )
    findings = [
        (run.defender, finding)
        for run in report.protocol_probe_runs
        if run.probe_report is not None
        for finding in sorted(run.probe_report.findings, key=lambda f: -f.severity.rank)
    ]
    if findings:
        lines += ["", "| defender | severity | check | interface | detail |", "|---|---|---|---|---|"]
        lines += [
            f"| {defender} | {finding.severity.value} | {finding.check_id} | "
            f"{_cell(finding.interface or 'the card')} | {_cell(finding.detail)} |"
            for defender, finding in findings
        ]
    return lines


def _section(report: CampaignReport, heading: str, text: CellText) -> list[str]:
    """One attackers x defenders table per objective under ``heading``."""
    spec = report.campaign.spec
    cells = {cell.cell: cell for cell in report.progress.cells}
    defenders = [d.name for d in spec.defenders]
    objectives = spec.objective_labels()
    lines = [f"## {heading}", ""]
    for objective in objectives:
        if len(objectives) > 1:
            lines += [f"### {objective}", ""]
        lines += ["| attacker | " + " | ".join(defenders) + " |", "|---|" + "---|" * len(defenders)]
        for attacker in (a.label for a in spec.attackers):
            keys = [CellKey(attacker=attacker, defender=d, objective=objective) for d in defenders]
            row = [text(report, cells[key]) for key in keys]
            lines.append(f"| {attacker} | " + " | ".join(row) + " |")
        lines.append("")
    return lines[:-1]


def _interval_text(asr: Interval) -> str:
    """``wins/trials = rate [low, high]`` in whole percents, or ``n/a`` without trials."""
    if asr.rate is None:
        return "n/a"
    return f"{asr.wins}/{asr.trials} = {asr.rate:.0%} [{asr.low:.0%}, {asr.high:.0%}]"


def _ended(report: CampaignReport, cell: CellProgress, outcome: Outcome) -> list[MatchSummary]:
    """The matches of ``cell`` that ended with ``outcome``."""
    return [m for m in report.matches if m.cell == cell.cell and m.outcome == outcome]


def _rate_text(report: CampaignReport, cell: CellProgress) -> str:
    text = _interval_text(cell.asr)
    turns = [m.turns_used for m in _ended(report, cell, "attacker_won")]
    if turns:
        text += f", turns to success {statistics.median(turns):g}"
    return text


def _other_text(report: CampaignReport, cell: CellProgress) -> str:
    counts = cell.counts
    parts = []
    if counts.error:
        kinds = sorted({m.error_kind or "error" for m in _ended(report, cell, "error")})
        parts.append(f"{counts.error} error ({', '.join(kinds)})")
    if counts.attacker_refused:
        parts.append(f"{counts.attacker_refused} attacker refused")
    if counts.canceled:
        parts.append(f"{counts.canceled} canceled")
    if counts.skipped:
        parts.append(f"{counts.skipped} skipped (token budget)")
    if cell.total > counts.finished:
        # A campaign that stopped early (see the provenance line): these never started.
        parts.append(f"{cell.total - counts.finished} not played")
    return "; ".join(parts) or "none"


__all__ = ["render_markdown"]
