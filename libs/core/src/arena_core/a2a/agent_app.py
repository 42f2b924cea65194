"""Build the ASGI app of an arena agent: card, JSON-RPC, HTTP+JSON and health.

Every arena agent (defender, attacker) is served the same way:

* ``GET /.well-known/agent-card.json``: the public agent card;
* ``POST /``: JSON-RPC, A2A 1.0 methods (``SendMessage``...) and, on the same
  endpoint, the 0.3 methods (``message/send``...), chosen by the ``A2A-Version``
  header (no header means 0.3);
* ``/rest/...``: the HTTP+JSON binding (1.0 at ``/rest/message:send``, 0.3 at
  ``/rest/v1/message:send``);
* ``GET /healthz`` (the process is alive) and ``GET /readyz`` (dependencies
  reachable; 503 with the reason otherwise).

With ``ARENA_API_TOKENS`` set, everything but the card, ``/healthz`` and
``/readyz`` needs ``Authorization: Bearer <token>`` (401 without a valid one,
403 for a read-only token on anything but GET/HEAD; :mod:`arena_core.http_auth`),
and the card declares the ``bearer`` scheme in ``securitySchemes``. Each token
is a caller: one caller's tasks read as unknown to another, and the defender's
conversations are the caller's own (:mod:`arena_core.caller_scope`).

Request bodies over ``ARENA_MAX_REQUEST_BYTES`` get 413 before they are read
in full (:mod:`arena_core.http_limits`); JSON-RPC bodies not declared as JSON
get 415 (:mod:`arena_core.a2a.jsonrpc_content_type_guard`, and
:mod:`arena_core.a2a.rest_content_type_guard` on HTTP+JSON); bodies nested more
than 100 levels deep get the binding's parse error
(:mod:`arena_core.a2a.json_depth_guard`); messages over ``ARENA_MAX_MESSAGE_PARTS``
or ``ARENA_MAX_MESSAGE_TEXT_BYTES`` get the A2A invalid-params error
(:mod:`arena_core.a2a.message_limits`).

Paths and methods no route serves are answered with a JSON ``google.rpc.Status``
body (``{"error": {"code", "status", "message"}}``), the shape the SDK's own
HTTP+JSON errors have, never a text page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from a2a.server.agent_execution import AgentExecutor, SimpleRequestContextBuilder
from a2a.server.cluster import TaskEventStream, VersionedTaskStore
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from arena_core.a2a.agent_lifespan import agent_lifespan
from arena_core.a2a.card_route import CardCompat, create_card_route
from arena_core.a2a.fresh_tasks import FreshTaskIds, FreshTaskShortcut
from arena_core.a2a.integral_numbers import IntegralNumbers
from arena_core.a2a.json_depth_guard import JsonDepthGuard
from arena_core.a2a.jsonrpc_content_type_guard import JsonRpcContentTypeGuard
from arena_core.a2a.jsonrpc_params_guard import JsonRpcParamsGuard
from arena_core.a2a.request_handler import ArenaRequestHandler
from arena_core.a2a.rest_content_type_guard import RestContentTypeGuard
from arena_core.a2a.rest_media_type import V10RestMediaType
from arena_core.a2a.sdk_guards import TextBodyGuard, V03RestStreamGuard
from arena_core.a2a.v03_rest_message_guard import V03RestMessageGuard
from arena_core.a2a.v03_stream_final import V03StreamFinal
from arena_core.a2a.version_guard import A2aVersionGuard
from arena_core.http_auth import BEARER_SCHEME_NAME, ApiTokens, BearerAuth, warn_if_open
from arena_core.http_limits import BodySizeLimit, RequestLimits
from arena_core.http_server import public_url_for, run_app
from arena_core.settings import ArenaSettings

REST_PREFIX = "/rest"
CARD_PATH = "/.well-known/agent-card.json"
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", CARD_PATH})

ReadinessCheck = Callable[[], Awaitable[str | None]]
"""Returns None when ready, else a sentence saying what is not reachable."""


@dataclass(frozen=True, slots=True)
class CardSpec:
    """What an agent says about itself; turned into an A2A 1.0 card."""

    name: str
    description: str
    version: str
    skills: Sequence[AgentSkill]
    streaming: bool = True
    extensions: Sequence[AgentExtension] = ()
    """A2A extensions the agent supports (``capabilities.extensions``)."""


def build_agent_card(spec: CardSpec, public_url: str, *, bearer_auth: bool = False) -> AgentCard:
    """Build the agent's A2A 1.0 card: its JSON-RPC and HTTP+JSON interfaces at protocol 1.0.

    Both protocol versions are *served* either way; the card route
    (:mod:`arena_core.a2a.card_route`) adds the 0.3 interfaces, and with them
    the legacy fields 0.3 clients need, for the clients that ask for 0.3.

    With ``bearer_auth`` the card declares an HTTP ``Bearer`` scheme named
    ``bearer`` and requires it for every interface (the card itself stays public).
    """
    base = public_url.rstrip("/")
    interfaces = [
        AgentInterface(
            url=f"{base}/",
            protocol_binding=TransportProtocol.JSONRPC.value,
            protocol_version=PROTOCOL_VERSION_1_0,
        ),
        AgentInterface(
            url=f"{base}{REST_PREFIX}",
            protocol_binding=TransportProtocol.HTTP_JSON.value,
            protocol_version=PROTOCOL_VERSION_1_0,
        ),
    ]
    card = AgentCard(
        name=spec.name,
        description=spec.description,
        version=spec.version,
        provider=AgentProvider(organization="A2A Arena", url="https://github.com/a2a-arena"),
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(
            streaming=spec.streaming, push_notifications=False, extensions=list(spec.extensions)
        ),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=list(spec.skills),
    )
    if bearer_auth:
        card.security_schemes[BEARER_SCHEME_NAME].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    description="Send 'Authorization: Bearer <token>' with a token of ARENA_API_TOKENS.",
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER_SCHEME_NAME: StringList()}))
    return card


def all_ready(*checks: ReadinessCheck | None) -> ReadinessCheck:
    """One readiness check that reports every failing dependency."""

    async def check() -> str | None:
        problems = [problem for c in checks if c is not None and (problem := await c()) is not None]
        return "; ".join(problems) if problems else None

    return check


# google.rpc.Code names for the statuses Starlette's router raises (the SDK's own errors carry theirs).
_RPC_STATUS = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "UNIMPLEMENTED"}


async def _http_error(request: Request, exc: Exception) -> Response:
    """A routing error (no such path, method not allowed) as a JSON google.rpc.Status body."""
    assert isinstance(exc, HTTPException)
    body = {
        "error": {
            "code": exc.status_code,
            "status": _RPC_STATUS.get(exc.status_code, "UNKNOWN"),
            "message": f"{request.method} {request.url.path}: {exc.detail}",
        }
    }
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def build_agent_app(
    card: AgentCard,
    executor: AgentExecutor,
    *,
    readiness: ReadinessCheck | None = None,
    task_store: TaskStore | VersionedTaskStore,
    event_stream: TaskEventStream | None = None,
    task_idle_timeout_s: float | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    on_shutdown: Sequence[Callable[[], Awaitable[None]]] = (),
    limits: RequestLimits | None = None,
    tokens: ApiTokens | None = None,
    card_compat: CardCompat = "auto",
    card_max_age_s: int = 300,
) -> Starlette:
    """Assemble the Starlette app serving ``executor`` behind ``card``.

    ``task_store`` is required: the state backend's bounded store
    (:func:`arena_core.state_backend.create_state_backend`), never a2a-sdk's
    unbounded ``InMemoryTaskStore``. With a ``VersionedTaskStore`` and an
    ``event_stream`` (Redis), replicas
    share tasks: any replica continues, resubscribes to or cancels any task.
    ``task_idle_timeout_s`` releases tasks parked in input-required after that
    long (a2a-sdk 1.3 never releases them otherwise); a follow-up message
    recreates the task from the store. ``on_shutdown`` hooks run when the
    server stops. ``limits`` (default: the settings' defaults) bound each
    request body (413 beyond it, see :mod:`arena_core.http_limits`) and each
    incoming message (the A2A invalid-params error, see
    :mod:`arena_core.a2a.message_limits`). ``tokens`` (when enabled) are the
    bearer tokens every route but the card and the health checks needs; the
    card should then be built with ``bearer_auth=True``. ``card_compat`` and
    ``card_max_age_s`` say which rendering of the card is served to whom and
    how long it may be cached (:func:`arena_core.a2a.card_route.create_card_route`).
    """
    limits = limits or RequestLimits()
    # New tasks get ids minted here, whose reads before the first save skip the store
    # (arena_core.a2a.fresh_tasks): three Redis round trips fewer per new task.
    fresh = FreshTaskIds()
    if isinstance(task_store, VersionedTaskStore):
        task_store = FreshTaskShortcut(task_store, fresh)
    handler = ArenaRequestHandler(
        agent_executor=executor,
        task_store=task_store,
        request_context_builder=SimpleRequestContextBuilder(
            should_populate_referred_tasks=False, task_store=None, task_id_generator=fresh
        ),
        agent_card=card,
        interrupted_task_timeout=task_idle_timeout_s,
        event_stream=event_stream,
        limits=limits,
        # A part whose media type the card does not declare gets ContentTypeNotSupportedError
        # (-32005 / 400), not an answer that pretends to have read it.
        validate_input_modes=True,
    )

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        problem = await readiness() if readiness is not None else None
        if problem is not None:
            return JSONResponse({"status": "unavailable", "reason": problem}, status_code=503)
        return JSONResponse({"status": "ready"})

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        *extra_routes,
        create_card_route(card, path=CARD_PATH, compat=card_compat, max_age_s=card_max_age_s),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        *create_rest_routes(handler, path_prefix=REST_PREFIX, enable_v0_3_compat=True),
    ]
    # At shutdown: release the tasks the SDK holds, then the hooks (arena_core.a2a.agent_lifespan).
    lifespan = agent_lifespan(handler, on_shutdown)
    # A request without a valid token is refused before its body is read.
    auth: list[Middleware] = []
    if tokens is not None and tokens.enabled:
        auth.append(Middleware(BearerAuth, tokens=tokens, public_paths=PUBLIC_PATHS))
    # Outermost first. Each guard answers only what the SDK gets wrong (arena_core.a2a.sdk_guards).
    middleware = [
        # 1.0 HTTP+JSON answers say application/a2a+json, whoever below made them (401, 413, 404...).
        Middleware(V10RestMediaType, rest_prefix=REST_PREFIX),
        *auth,
        # An oversized body is refused before any guard below reads it.
        Middleware(BodySizeLimit, max_bytes=limits.max_request_bytes, jsonrpc_path="/"),
        # A JSON-RPC body not declared as JSON gets 415, and a body nested too deep the binding's
        # parse error, before any guard below (A2aVersionGuard included) or the SDK parses it.
        Middleware(JsonRpcContentTypeGuard, rpc_path="/"),
        Middleware(JsonDepthGuard, rpc_path="/", rest_prefix=REST_PREFIX),
        # The version first: a request is read with the semantics of the version it names.
        Middleware(A2aVersionGuard, rpc_path="/", rest_prefix=REST_PREFIX),
        # An HTTP+JSON body not declared as JSON gets 415 before any guard or the SDK parses it.
        Middleware(RestContentTypeGuard, rest_prefix=REST_PREFIX),
        Middleware(V03RestStreamGuard, rest_prefix=REST_PREFIX),
        Middleware(TextBodyGuard, rpc_path="/", rest_prefix=REST_PREFIX),
        # Inside TextBodyGuard: these parse only bodies known to be text.
        Middleware(V03RestMessageGuard, rest_prefix=REST_PREFIX, card=card),
        Middleware(JsonRpcParamsGuard, rpc_path="/"),
        # A 0.3 message stream stopping at input-required / auth-required says final: true there.
        Middleware(V03StreamFinal, rpc_path="/", rest_prefix=REST_PREFIX),
        # Innermost: the SDK's answers, whole numbers written as integers.
        Middleware(IntegralNumbers),
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error},
    )
    # For diagnostics and tests: how many tasks it holds (agent_lifespan.held_task_count).
    app.state.request_handler = handler
    return app


def serve_agent(
    settings: ArenaSettings, create_app: Callable[[str], Starlette], *, role: str, host: str, port: int
) -> None:
    """Serve an A2A agent until interrupted (see :func:`~arena_core.http_server.run_app`).

    ``create_app`` builds the agent's app for the URL its card names: ``ARENA_PUBLIC_URL``, else
    one made from the bind address. A warning is logged when the agent is reachable beyond this
    machine without tokens.
    """
    warn_if_open(settings.accepted_tokens(), host, role)
    run_app(
        create_app(public_url_for(host, port, settings.public_url)),
        host=host,
        port=port,
        log_level=settings.log_level,
        shutdown_grace_s=settings.shutdown_grace_s,
    )


__all__ = [
    "REST_PREFIX",
    "CardSpec",
    "ReadinessCheck",
    "all_ready",
    "build_agent_app",
    "build_agent_card",
    "serve_agent",
]
