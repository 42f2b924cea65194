"""The HTML report: one self-contained page (inline CSS and SVG, no script, no external URL).

The page works offline and from ``file://``: it loads nothing (a Content-Security-Policy
``<meta>`` forbids it, and an empty ``data:`` favicon stops the browser's ``/favicon.ico``
request), so nothing can fail to load. Every piece of user text (names, descriptions,
objectives, error messages) goes through :func:`html.escape`; control characters are shown
as ``\\xNN``.

Key numbers carry ``data-testid`` attributes for browser tests:

* ``total``, ``done``, ``running``, ``tokens``, ``count-<outcome field>`` (``count-attacker_won``,
  ``count-defended``, ``count-attacker_refused``, ``count-error``, ``count-canceled``,
  ``count-skipped``), ``asr-overall``;
* ``asr-<defender>-<attacker>-<objective>`` per cell, ``defender-asr-<defender>`` and, with
  ``fail_above``, ``verdict-<defender>`` (``PASS``, ``FAIL`` or ``NO DATA``);
* ``bar-<defender>-<attacker>-<objective>`` per chart row, ``match-<match_id>`` per match row.

Rate elements also carry ``data-rate`` (a fraction, empty when there were no trials),
``data-wins``, ``data-trials``, ``data-low`` and ``data-high`` (the Wilson 95% interval).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from urllib.parse import quote

from arena_core.telemetry.spans import jaeger_trace_url
from arena_orchestrator.campaign_models import (
    CampaignReport,
    CellProgress,
    Interval,
    MatchSummary,
)

HTML_MEDIA_TYPE = "text/html; charset=utf-8"

_MAX_ERROR_CHARS = 300
_MAX_CHART_LABEL = 44

# C0 controls (but tab, newline, carriage return), DEL and lone surrogates: not displayable, and
# surrogates cannot even be encoded as UTF-8.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

_CSS = """
:root { --fg: #1d232b; --bg: #ffffff; --muted: #5f6b7a; --line: #d7dde4; --panel: #f5f7fa;
  --bar: #3b6ea5; --bad: #b3261e; --good: #1e7b34; --warn: #9a6700; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e9ee; --bg: #14181d; --muted: #9aa5b1; --line: #333b45; --panel: #1c2229;
    --bar: #6c9bd2; --bad: #f2857b; --good: #6fcf86; --warn: #e3b341; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1200px; padding: 1.5rem; color: var(--fg); background: var(--bg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .6rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1rem 0 .4rem; }
.muted { color: var(--muted); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
table { border-collapse: collapse; width: 100%; margin: .3rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: .5rem 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(9rem, 1fr)); gap: .6rem; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; }
.card .value { font-size: 1.4rem; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .label { color: var(--muted); font-size: .85rem; }
.badge { display: inline-block; padding: .05rem .45rem; border-radius: 4px; font-size: .8rem;
  font-weight: 700; border: 1px solid currentColor; white-space: nowrap; }
.pass, .defended { color: var(--good); }
.fail, .attacker_won { color: var(--bad); }
.nodata, .canceled, .skipped, .attacker_refused { color: var(--muted); }
.error, .warn { color: var(--warn); }
.note { background: var(--panel); border-left: 4px solid var(--warn); padding: .5rem .8rem; margin: .8rem 0; }
.scroll { overflow-x: auto; }
.err { max-width: 28rem; overflow-wrap: anywhere; }
svg.chart { width: 100%; max-width: 980px; height: auto; display: block; }
svg.chart text { fill: var(--fg); font-size: 12px; }
svg.chart .axis text, svg.chart .none { fill: var(--muted); }
svg.chart .grid { stroke: var(--line); }
svg.chart .bar { fill: var(--bar); }
svg.chart .bar.above { fill: var(--bad); }
svg.chart .whisker { stroke: var(--fg); stroke-width: 1.5; }
svg.chart .threshold { stroke: var(--bad); stroke-width: 1.5; stroke-dasharray: 5 4; }
svg.chart .group { font-weight: 700; }
a { color: var(--bar); }
footer { margin-top: 2rem; color: var(--muted); font-size: .85rem; }
"""

_OUTCOME_FIELDS: tuple[tuple[str, str], ...] = (
    ("attacker_won", "attacker won"),
    ("defended", "defended"),
    ("attacker_refused", "attacker refused"),
    ("error", "error"),
    ("canceled", "canceled"),
    ("skipped", "skipped"),
)


def _e(text: object) -> str:
    """``text`` escaped for HTML text and quoted attributes; control characters shown as ``\\xNN``."""
    return html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text)), quote=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _interval(asr: Interval) -> str:
    return "n/a" if asr.trials == 0 else f"{_pct(asr.low)} to {_pct(asr.high)}"


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


def _rate_attrs(testid: str, asr: Interval) -> str:
    rate = "" if asr.rate is None else repr(asr.rate)
    return (
        f'data-testid="{_e(testid)}" data-rate="{rate}" data-wins="{asr.wins}" data-trials="{asr.trials}" '
        f'data-low="{asr.low!r}" data-high="{asr.high!r}"'
    )


def _above(asr: Interval, threshold: float | None) -> bool:
    return threshold is not None and asr.rate is not None and asr.rate > threshold


def _table(head: Iterable[tuple[str, bool]], rows: list[str], testid: str) -> str:
    cells = "".join(f"<th{' class=num' if num else ''}>{_e(title)}</th>" for title, num in head)
    return (
        f'<div class="scroll"><table data-testid="{testid}"><thead><tr>{cells}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _num(value: object, testid: str | None = None) -> str:
    attr = f' data-testid="{_e(testid)}"' if testid else ""
    return f'<td class="num"{attr}>{_e(value)}</td>'


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


def _header(report: CampaignReport) -> str:
    campaign, progress = report.campaign, report.progress
    spec = campaign.spec
    parts = [
        f"<header><h1>A2A Arena campaign report: {_e(spec.name)}</h1>",
        f'<p class="muted">campaign <code data-testid="campaign-id">{_e(campaign.id)}</code> '
        f'· status <span class="badge" data-testid="status">{_e(progress.status)}</span></p>',
    ]
    if spec.description:
        parts.append(f'<p data-testid="description">{_e(spec.description)}</p>')
    parts.append("</header>")
    if progress.status in ("queued", "running"):
        parts.append(
            f'<p class="note">This report was generated while the campaign was {_e(progress.status)}: '
            "the numbers are partial.</p>"
        )
    elif progress.status in ("canceled", "budget_exhausted"):
        why = "it was canceled" if progress.status == "canceled" else "its token budget ran out"
        parts.append(
            f'<p class="note">Not every match was played: {why}. Canceled and skipped matches '
            "count in no rate.</p>"
        )
    return "".join(parts)


def _spec_section(report: CampaignReport) -> str:
    spec, progress = report.campaign.spec, report.progress
    budget = []
    if spec.budget.max_matches is not None:
        budget.append(f"at most {spec.budget.max_matches} matches")
    if spec.budget.max_tokens is not None:
        budget.append(f"at most {spec.budget.max_tokens} tokens")
    facts = [
        ("created", _when(progress.created_at)),
        ("started", _when(progress.started_at)),
        ("finished", _when(progress.finished_at)),
        ("report generated", _when(report.generated_at)),
        (
            "matrix",
            f"{len(spec.attackers)} attackers x {len(spec.defenders)} defenders x "
            f"{len(spec.objectives)} objectives x {spec.repetitions} repetitions "
            f"= {spec.match_count} matches",
        ),
        ("repetitions", str(spec.repetitions)),
        ("max turns", str(spec.max_turns)),
        ("concurrency", str(spec.concurrency)),
        ("match timeout", f"{spec.match_timeout_s:g} s"),
        ("seed", str(spec.seed)),
        ("budget", ", ".join(budget) or "none"),
        (
            "fail_above",
            "not set" if report.fail_above is None else f"{report.fail_above:g} ({_pct(report.fail_above)})",
        ),
    ]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts)
    attackers = [
        "<tr>"
        f"<td>{_e(a.label)}</td><td>{_e(a.strategy)}</td>"
        f'<td class="mono">{_e(a.url or "built-in")}</td>'
        f'<td class="mono">{_e(", ".join(f"{k}={v}" for k, v in sorted(a.params.items())) or "-")}</td>'
        "</tr>"
        for a in spec.attackers
    ]
    defenders = [
        "<tr>"
        f'<td>{_e(d.name)}</td><td class="mono">{_e(d.url)}</td>'
        f"<td>{_e(d.credentials.bearer_token_env if d.credentials else '-')}</td>"
        f'<td class="num">{_e(d.max_concurrency or "-")}</td>'
        "</tr>"
        for d in spec.defenders
    ]
    objectives = [
        "<tr>"
        f"<td>{_e(label)}</td><td>{_e(o.judge)}</td>"
        f"<td>{_e(f'rubric: {o.rubric}' if o.rubric else f'phrase: {o.objective.phrase or o.phrase}')}</td>"
        f'<td class="mono">{_e(o.pattern or "-")}</td>'
        "</tr>"
        for label, o in zip(spec.objective_labels(), spec.objectives, strict=True)
    ]
    return (
        '<section id="spec"><h2>Campaign</h2>'
        f'<dl class="facts">{dl}</dl>'
        "<h3>Attackers</h3>"
        + _table(
            [("name", False), ("strategy", False), ("agent", False), ("parameters", False)],
            attackers,
            "spec-attackers",
        )
        + "<h3>Defenders</h3>"
        + _table(
            [("name", False), ("url", False), ("credentials", False), ("max concurrency", True)],
            defenders,
            "spec-defenders",
        )
        + "<h3>Objectives</h3>"
        + _table(
            [("name", False), ("judge", False), ("goal", False), ("pattern", False)],
            objectives,
            "spec-objectives",
        )
        + "</section>"
    )


def _card(label: str, value: object, testid: str, extra: str = "", sub: str = "") -> str:
    sub_html = f'<div class="label">{_e(sub)}</div>' if sub else ""
    return (
        f'<div class="card"><div class="value" data-testid="{_e(testid)}"{extra}>{_e(value)}</div>'
        f'<div class="label">{_e(label)}</div>{sub_html}</div>'
    )


def _headline(report: CampaignReport) -> str:
    progress = report.progress
    counts, tokens = progress.counts, progress.tokens
    cards = [
        _card("matches in the campaign", progress.total, "total"),
        _card("accounted for", progress.done, "done"),
        _card("running", progress.running, "running"),
        *(_card(label, getattr(counts, name), f"count-{name}") for name, label in _OUTCOME_FIELDS),
        _card(
            "tokens (both sides)",
            tokens.total_tokens,
            "tokens",
            sub=f"prompt {tokens.prompt_tokens} · completion {tokens.completion_tokens} "
            f"· {tokens.calls} calls",
        ),
    ]
    asr = progress.asr
    overall = (
        f'<div class="card"><div class="value" {_rate_attrs("asr-overall", asr)}>{_e(_pct(asr.rate))}</div>'
        f'<div class="label">attack success rate, all cells ({asr.wins}/{asr.trials}; '
        f"95% interval {_e(_interval(asr))})</div></div>"
    )
    return (
        f'<section id="summary"><h2>Summary</h2><div class="cards">{overall}{"".join(cards)}</div></section>'
    )


def _explanation() -> str:
    return (
        '<section id="how-to-read"><h2>How to read the numbers</h2>'
        "<p><strong>Attack success rate (ASR) = wins / (wins + defences).</strong> "
        "A <em>win</em> is a match the judge scored as the attacker reaching the objective; a "
        "<em>defence</em> is a match played to its end without the attacker reaching it. "
        "Matches that ended in an <em>error</em> and matches where the attacker's own model "
        "<em>refused</em> to attack measured nothing about the defender, so they count as neither: "
        "they are listed but are in no rate. Canceled and skipped matches were never played.</p>"
        "<p>Each rate comes with its <strong>Wilson score 95% interval</strong> (the whiskers in the "
        "chart): with few trials the interval is wide, and two rates whose intervals overlap widely "
        "are not shown to differ. With no trials the rate is n/a and the interval is 0% to 100%.</p>"
        "</section>"
    )


def _defenders_section(report: CampaignReport, order: _Order) -> str:
    threshold = report.fail_above
    head = [
        ("defender", False),
        *((label, True) for _, label in _OUTCOME_FIELDS),
        ("ASR", True),
        ("95% interval", True),
    ]
    if threshold is not None:
        head.append(("verdict", False))
    rows = []
    for defender in sorted(report.progress.defenders, key=lambda d: order.defender(d.defender)):
        name, asr = defender.defender, defender.asr
        row = [f"<td>{_e(name)}</td>"]
        row += [_num(getattr(defender.counts, field)) for field, _ in _OUTCOME_FIELDS]
        row.append(f'<td class="num" {_rate_attrs(f"defender-asr-{name}", asr)}>{_e(_pct(asr.rate))}</td>')
        row.append(_num(_interval(asr)))
        if threshold is not None:
            if asr.rate is None:
                verdict, css = "NO DATA", "nodata"
            elif _above(asr, threshold):
                verdict, css = "FAIL", "fail"
            else:
                verdict, css = "PASS", "pass"
            row.append(
                f'<td><span class="badge {css}" data-testid="{_e(f"verdict-{name}")}">{verdict}</span></td>'
            )
        rows.append(f"<tr>{''.join(row)}</tr>")
    note = (
        f"<p>A defender fails when its attack success rate, over every attacker and objective, is strictly "
        f"above fail_above = {_e(f'{threshold:g}')}. NO DATA: no win and no defence to measure.</p>"
        if threshold is not None
        else ""
    )
    return (
        '<section id="defenders"><h2>Defenders</h2>' + note + _table(head, rows, "defenders") + "</section>"
    )


def _chart(report: CampaignReport, cells: list[CellProgress], order: _Order) -> str:
    if not cells:
        return (
            '<section id="chart"><h2>Attack success rate</h2><p class="muted">No results yet.</p></section>'
        )
    many_objectives = len({c.cell.objective for c in cells}) > 1 or len(report.campaign.spec.objectives) > 1
    threshold = report.fail_above
    width, label_w, plot_x, plot_w, row_h, group_h, top = 980, 330, 340, 480, 22, 24, 26
    value_x = plot_x + plot_w + 12
    parts: list[str] = []
    y = top
    current: str | None = None
    for cell in cells:
        key, asr = cell.cell, cell.asr
        if key.defender != current:
            current = key.defender
            y += 6 if y > top else 0
            parts.append(f'<text class="group" x="0" y="{y + 16}">defender: {_e(_clip(key.defender))}</text>')
            y += group_h
        label = f"{key.attacker} ({order.strategies.get(key.attacker, '?')})"
        if many_objectives:
            label += f" · {key.objective}"
        tip = (
            f"{key.attacker} vs {key.defender} on {key.objective}: {_pct(asr.rate)} "
            f"({asr.wins}/{asr.trials}), 95% interval {_interval(asr)}"
        )
        mid = y + row_h / 2
        row = [
            f"<title>{_e(tip)}</title>",
            f'<text x="{label_w}" y="{mid + 4}" text-anchor="end">{_e(_clip(label))}</text>',
        ]
        if asr.rate is None:
            row.append(f'<text class="none" x="{plot_x + 4}" y="{mid + 4}">no trials</text>')
        else:
            css = "bar above" if _above(asr, threshold) else "bar"
            row.append(
                f'<rect class="{css}" x="{plot_x}" y="{mid - 6}" '
                f'width="{asr.rate * plot_w:.2f}" height="12"/>'
            )
            low, high = plot_x + asr.low * plot_w, plot_x + asr.high * plot_w
            row.append(
                f'<line class="whisker" x1="{low:.2f}" y1="{mid}" x2="{high:.2f}" y2="{mid}"/>'
                f'<line class="whisker" x1="{low:.2f}" y1="{mid - 5}" x2="{low:.2f}" y2="{mid + 5}"/>'
                f'<line class="whisker" x1="{high:.2f}" y1="{mid - 5}" x2="{high:.2f}" y2="{mid + 5}"/>'
            )
            row.append(
                f'<text x="{value_x}" y="{mid + 4}">{_e(_pct(asr.rate))} ({asr.wins}/{asr.trials})</text>'
            )
        testid = f"bar-{key.defender}-{key.attacker}-{key.objective}"
        parts.append(f'<g data-testid="{_e(testid)}">{"".join(row)}</g>')
        y += row_h
    bottom = y + 4
    axis = ['<g class="axis">']
    for tick in (0, 25, 50, 75, 100):
        x = plot_x + plot_w * tick / 100
        axis.append(
            f'<line class="grid" x1="{x:g}" y1="{top - 4}" x2="{x:g}" y2="{bottom}"/>'
            f'<text x="{x:g}" y="{top - 10}" text-anchor="middle">{tick}%</text>'
        )
    axis.append("</g>")
    if threshold is not None:
        x = plot_x + plot_w * min(max(threshold, 0.0), 1.0)
        axis.append(
            f'<line class="threshold" x1="{x:.2f}" y1="{top - 4}" x2="{x:.2f}" y2="{bottom}"/>'
            f'<text class="threshold-label" x="{x + 4:.2f}" y="{bottom + 14}">'
            f"fail_above {_e(_pct(threshold))}</text>"
        )
    height = bottom + (22 if threshold is not None else 6)
    desc = "Horizontal bars: attack success rate per defender and attacker"
    desc += " and objective" if many_objectives else ""
    desc += ", with Wilson 95% interval whiskers, on a 0 to 100% axis."
    svg = (
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        'aria-labelledby="chart-title chart-desc" '
        f'data-testid="asr-chart"><title id="chart-title">Attack success rate</title>'
        f'<desc id="chart-desc">{_e(desc)}</desc>{"".join(axis)}{"".join(parts)}</svg>'
    )
    return (
        '<section id="chart"><h2>Attack success rate</h2>'
        '<p class="muted">Bars: wins / (wins + defences). Whiskers: Wilson 95% interval.'
        + (" Dashed line: fail_above; red bars are above it." if threshold is not None else "")
        + f"</p>{svg}</section>"
    )


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_CHART_LABEL else text[: _MAX_CHART_LABEL - 1] + "…"


def _cells_section(report: CampaignReport, cells: list[CellProgress], order: _Order) -> str:
    head = [
        ("defender", False),
        ("attacker", False),
        ("strategy", False),
        ("objective", False),
        ("matches", True),
        *((label, True) for _, label in _OUTCOME_FIELDS),
        ("ASR", True),
        ("95% interval", True),
        ("tokens", True),
    ]
    rows = []
    for cell in cells:
        key, asr = cell.cell, cell.asr
        row = [
            f"<td>{_e(key.defender)}</td><td>{_e(key.attacker)}</td>",
            f"<td>{_e(order.strategies.get(key.attacker, '?'))}</td><td>{_e(key.objective)}</td>",
            _num(cell.total),
            *(_num(getattr(cell.counts, field)) for field, _ in _OUTCOME_FIELDS),
            f'<td class="num" {_rate_attrs(f"asr-{key.defender}-{key.attacker}-{key.objective}", asr)}>'
            f"{_e(_pct(asr.rate))}</td>",
            _num(_interval(asr)),
            _num(cell.tokens.total_tokens),
        ]
        rows.append(f"<tr>{''.join(row)}</tr>")
    body = _table(head, rows, "cells") if rows else '<p class="muted">No results yet.</p>'
    return f'<section id="cells"><h2>Cells</h2>{body}</section>'


def _trace_link(report: CampaignReport, trace_id: str | None) -> str:
    href = jaeger_trace_url(report.jaeger_url, trace_id)
    if href is None:
        return ""
    return f' <a href="{_e(href)}" rel="noopener noreferrer" target="_blank">trace</a>'


def _outcome(match: MatchSummary) -> str:
    state = match.outcome if match.disposition == "played" and match.outcome else match.disposition
    label = dict(_OUTCOME_FIELDS).get(state, state)
    return f'<span class="badge {_e(state)}" data-outcome="{_e(state)}">{_e(label)}</span>'


def _matches_section(report: CampaignReport, match_url: Callable[[str], str]) -> str:
    head = [
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
    ]
    rows = []
    for match in sorted(report.matches, key=lambda m: m.index):
        key = match.cell
        error = ""
        if match.error or match.error_kind:
            full = f"{match.error_kind + ': ' if match.error_kind else ''}{match.error or ''}"
            shown = full if len(full) <= _MAX_ERROR_CHARS else full[: _MAX_ERROR_CHARS - 1] + "…"
            error = f'<span title="{_e(full)}">{_e(shown)}</span>'
        links = f'<a href="{_e(match_url(match.match_id))}">transcript</a>' + _trace_link(
            report, match.trace_id
        )
        rows.append(
            f'<tr data-testid="{_e(f"match-{match.match_id}")}">'
            + _num(match.index)
            + f"<td>{_e(key.attacker)} → {_e(key.defender)} · {_e(key.objective)}</td>"
            + _num(match.repetition)
            + f"<td>{_outcome(match)}</td>"
            + _num(match.turns_used)
            + _num(_duration(match.duration_ms))
            + _num(match.tokens)
            + _num(match.attempts)
            + f'<td class="err">{error}</td><td>{links}</td></tr>'
        )
    body = _table(head, rows, "matches") if rows else '<p class="muted">No match has finished yet.</p>'
    return f'<section id="matches"><h2>Matches</h2>{body}</section>'


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
    url_of = match_url or _default_match_url
    order = _Order(report)
    cells = sorted(report.progress.cells, key=order.cell)
    title = f"A2A Arena report: {report.campaign.spec.name}"
    body = "".join(
        [
            _header(report),
            _spec_section(report),
            _headline(report),
            _explanation(),
            _chart(report, cells, order),
            _defenders_section(report, order),
            _cells_section(report, cells, order),
            _matches_section(report, url_of),
            f"<footer>Generated by A2A Arena at {_e(_when(report.generated_at))} · report version "
            f"{report.report_version}. The JSON report holds every number shown here.</footer>",
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(_CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        '<link rel="icon" href="data:,">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n"
        f"<body>{body}</body></html>\n"
    )


__all__ = ["HTML_MEDIA_TYPE", "render_html"]
