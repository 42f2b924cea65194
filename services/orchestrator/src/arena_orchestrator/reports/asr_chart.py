"""The geometry of the HTML report's attack success rate chart; ``templates/chart.svg.j2`` draws it.

One horizontal bar per cell (wins / (wins + defences) on a 0 to 100% axis) with its Wilson 95%
interval as whiskers, grouped by defender, and a dashed line at ``fail_above`` when there is
one. Coordinates are SVG user units; the ones drawn with two decimals are strings already, so
the template only places them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from arena_orchestrator.campaign_models import CellProgress, Interval
from arena_orchestrator.reports._numbers import above, interval, pct

WIDTH, LABEL_WIDTH, PLOT_X, PLOT_WIDTH = 980, 330, 340, 480
ROW_HEIGHT, GROUP_HEIGHT, TOP = 22, 24, 26


@dataclass(frozen=True)
class ChartRow:
    """One cell's bar; ``group`` is the defender on the first row of its group (titled above it)."""

    testid: str
    tip: str
    label: str
    asr: Interval
    above: bool
    mid: float
    group: str | None = None
    group_y: int = 0
    bar_width: str = ""
    low_x: str = ""
    high_x: str = ""


@dataclass(frozen=True)
class AsrChart:
    """The rows, the axis and the threshold line of the chart."""

    rows: list[ChartRow]
    desc: str
    bottom: int
    height: int
    threshold_x: str | None = None
    threshold_label_x: str | None = None
    width: int = WIDTH
    label_width: int = LABEL_WIDTH
    plot_x: int = PLOT_X
    value_x: int = PLOT_X + PLOT_WIDTH + 12
    top: int = TOP
    ticks: list[dict[str, str | int]] = field(
        default_factory=lambda: [
            {"x": f"{PLOT_X + PLOT_WIDTH * percent / 100:g}", "percent": percent}
            for percent in (0, 25, 50, 75, 100)
        ]
    )


def _row(cell: CellProgress, strategies: Mapping[str, str], threshold: float | None, mid: float) -> ChartRow:
    key, asr = cell.cell, cell.asr
    tip = (
        f"{key.attacker} vs {key.defender} on {key.objective}: {pct(asr.rate)} "
        f"({asr.wins}/{asr.trials}), 95% interval {interval(asr)}"
    )
    row = ChartRow(
        testid=f"bar-{key.defender}-{key.attacker}-{key.objective}",
        tip=tip,
        label=f"{key.attacker} ({strategies.get(key.attacker, '?')})",
        asr=asr,
        above=above(asr, threshold),
        mid=mid,
    )
    if asr.rate is None:
        return row
    low, high = PLOT_X + asr.low * PLOT_WIDTH, PLOT_X + asr.high * PLOT_WIDTH
    return replace(row, bar_width=f"{asr.rate * PLOT_WIDTH:.2f}", low_x=f"{low:.2f}", high_x=f"{high:.2f}")


def asr_chart(
    cells: Sequence[CellProgress],
    *,
    strategies: Mapping[str, str],
    threshold: float | None,
    many_objectives: bool,
) -> AsrChart | None:
    """The chart of ``cells`` (in the order given, a group per run of one defender), labelled with
    each attacker's strategy (and the objective when ``many_objectives``); None without cells."""
    if not cells:
        return None
    rows: list[ChartRow] = []
    y, current = TOP, None
    for cell in cells:
        group, group_y = None, 0
        if cell.cell.defender != current:
            current = group = cell.cell.defender
            y += 6 if y > TOP else 0
            group_y = y + 16
            y += GROUP_HEIGHT
        row = _row(cell, strategies, threshold, y + ROW_HEIGHT / 2)
        label = f"{row.label} · {cell.cell.objective}" if many_objectives else row.label
        rows.append(replace(row, label=label, group=group, group_y=group_y))
        y += ROW_HEIGHT
    bottom = y + 4
    desc = "Horizontal bars: attack success rate per defender and attacker"
    desc += " and objective" if many_objectives else ""
    desc += ", with Wilson 95% interval whiskers, on a 0 to 100% axis."
    if threshold is None:
        return AsrChart(rows, desc, bottom, bottom + 6)
    line_x = PLOT_X + PLOT_WIDTH * min(max(threshold, 0.0), 1.0)
    return AsrChart(rows, desc, bottom, bottom + 22, f"{line_x:.2f}", f"{line_x + 4:.2f}")


__all__ = ["AsrChart", "ChartRow", "asr_chart"]
