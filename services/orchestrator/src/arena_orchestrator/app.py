"""Assemble the orchestrator: REST API, dashboard, and the campaign worker.

One process serves the API and runs a worker; run more replicas (all with the
same ``ARENA_REDIS_URL``) to share the matches. Without Redis everything is in
memory: one replica, nothing survives a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware

from arena_core.a2a.egress_guard import EgressGuard
from arena_core.errors import ArenaError
from arena_core.http_auth import ApiTokens, BearerAuth
from arena_core.http_limits import BodySizeLimit
from arena_core.redis_state import RedisClients, redacted
from arena_core.settings import ArenaSettings
from arena_core.state_backend import redis_config
from arena_core.telemetry import telemetry_enabled
from arena_core.telemetry.metrics import observe_queue_depth
from arena_orchestrator.api import arena_error_response, build_api_router, error_response
from arena_orchestrator.campaign_models import CampaignReport
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import CampaignStore
from arena_orchestrator.dashboard import dashboard_routes
from arena_orchestrator.match_player import MatchPlayer, RemoteAttackerPlayer
from arena_orchestrator.match_queue import MatchQueue, MemoryMatchQueue
from arena_orchestrator.memory_campaign_store import MemoryCampaignStore
from arena_orchestrator.redis_campaign_store import RedisCampaignStore
from arena_orchestrator.redis_match_queue import RedisMatchQueue
from arena_orchestrator.worker import CampaignWorker, WorkerConfig

VERSION = "0.1.0"
QUEUE_DEPTH_INTERVAL_S = 5.0
PUBLIC_PATHS = frozenset(
    {"/healthz", "/readyz", "/", "/dashboard", "/dashboard/", "/favicon.ico", "/openapi.json", "/docs"}
)
"""Open without a token when ``ARENA_API_TOKENS`` is set: probes, dashboard files, API description."""
PUBLIC_PREFIXES = ("/dashboard/static/",)
logger = logging.getLogger(__name__)


def create_backend(settings: ArenaSettings) -> tuple[CampaignStore, MatchQueue]:
    """Redis store and queue when ``ARENA_REDIS_URL`` is set, else in-memory ones."""
    config = redis_config(settings)
    if config is None:
        return MemoryCampaignStore(), MemoryMatchQueue()
    clients = RedisClients.connect(config)
    return RedisCampaignStore(clients, campaign_ttl_s=settings.campaign_ttl_s), RedisMatchQueue(clients)


def worker_config(settings: ArenaSettings) -> WorkerConfig:
    """The worker's behaviour from settings."""
    return WorkerConfig(
        concurrency=settings.orchestrator_concurrency,
        visibility_timeout_s=settings.orchestrator_visibility_timeout_s,
        match_attempts=settings.orchestrator_match_attempts,
        retry_backoff_s=settings.orchestrator_retry_backoff_s,
        block_ms=min(settings.redis_block_ms, 1000),
        shutdown_grace_s=settings.shutdown_grace_s,
    )


def create_service(settings: ArenaSettings, store: CampaignStore, queue: MatchQueue) -> CampaignService:
    """The campaign service for this process's settings."""
    return CampaignService(
        store,
        queue,
        max_campaign_matches=settings.orchestrator_max_campaign_matches,
        builtin_attacker=settings.attacker_url is not None,
        jaeger_url=settings.jaeger_url,
        max_active_campaigns=settings.orchestrator_max_active_campaigns,
    )


async def _watch_queue_depth(queue: MatchQueue) -> None:
    """Keep the last known queue depth for the ``arena.queue.depth`` gauge (metrics are sync).

    The value lives in this task (one per app's lifespan), so two apps in one process never share it.
    """
    if not telemetry_enabled():
        return
    last: int | None = None
    with observe_queue_depth(lambda: last):
        while True:
            with contextlib.suppress(ArenaError):
                last = await queue.depth()
            await asyncio.sleep(QUEUE_DEPTH_INTERVAL_S)


def _openapi(app: FastAPI, *, bearer_auth: bool) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    # Models referenced only from hand-written request/response bodies.
    model: type[BaseModel]
    for model in (CampaignSpec, CampaignReport):
        generated = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in generated.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components.setdefault(model.__name__, generated)
    if bearer_auth:
        schema["components"]["securitySchemes"] = {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "A token of ARENA_API_TOKENS (GET and HEAD: or of ARENA_API_READ_TOKENS).",
            }
        }
        schema["security"] = [{"bearer": []}]
    app.openapi_schema = schema
    return schema


def create_orchestrator_app(
    settings: ArenaSettings,
    *,
    http: httpx.AsyncClient | None = None,
    player: MatchPlayer | None = None,
    run_worker: bool = True,
) -> FastAPI:
    """Build the orchestrator ASGI app; its lifespan runs the worker.

    ``http`` routes attacker calls (tests pass an in-process transport);
    ``player`` replaces the remote attacker altogether.
    """
    store, queue = create_backend(settings)
    service = create_service(settings, store, queue)
    # Campaign attacker URLs are user input: guarded, unless a test routes them in-process.
    guard = EgressGuard(settings.target_policy()) if http is None else None
    worker = CampaignWorker(
        service,
        player
        or RemoteAttackerPlayer(
            settings.attacker_url, http=http, guard=guard, token=settings.outbound_token("attacker")
        ),
        worker_config(settings),
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.redis_url is None:
            logger.warning("ARENA_REDIS_URL is not set: campaigns are kept in memory and lost on restart")
        else:
            logger.info("campaign state in Redis at %s", redacted(settings.redis_url))
        task = asyncio.create_task(worker.run(), name="campaign-worker") if run_worker else None
        depth_task = asyncio.create_task(_watch_queue_depth(queue), name="queue-depth")
        try:
            yield
        finally:
            depth_task.cancel()
            worker.stop(hand_back=True)
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)
            await queue.close()
            await store.close()

    tokens = settings.accepted_tokens()
    app = FastAPI(
        title="A2A Arena orchestrator",
        version=VERSION,
        description="Campaigns of red-team matches over A2A: submit, follow, cancel, report.",
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        middleware=_middleware(settings, tokens),
    )
    app.state.service = service
    app.state.worker = worker

    @app.exception_handler(ArenaError)
    async def _arena_error(request: Request, exc: ArenaError) -> JSONResponse:
        return arena_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            {
                "location": ".".join(str(p) for p in err.get("loc", ())),
                "line": None,
                "message": err.get("msg", ""),
            }
            for err in exc.errors()
        ]
        message = "; ".join(f"{p['location']}: {p['message']}" for p in problems) or "malformed request"
        return error_response(422, "invalid_request", message, problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = f"{request.method} {request.url.path}: {exc.detail}"
        response = error_response(exc.status_code, kind, message)
        response.headers.update(exc.headers or {})  # e.g. Allow on a 405
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error in %s %s", request.method, request.url.path)
        return error_response(
            500, "internal_error", f"unexpected {type(exc).__name__}; see the orchestrator log"
        )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> Response:
        return PlainTextResponse("ok")

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        problem = await store.problem()
        if problem:
            return PlainTextResponse(problem, status_code=503)
        return PlainTextResponse("ready")

    app.include_router(build_api_router(service, max_spec_bytes=settings.orchestrator_max_spec_bytes))
    app.router.routes.extend(dashboard_routes())
    app.openapi = lambda: _openapi(app, bearer_auth=tokens.enabled)  # type: ignore[method-assign]
    return app


def _middleware(settings: ArenaSettings, tokens: ApiTokens) -> list[Middleware]:
    """The orchestrator's middleware, outermost first."""
    auth = [
        # Outside the size limit: a request without a valid token is refused before its body is read.
        Middleware(
            BearerAuth,
            tokens=tokens,
            public_paths=PUBLIC_PATHS,
            public_prefixes=PUBLIC_PREFIXES,
            error_body=_auth_error_body,
        )
    ]
    # A body over ARENA_MAX_REQUEST_BYTES gets 413 before the API reads it; a spec is also held
    # to ARENA_ORCHESTRATOR_MAX_SPEC_BYTES (413 from the API), so the smaller limit applies to specs.
    size = Middleware(BodySizeLimit, max_bytes=settings.max_request_bytes, error_body_for=_limit_error_body)
    return [*(auth if tokens.enabled else []), size]


def _limit_error_body(message: str, status: int) -> dict[str, Any]:
    kind = {400: "bad_request", 408: "request_timeout"}.get(status, "too_large")
    return {"error": {"kind": kind, "message": message, "problems": []}}


def _auth_error_body(status: int, message: str) -> dict[str, Any]:
    kind = "unauthorized" if status == 401 else "forbidden"
    return {"error": {"kind": kind, "message": message, "problems": []}}


__all__ = ["VERSION", "create_backend", "create_orchestrator_app", "create_service", "worker_config"]
