"""Every ASGI middleware of ours passes scopes it does not handle (lifespan) straight through,
and an agent app's lifespan runs all its shutdown hooks.

A middleware that reads ``scope["path"]`` or ``scope["method"]`` of a lifespan scope raises
KeyError; uvicorn then logs "ASGI 'lifespan' protocol appears unsupported" and never runs the
app's shutdown. tests/system/test_agent_lifespan.py checks the same with real processes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import AgentCard
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena_core.a2a.agent_lifespan import agent_lifespan
from arena_core.a2a.integral_numbers import IntegralNumbers
from arena_core.a2a.jsonrpc_params_guard import JsonRpcParamsGuard
from arena_core.a2a.rest_content_type_guard import RestContentTypeGuard
from arena_core.a2a.rest_media_type import V10RestMediaType
from arena_core.a2a.sdk_guards import TextBodyGuard, V03RestStreamGuard
from arena_core.a2a.v03_rest_message_guard import V03RestMessageGuard
from arena_core.a2a.v03_stream_final import V03StreamFinal
from arena_core.a2a.version_guard import A2aVersionGuard
from arena_core.http_auth import ApiTokens, BearerAuth
from arena_core.http_limits import BodySizeLimit
from arena_core.http_server import ShutdownState, ShuttingDownReadiness
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

LIFESPAN_DONE = ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def run_lifespan(app: ASGIApp) -> list[str]:
    """Drive ``app`` through the ASGI lifespan protocol as a server does; the message types it sent."""
    incoming: list[Message] = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message["type"])

    await app(
        {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}, receive, send
    )
    return sent


async def lifespan_app(scope: Scope, receive: Receive, send: Send) -> None:
    """The innermost app: completes the lifespan protocol."""
    assert scope["type"] == "lifespan"
    while True:
        message = await receive()
        await send({"type": f"{message['type']}.complete"})
        if message["type"] == "lifespan.shutdown":
            return


MIDDLEWARES: dict[str, Callable[[ASGIApp], ASGIApp]] = {
    "TextBodyGuard": lambda app: TextBodyGuard(app, rpc_path="/", rest_prefix="/rest"),
    "V03RestStreamGuard": lambda app: V03RestStreamGuard(app, rest_prefix="/rest"),
    "JsonRpcParamsGuard": lambda app: JsonRpcParamsGuard(app, rpc_path="/"),
    "RestContentTypeGuard": lambda app: RestContentTypeGuard(app, rest_prefix="/rest"),
    "IntegralNumbers": IntegralNumbers,
    "A2aVersionGuard": lambda app: A2aVersionGuard(app, rpc_path="/", rest_prefix="/rest"),
    "V10RestMediaType": lambda app: V10RestMediaType(app, rest_prefix="/rest"),
    "V03RestMessageGuard": lambda app: V03RestMessageGuard(app, rest_prefix="/rest", card=AgentCard()),
    "V03StreamFinal": lambda app: V03StreamFinal(app, rpc_path="/", rest_prefix="/rest"),
    "BodySizeLimit": lambda app: BodySizeLimit(app, max_bytes=10, jsonrpc_path="/"),
    "BearerAuth": lambda app: BearerAuth(app, tokens=ApiTokens.of(["t" * 32])),
    "ShuttingDownReadiness": lambda app: ShuttingDownReadiness(app, ShutdownState(terminating=True)),
}


@pytest.mark.parametrize("name", list(MIDDLEWARES))
async def test_a_middleware_passes_the_lifespan_scope_through(name: str) -> None:
    assert await run_lifespan(MIDDLEWARES[name](lifespan_app)) == LIFESPAN_DONE


async def test_an_agent_app_runs_its_lifespan_and_shutdown_hooks(
    arena: InProcessArena, caplog: pytest.LogCaptureFixture
) -> None:
    arena.add_model()
    arena.add_defender()
    with caplog.at_level(logging.INFO, logger="arena_core.a2a.agent_lifespan"):
        assert await run_lifespan(arena.apps["defender"]) == LIFESPAN_DONE
    assert any(r.getMessage().startswith("shutdown hooks ran (") for r in caplog.records), caplog.text


class _Silent(AgentExecutor):
    """An executor that is never asked to run (no request is sent)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise AssertionError("not called")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise AssertionError("not called")


async def test_a_failing_shutdown_hook_does_not_skip_the_others(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []

    async def first() -> None:
        ran.append("first")
        raise RuntimeError("state store already gone")

    async def second() -> None:
        ran.append("second")

    handler = DefaultRequestHandler(
        agent_executor=_Silent(), task_store=InMemoryTaskStore(), agent_card=AgentCard()
    )
    app = Starlette(lifespan=agent_lifespan(handler, [first, second]))
    with caplog.at_level(logging.INFO, logger="arena_core.a2a.agent_lifespan"):
        assert await run_lifespan(app) == LIFESPAN_DONE
    assert ran == ["first", "second"]
    failure = next(r for r in caplog.records if r.levelno == logging.ERROR)
    assert "first" in failure.getMessage() and failure.exc_info is not None
    assert any("shutdown hooks ran (2, 1 failed)" in r.getMessage() for r in caplog.records), caplog.text
    # Nothing was held, so there is no release line.
    assert not any("released" in r.getMessage() for r in caplog.records), caplog.text
