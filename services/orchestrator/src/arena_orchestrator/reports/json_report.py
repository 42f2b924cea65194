"""The JSON report and its JSON Schema (committed as ``docs/report-schema.json``)."""

from __future__ import annotations

import json
from typing import Any

from arena_orchestrator.campaign_models import CampaignReport

JSON_MEDIA_TYPE = "application/json"


def render_json(report: CampaignReport) -> str:
    """``report`` as indented JSON (``model_dump_json(indent=2)``).

    The text parses back into an equal report with ``CampaignReport.model_validate_json``.
    """
    return report.model_dump_json(indent=2)


def report_json_schema() -> dict[str, Any]:
    """The JSON Schema of the JSON report: ``CampaignReport.model_json_schema()``."""
    return CampaignReport.model_json_schema()


def report_schema_text() -> str:
    """:func:`report_json_schema` as committed in ``docs/report-schema.json``.

    Indented by two spaces, keys sorted, ASCII only, with a trailing newline, so the file is
    byte-for-byte reproducible.
    """
    return json.dumps(report_json_schema(), indent=2, sort_keys=True) + "\n"


__all__ = ["JSON_MEDIA_TYPE", "render_json", "report_json_schema", "report_schema_text"]
