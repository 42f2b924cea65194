"""The orchestrator's REST API under ``/v1`` (OpenAPI at ``/openapi.json``).

Every error is JSON ``{"error": {"kind", "message", "problems"}}`` with the
status its :class:`~arena_core.errors.ArenaError` class names: 400 invalid
input (``problems`` lists each spec problem with its line), 404 unknown ids,
413 a spec above ``ARENA_ORCHESTRATOR_MAX_SPEC_BYTES`` (or any body above
``ARENA_MAX_REQUEST_BYTES``, refused by ``BodySizeLimit`` in app.py), 415 an
unsupported content type, 422 malformed parameters, 429 (with ``Retry-After``) a
submission while ``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS`` campaigns are unfinished,
503 shared state unavailable.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from arena_core.errors import ArenaError, InvalidInputError
from arena_core.objective import CATEGORY_PATTERN
from arena_core.owasp import parse_category_threshold
from arena_orchestrator.campaign_models import CampaignProgress, MatchRecord, MatchSummary
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.errors import TooManyCampaignsError
from arena_orchestrator.leaderboard import Leaderboard
from arena_orchestrator.reports import MEDIA_TYPES, render_html, render_report
from arena_orchestrator.spec_loader import CampaignSpecError, load_campaign_spec

CAMPAIGN_ID_PATTERN = r"^c-[0-9a-f]{16}$"
MATCH_ID_PATTERN = r"^c-[0-9a-f]{16}-m[0-9]{6,}$"
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml", "text/plain")


class ApiError(ArenaError):
    """An HTTP-level problem with a request (size, content type)."""

    kind = "bad_request"
    http_status = 400
    exit_code = 2

    def __init__(self, message: str, *, status: int, kind: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_kind = kind


class ErrorBody(BaseModel):
    """The error object of every failed request."""

    kind: str
    message: str
    problems: list[dict[str, Any]] = []


class ErrorResponse(BaseModel):
    """``{"error": {...}}``."""

    error: ErrorBody


class CampaignList(BaseModel):
    """``GET /v1/campaigns``."""

    campaigns: list[CampaignProgress]


class MatchList(BaseModel):
    """``GET /v1/campaigns/{id}/matches``: recorded matches by index."""

    matches: list[MatchSummary]
    total: int
    offset: int


def error_response(
    status: int, kind: str, message: str, problems: list[dict[str, Any]] | None = None
) -> JSONResponse:
    """The JSON error body with ``status``."""
    body = {"error": {"kind": kind, "message": message, "problems": problems or []}}
    return JSONResponse(body, status_code=status)


def arena_error_response(exc: ArenaError) -> JSONResponse:
    """The response for an ArenaError: its own status, kind and message; spec problems listed."""
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.error_kind, exc.message)
    problems: list[dict[str, Any]] = []
    if isinstance(exc, CampaignSpecError):
        problems = [{"location": p.location, "line": p.line, "message": p.message} for p in exc.problems]
    response = error_response(exc.http_status, exc.kind, exc.message, problems)
    if isinstance(exc, TooManyCampaignsError):
        response.headers["Retry-After"] = str(exc.retry_after_s)
    return response


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in (
        (400, "invalid input"),
        (404, "unknown id"),
        (422, "malformed parameters"),
        (503, "shared state unavailable"),
    )
}

_TOO_MANY_CAMPAIGNS: dict[str, Any] = {
    "model": ErrorResponse,
    "description": (
        "too many unfinished campaigns (ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS); "
        "error kind too_many_campaigns"
    ),
    "headers": {
        "Retry-After": {
            "description": "Seconds to wait before submitting again.",
            "schema": {"type": "integer", "minimum": 0},
        }
    },
}

_SPEC_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "A campaign spec (examples/campaign.yaml) as YAML or JSON.",
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/CampaignSpec"}},
            "application/yaml": {"schema": {"type": "string"}},
        },
    }
}


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(f"the spec is {declared} bytes; the limit is {limit}", status=413, kind="too_large")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise ApiError(f"the spec is over the limit of {limit} bytes", status=413, kind="too_large")
    return bytes(body)


CampaignId = Annotated[str, Path(pattern=CAMPAIGN_ID_PATTERN, description="A campaign id, c-<16 hex>")]
MatchId = Annotated[str, Path(pattern=MATCH_ID_PATTERN, description="A match id, <campaign id>-m<index>")]


def _relative_match_url(match_id: str) -> str:
    return f"../../matches/{quote(match_id, safe='')}"


SINCE_PATTERN = r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$"
"""An ISO 8601 date, or date and time with an optional zone (``since`` of the leaderboard)."""


def _since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(f"since: '{text}' is not a real date or time") from None


def build_api_router(service: CampaignService, *, max_spec_bytes: int) -> APIRouter:
    """The ``/v1`` routes over ``service``."""
    router = APIRouter(prefix="/v1", responses=_ERRORS)

    @router.post(
        "/campaigns",
        status_code=201,
        response_model=CampaignProgress,
        openapi_extra=_SPEC_BODY,
        responses={413: {"model": ErrorResponse}, 415: {"model": ErrorResponse}, 429: _TOO_MANY_CAMPAIGNS},
        summary="Submit a campaign",
    )
    async def submit_campaign(request: Request, response: Response) -> CampaignProgress:
        """Validate the spec, store the campaign and queue every match. 201 with its progress.

        429 (``too_many_campaigns``, with ``Retry-After``) while
        ``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS`` campaigns are unfinished."""
        media_type = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        body = await _read_body(request, max_spec_bytes)
        if media_type == "application/json":
            # Parsed by the spec loader too: problems get line numbers, duplicate keys are caught.
            spec = load_campaign_spec(body, source="request.json", max_bytes=max_spec_bytes)
        elif media_type in YAML_TYPES:
            spec = load_campaign_spec(body, source="request body", max_bytes=max_spec_bytes)
        else:
            raise ApiError(
                f"unsupported content type '{media_type}': send application/json or application/yaml",
                status=415,
                kind="unsupported_media_type",
            )
        progress = await service.submit(spec)
        response.headers["Location"] = f"/v1/campaigns/{progress.id}"
        return progress

    @router.get("/campaigns", response_model=CampaignList, summary="List campaigns, newest first")
    async def list_campaigns(limit: Annotated[int, Query(ge=1, le=500)] = 50) -> CampaignList:
        return CampaignList(campaigns=await service.list_campaigns(limit))

    @router.get("/campaigns/{campaign_id}", response_model=CampaignProgress, summary="A campaign's progress")
    async def get_campaign(campaign_id: CampaignId) -> CampaignProgress:
        """Status, counts, attack success rate per cell with its Wilson 95% interval, tokens, errors."""
        return await service.progress(campaign_id)

    @router.post(
        "/campaigns/{campaign_id}/cancel", response_model=CampaignProgress, summary="Cancel a campaign"
    )
    async def cancel_campaign(campaign_id: CampaignId) -> CampaignProgress:
        """Queued matches are not played and running ones are stopped; a final campaign is unchanged."""
        return await service.cancel(campaign_id)

    @router.get("/campaigns/{campaign_id}/matches", response_model=MatchList, summary="A campaign's matches")
    async def list_matches(
        campaign_id: CampaignId,
        offset: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    ) -> MatchList:
        matches, total = await service.matches(campaign_id, offset, limit)
        return MatchList(matches=matches, total=total, offset=offset)

    @router.get(
        "/campaigns/{campaign_id}/report",
        summary="A campaign's report",
        response_class=Response,
        responses={
            200: {
                "description": "The report",
                "content": {
                    "text/html": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"$ref": "#/components/schemas/CampaignReport"}},
                    "application/xml": {"schema": {"type": "string"}},
                    "application/sarif+json": {"schema": {"type": "object"}},
                },
            }
        },
    )
    async def get_report(
        campaign_id: CampaignId,
        format: Annotated[  # noqa: A002 - the API's name
            Literal["html", "json", "junit", "sarif"], Query()
        ] = "html",
        fail_above: Annotated[float | None, Query(ge=0, le=1)] = None,
        fail_above_category: Annotated[list[str] | None, Query(max_length=64)] = None,
    ) -> Response:
        """HTML (self-contained page), JSON (docs/report-schema.json), JUnit XML (a failure per
        defender x objective whose attack success rate is above ``fail_above``) or SARIF 2.1.0
        (a result per successful attack). ``fail_above_category`` (repeatable, ``LLM07:2025=0.1``)
        fails the JUnit case of each defender x category whose rate is above its threshold."""
        # A bad threshold is an InvalidInputError: the app's handler answers it with its reason.
        categories = dict(parse_category_threshold(item) for item in fail_above_category or [])
        report = await service.report(campaign_id, fail_above=fail_above, fail_above_categories=categories)
        if format == "html":
            # Relative links keep a reverse proxy's path prefix: .../campaigns/{id}/report -> .../matches/{m}.
            body, media_type = render_html(report, match_url=_relative_match_url), MEDIA_TYPES["html"]
        else:
            body, media_type = render_report(report, format)
        return Response(body, media_type=media_type)

    @router.get("/leaderboard", response_model=Leaderboard, summary="Ratings of attackers and defenders")
    async def get_leaderboard(
        category: Annotated[
            str | None,
            Query(pattern=CATEGORY_PATTERN, description="Only contests on objectives of this OWASP category"),
        ] = None,
        since: Annotated[
            str | None,
            Query(
                pattern=SINCE_PATTERN,
                description=(
                    "Only campaigns finished at or after this ISO 8601 date or date and time "
                    "(2026-12-01, 2026-12-01T08:00:00Z; UTC unless a zone is given)"
                ),
            ),
        ] = None,
    ) -> Leaderboard:
        """Bradley-Terry ratings of every attacker and defender over every settled campaign's
        played matches, with 95% bootstrap intervals, each pairing's record, and the ratings as
        they stood after each of the latest campaigns (ADR 0023)."""
        # A string, parsed here: pydantic's datetime would also take a number as a Unix time.
        return await service.leaderboard(category=category, since=_since(since))

    @router.get("/matches/{match_id}", response_model=MatchRecord, summary="A finished match")
    async def get_match(match_id: MatchId) -> MatchRecord:
        """The transcript (every turn), verdict, timings, tokens and trace id of a finished match."""
        return await service.match(match_id)

    return router


__all__ = [
    "CAMPAIGN_ID_PATTERN",
    "MATCH_ID_PATTERN",
    "ApiError",
    "CampaignList",
    "ErrorResponse",
    "MatchList",
    "arena_error_response",
    "build_api_router",
    "error_response",
]
