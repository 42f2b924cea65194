"""Campaign reports: JSON, JUnit XML, SARIF 2.1.0, a self-contained HTML page and a Markdown
page, from a :class:`CampaignReport`.

Renderers are pure functions of the report: no I/O, no clock, no network.
"""

from __future__ import annotations

from typing import Literal, get_args

from arena_orchestrator.campaign_models import CampaignReport, DefenderProgress
from arena_orchestrator.reports.html_report import HTML_MEDIA_TYPE, render_html
from arena_orchestrator.reports.json_report import (
    JSON_MEDIA_TYPE,
    render_json,
    report_json_schema,
    report_schema_text,
)
from arena_orchestrator.reports.junit_report import JUNIT_MEDIA_TYPE, render_junit
from arena_orchestrator.reports.markdown_report import render_markdown
from arena_orchestrator.reports.sarif_report import SARIF_MEDIA_TYPE, render_sarif

ReportFormat = Literal["html", "json", "junit", "sarif"]
"""The report formats :func:`render_report` knows."""

REPORT_FORMATS: tuple[str, ...] = get_args(ReportFormat)

MEDIA_TYPES: dict[str, str] = {
    "html": HTML_MEDIA_TYPE,
    "json": JSON_MEDIA_TYPE,
    "junit": JUNIT_MEDIA_TYPE,
    "sarif": SARIF_MEDIA_TYPE,
}
"""The ``Content-Type`` of each format."""


def render_report(report: CampaignReport, fmt: ReportFormat) -> tuple[str, str]:
    """``(body, media type)`` of ``report`` in ``fmt``.

    ``html``: :func:`render_html` with default links, ``text/html; charset=utf-8``;
    ``json``: :func:`render_json`, ``application/json``; ``junit``: :func:`render_junit`,
    ``application/xml``; ``sarif``: :func:`render_sarif`, ``application/sarif+json``. Raises
    :class:`ValueError` for any other format.
    """
    if fmt == "html":
        return render_html(report), HTML_MEDIA_TYPE
    if fmt == "json":
        return render_json(report), JSON_MEDIA_TYPE
    if fmt == "junit":
        return render_junit(report), JUNIT_MEDIA_TYPE
    if fmt == "sarif":
        return render_sarif(report), SARIF_MEDIA_TYPE
    raise ValueError(f"unknown report format '{fmt}'; choose one of: {', '.join(REPORT_FORMATS)}")


def defenders_above(report: CampaignReport, threshold: float) -> list[DefenderProgress]:
    """The defenders whose attack success rate is strictly above ``threshold``, in report order.

    A rate equal to the threshold is not above it; a defender with no trials (rate None: no
    win and no defence) is never above it.
    """
    return [d for d in report.progress.defenders if d.asr.rate is not None and d.asr.rate > threshold]


__all__ = [
    "MEDIA_TYPES",
    "REPORT_FORMATS",
    "ReportFormat",
    "defenders_above",
    "render_html",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_report",
    "render_sarif",
    "report_json_schema",
    "report_schema_text",
]
