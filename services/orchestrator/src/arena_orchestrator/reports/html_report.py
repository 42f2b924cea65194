"""The HTML report: one self-contained page (inline CSS and SVG, no script, no external URL).

The page works offline and from ``file://``: it loads nothing (a Content-Security-Policy
``<meta>`` forbids it, and an empty ``data:`` favicon stops the browser's ``/favicon.ico``
request), so nothing can fail to load.

The markup is the Jinja template ``templates/report.html.j2`` (the chart:
``chart.svg.j2``; the style sheet, inlined: ``report.css``), rendered with autoescape: every
value the template prints is escaped, so user text (names, descriptions, objectives, error
messages) can never become markup; control characters are shown as ``\\xNN`` first. This
module only prepares the values: order, numbers and labels (the chart's geometry:
:mod:`arena_orchestrator.reports.asr_chart`).

Key numbers carry ``data-testid`` attributes for browser tests:

* ``total``, ``done``, ``running``, ``tokens``, ``count-<outcome field>`` (``count-attacker_won``,
  ``count-defended``, ``count-attacker_refused``, ``count-error``, ``count-canceled``,
  ``count-skipped``), ``asr-overall``;
* ``asr-<defender>-<attacker>-<objective>`` per cell, ``defender-asr-<defender>`` and, with
  ``fail_above``, ``verdict-<defender>`` (``PASS``, ``FAIL`` or ``NO DATA``);
* ``bar-<defender>-<attacker>-<objective>`` per chart row, ``match-<match_id>`` per match row;
* ``category-asr-<defender>-<OWASP id>`` and ``objective-asr-<defender>-<objective>`` in the
  tables by category and by objective; ``frr-<defender>`` and ``defender-frr-<defender>``
  (false refusal rates) when the campaign has over-refusal probes;
* with protocol probes (``probes:``): ``probe-verdict-<defender>`` (``FAIL``, ``PASS`` or
  ``NOT RUN``), ``probe-findings-<defender>`` (the table of its findings: severity, check,
  interface, detail, remediation) and ``probe-<defender>-<severity>`` (findings per severity).

Rate elements also carry ``data-rate`` (a fraction, empty when there were no trials),
``data-wins``, ``data-trials``, ``data-low`` and ``data-high`` (the Wilson 95% interval).
Matches and repetitions are numbered from 1, as on the dashboard (the JSON report keeps the
0-based ``index`` and ``repetition``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, StrictUndefined

from arena_core.objective import Objective
from arena_core.probes.model import Severity
from arena_core.telemetry.spans import jaeger_trace_url
from arena_orchestrator.campaign_models import CampaignReport, CellProgress, MatchSummary
from arena_orchestrator.campaign_spec import OVER_REFUSAL, PROTOCOL_PROBES
from arena_orchestrator.ratings import PlayerRating, contests_from, fit_ratings
from arena_orchestrator.reports._numbers import above, interval, pct
from arena_orchestrator.reports.asr_chart import asr_chart

HTML_MEDIA_TYPE = "text/html; charset=utf-8"

_MAX_ERROR_CHARS = 300
_MAX_CHART_LABEL = 44

# C0 controls (but tab, newline, carriage return), DEL and lone surrogates: not displayable, and
# surrogates cannot even be encoded as UTF-8.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

_RATINGS_HEAD = (
    ("#", True),
    ("player", False),
    ("rating", True),
    ("95% interval", True),
    ("", False),
    ("won", True),
    ("lost", True),
)

_OUTCOME_FIELDS: tuple[tuple[str, str], ...] = (
    ("attacker_won", "attacker won"),
    ("defended", "defended"),
    ("attacker_refused", "attacker refused"),
    ("error", "error"),
    ("canceled", "canceled"),
    ("skipped", "skipped"),
)
_PROBE_LABELS = {"attacker_won": "answered", "defended": "refused"}
"""How an over-refusal probe's outcome reads: it is a harmless request, not an attack."""
_PROTOCOL_LABELS = {"attacker_won": "threshold met", "defended": "passed"}
"""How a protocol-probe run's outcome reads: findings at its ``fail_on`` or above, or none."""
_SEVERITIES = tuple(severity.value for severity in reversed(Severity))
"""Severities worst first, as the protocol-probe tables list them."""
_OUTCOME_HEAD = tuple((label, True) for _, label in _OUTCOME_FIELDS)
_RATE_HEAD = (("ASR", True), ("95% interval", True))
_CELL_HEAD = (
    ("defender", False),
    ("attacker", False),
    ("strategy", False),
    ("objective", False),
    ("matches", True),
    *_OUTCOME_HEAD,
    *_RATE_HEAD,
    ("tokens", True),
)
_MATCH_HEAD = (
    ("#", True),
    ("cell", False),
    ("rep.", True),
    ("outcome", False),
    ("turns", True),
    ("duration", True),
    ("tokens", True),
    ("attempts", True),
    ("error", False),
    ("links", False),
)


def _displayable(value: object) -> object:
    """Every printed value, before autoescape: control characters shown as ``\\xNN``."""
    if hasattr(value, "__html__"):  # markup (a macro's output): already escaped
        return value
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "-"
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%d %H:%M:%S UTC")


def _duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@cache
def _environment() -> Environment:
    """The templates, loaded once from the package (they ship in the wheel beside this module)."""
    environment = Environment(
        loader=PackageLoader("arena_orchestrator.reports", "templates"),
        autoescape=True,
        finalize=_displayable,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters.update(pct=pct, interval=interval, when=_when, duration=_duration, clip=_clip)
    return environment


class _Order:
    """Spec order of attackers, defenders and objectives (unknown names sort last, by name)."""

    def __init__(self, report: CampaignReport) -> None:
        spec = report.campaign.spec
        self.attackers = {a.label: i for i, a in enumerate(spec.attackers)}
        self.defenders = {d.name: i for i, d in enumerate(spec.defenders)}
        self.objectives = {o: i for i, o in enumerate(spec.objective_labels())}
        self.strategies = {a.label: a.strategy for a in spec.attackers}

    def defender(self, name: str) -> tuple[int, str]:
        return (self.defenders.get(name, len(self.defenders)), name)

    def cell(self, cell: CellProgress) -> tuple[int, str, int, str, int, str]:
        key = cell.cell
        return (
            *self.defender(key.defender),
            self.attackers.get(key.attacker, len(self.attackers)),
            key.attacker,
            self.objectives.get(key.objective, len(self.objectives)),
            key.objective,
        )


def _facts(report: CampaignReport) -> list[tuple[str, str]]:
    spec, progress = report.campaign.spec, report.progress
    budget = []
    if spec.budget.max_matches is not None:
        budget.append(f"at most {spec.budget.max_matches} matches")
    if spec.budget.max_tokens is not None:
        budget.append(f"at most {spec.budget.max_tokens} tokens")
    threshold = report.fail_above
    return [
        ("created", _when(progress.created_at)),
        ("started", _when(progress.started_at)),
        ("finished", _when(progress.finished_at)),
        ("report generated", _when(report.generated_at)),
        (
            "matrix",
            f"{len(spec.attackers)} attackers x {len(spec.defenders)} defenders x "
            f"{len(spec.objectives)} objectives x {spec.repetitions} repetitions "
            f"= {spec.attack_count} matches"
            + (f", plus {spec.probe_count} over-refusal probes" if spec.probe_count else "")
            + (
                f", plus {spec.protocol_probe_count} protocol-probe runs" if spec.protocol_probe_count else ""
            ),
        ),
        ("repetitions", str(spec.repetitions)),
        ("max turns", str(spec.max_turns)),
        ("concurrency", str(spec.concurrency)),
        ("match timeout", f"{spec.match_timeout_s:g} s"),
        ("seed", str(spec.seed)),
        ("budget", ", ".join(budget) or "none"),
        ("fail_above", "not set" if threshold is None else f"{threshold:g} ({pct(threshold)})"),
    ]


def _spec_rows(report: CampaignReport) -> dict[str, list[dict[str, str]]]:
    """The spec's attackers and objectives as the tables show them."""
    spec = report.campaign.spec
    attackers = [
        {
            "label": a.label,
            "strategy": a.strategy,
            "url": a.url or "built-in",
            "params": ", ".join(f"{k}={v}" for k, v in sorted(a.params.items())) or "-",
        }
        for a in spec.attackers
    ]
    objectives = [
        {
            "label": label,
            "judge": o.judge,
            "goal": _goal(o.objective),
            "pattern": o.objective.pattern or "-",
        }
        for label, o in zip(spec.objective_labels(), spec.objectives, strict=True)
    ]
    return {"attackers": attackers, "objectives": objectives}


def _goal(objective: Objective) -> str:
    if objective.kind == "rubric":
        return f"rubric: {objective.rubric}"
    if objective.kind == "phrase":
        return f"phrase: {objective.phrase}"
    return objective.goal


def _verdicts(report: CampaignReport) -> dict[str, dict[str, str]]:
    """Defender -> its verdict against ``fail_above`` (text and CSS class); empty without one."""
    threshold = report.fail_above
    if threshold is None:
        return {}
    verdicts = {}
    for defender in report.progress.defenders:
        if defender.asr.rate is None:
            text, css = "NO DATA", "nodata"
        elif above(defender.asr, threshold):
            text, css = "FAIL", "fail"
        else:
            text, css = "PASS", "pass"
        verdicts[defender.defender] = {"text": text, "css": css}
    return verdicts


def _protocol_probes(report: CampaignReport) -> list[dict[str, Any]]:
    """Per probed defender: its summary, verdict, findings (worst first) and checks that broke."""
    runs = {run.defender: run for run in report.protocol_probe_runs}
    rows = []
    for row in report.progress.protocol_probes:
        run = runs.get(row.defender)
        probe = run.probe_report if run is not None else None
        if row.failed:
            verdict = {"text": "FAIL", "css": "fail"}
        elif row.counts.defended:
            verdict = {"text": "PASS", "css": "pass"}
        else:
            verdict = {"text": "NOT RUN", "css": "nodata"}
        findings = sorted(probe.findings, key=lambda f: -f.severity.rank) if probe else []
        results = probe.results if probe else []
        rows.append(
            {
                "row": row,
                "verdict": verdict,
                "findings": findings,
                "errored": [r for r in results if r.status == "error"],
                "skipped": [r for r in results if r.status == "skipped"],
                "checks": len(results),
                "requests": probe.requests if probe else 0,
                "stopped": probe.stopped if probe else None,
                "target": probe.target if probe else None,
                "error": (f"{run.error_kind}: {run.error}" if run.error_kind else run.error or "")
                if run is not None and run.outcome == "error"
                else "",
            }
        )
    return rows


def _ratings(report: CampaignReport) -> dict[str, Any] | None:
    """The campaign's own Bradley-Terry table, with where each interval bar sits (0-100%)."""
    ratings = fit_ratings(contests_from(report.matches))
    rows = [*ratings.attackers, *ratings.defenders]
    if not rows:
        return None
    lowest = min(row.low for row in rows)
    span = max(max(row.high for row in rows) - lowest, 1.0)

    def at(value: float) -> str:
        return f"{(value - lowest) / span * 100:.1f}"

    def side(players: list[PlayerRating]) -> list[dict[str, Any]]:
        return [
            {
                "name": p.name,
                "rating": f"{p.rating:.0f}",
                "interval": f"{p.low:.0f} to {p.high:.0f}",
                "left": at(p.low),
                "width": f"{max((p.high - p.low) / span * 100, 0.5):.1f}",
                "mark": at(p.rating),
                "wins": p.wins,
                "losses": p.losses,
            }
            for p in players
        ]

    return {
        "matches": ratings.matches,
        "sides": [
            ("Attackers", "attackers", side(ratings.attackers)),
            ("Defenders", "defenders", side(ratings.defenders)),
        ],
    }


def _match_rows(report: CampaignReport, match_url: Callable[[str], str]) -> list[dict[str, Any]]:
    """The matches in index order, numbered from 1, with their outcome, error and links."""
    rows = []
    outcome_labels = dict(_OUTCOME_FIELDS)
    for match in sorted(report.matches, key=lambda m: m.index):
        state = match.outcome if match.disposition == "played" and match.outcome else match.disposition
        label = outcome_labels.get(state, state)
        if match.cell.attacker == OVER_REFUSAL and state in _PROBE_LABELS:
            label = _PROBE_LABELS[state]
        if match.cell.attacker == PROTOCOL_PROBES and state in _PROTOCOL_LABELS:
            label = _PROTOCOL_LABELS[state]
        rows.append(
            {
                "summary": match,
                "number": match.index + 1,
                "repetition": match.repetition + 1,
                "state": state,
                "state_label": label,
                "error": _error(match),
                "transcript_url": match_url(match.match_id),
                "trace_url": jaeger_trace_url(report.jaeger_url, match.trace_id),
            }
        )
    return rows


def _error(match: MatchSummary) -> str:
    if not (match.error or match.error_kind):
        return ""
    return f"{match.error_kind + ': ' if match.error_kind else ''}{match.error or ''}"


def _default_match_url(match_id: str) -> str:
    return f"/v1/matches/{quote(match_id, safe='')}"


def render_html(report: CampaignReport, *, match_url: Callable[[str], str] | None = None) -> str:
    """``report`` as one self-contained HTML5 page.

    The page has the campaign facts and spec, headline counts and tokens, an SVG chart of the
    attack success rate per defender x attacker (x objective when there are several) with
    Wilson 95% interval whiskers, per-defender rates (with PASS/FAIL against
    ``report.fail_above`` when set: FAIL when strictly above; NO DATA when there were no
    trials), a table per cell and one row per match.

    Each match row links to its transcript at ``match_url(match_id)`` (default
    ``/v1/matches/{match_id}``, the id URL-quoted) and, when ``report.jaeger_url`` (http or
    https) and the match's ``trace_id`` are both set, to ``{jaeger_url}/trace/{trace_id}``.
    Those trace links are the only absolute URLs the page references; it loads no resource.
    """
    order = _Order(report)
    cells = sorted(report.progress.cells, key=order.cell)
    threshold = report.fail_above
    defender_head = (("defender", False), *_OUTCOME_HEAD, *_RATE_HEAD)
    refusals = {row.defender: row for row in report.progress.over_refusal}
    if refusals:
        defender_head += (("FRR", True), ("FRR 95% interval", True))
    if threshold is not None:
        defender_head += (("verdict", False),)
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            campaign=report.campaign,
            spec=report.campaign.spec,
            progress=report.progress,
            threshold=threshold,
            csp=_CSP,
            facts=_facts(report),
            **_spec_rows(report),
            outcome_fields=_OUTCOME_FIELDS,
            chart=asr_chart(
                cells,
                strategies=order.strategies,
                threshold=threshold,
                many_objectives=len({c.cell.objective for c in cells}) > 1
                or len(report.campaign.spec.objectives) > 1,
            ),
            max_chart_label=_MAX_CHART_LABEL,
            defender_head=defender_head,
            refusals=refusals,
            category_head=(("defender", False), ("category", False), *_OUTCOME_HEAD, *_RATE_HEAD),
            objective_head=(
                ("defender", False),
                ("objective", False),
                ("OWASP", False),
                *_OUTCOME_HEAD,
                *_RATE_HEAD,
            ),
            defenders=sorted(report.progress.defenders, key=lambda d: order.defender(d.defender)),
            protocol_probes=_protocol_probes(report),
            severities=_SEVERITIES,
            probe_head=(
                ("defender", False),
                ("verdict", False),
                ("fail_on", False),
                *((severity, True) for severity in _SEVERITIES),
                ("worst", False),
                ("checks", True),
                ("errored", True),
                ("skipped", True),
                ("requests", True),
            ),
            verdicts=_verdicts(report),
            ratings=_ratings(report),
            ratings_head=_RATINGS_HEAD,
            cell_head=_CELL_HEAD,
            cells=cells,
            strategies=order.strategies,
            match_head=_MATCH_HEAD,
            matches=_match_rows(report, match_url or _default_match_url),
            max_error_chars=_MAX_ERROR_CHARS,
        )
    )


__all__ = ["HTML_MEDIA_TYPE", "render_html"]
