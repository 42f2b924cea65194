"""The floor under every A2A turn here: a stock a2a-sdk agent, answering from memory.

Benchmark 1 measures it side by side with the defender (``floor_cpu_ms_per_turn`` in its
details): a2a-sdk 1.x's own JSON-RPC routes and ``DefaultRequestHandler`` with its
``InMemoryTaskStore``, on the same uvicorn (uvloop, httptools), answering each message with
the events the defender sends in its default ``complete`` mode (the new task, an artifact, the
completed status with the reply) and nothing else: no model call, no Redis, no tracing, no
guard or limit; only the arena's garbage-collector thresholds, which lower it. What this
process spends on a turn is what any agent built on a2a-sdk spends before doing anything of
its own, so a goal under it cannot be met while a2a-sdk serves A2A.

The same file measures the other end of a turn, a stock a2a-sdk client: ``client`` mode sends
messages through a2a-sdk's ``Client`` (its JSON-RPC transport over one httpx client, no
tracing) to the agent and prints its own CPU per call. A match of the campaign benchmark is
five such turns seen from both ends, so five times the two floors is what a match costs in
a2a-sdk alone, before the arena's attacker streams it to the orchestrator, calls any model or
touches Redis.

Run: ``python bench/sdk_floor_agent.py PORT`` (loopback only; the benchmark starts and stops it);
``python bench/sdk_floor_agent.py client URL CALLS CONCURRENCY`` prints
``{"client_cpu_ms_per_call": ...}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid

# Like the arena's services: the SDK's own spans off, set before a2a is imported.
os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

import httpx
import uvicorn
from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

REPLY = "I cannot help with that."


class FixedReply(AgentExecutor):
    """Answers every message with :data:`REPLY`, in the events of the defender's ``complete`` mode."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message, task_id, context_id = context.message, context.task_id, context.context_id
        if message is None or task_id is None or context_id is None:
            return
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(message))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.add_artifact([Part(text=REPLY)], name="reply")
        await updater.complete(message=updater.new_agent_message(parts=[Part(text=REPLY)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.task_id is not None and context.context_id is not None:
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def floor_card(url: str) -> AgentCard:
    return AgentCard(
        name="a2a-sdk floor",
        description="A stock a2a-sdk agent that answers every message with one fixed sentence.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="reply", name="reply", description="One fixed sentence.", tags=["bench"])],
    )


def build_app(port: int) -> Starlette:
    card = floor_card(f"http://127.0.0.1:{port}/")
    handler = DefaultRequestHandler(
        agent_executor=FixedReply(), task_store=InMemoryTaskStore(), agent_card=card
    )

    async def readyz(_: Request) -> Response:
        return JSONResponse({"status": "ready"})

    return Starlette(routes=[Route("/readyz", readyz), *create_jsonrpc_routes(handler, rpc_url="/")])


async def client_floor(url: str, calls: int, concurrency: int) -> float:
    """This process's CPU per call (ms) for ``calls`` messages sent through a2a-sdk's client."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(floor_card(url))

        async def send() -> None:
            message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text="hello")])
            async for _ in client.send_message(SendMessageRequest(message=message)):
                pass

        async def worker(count: int) -> None:
            for _ in range(count):
                await send()

        await asyncio.gather(*(worker(5) for _ in range(concurrency)))  # warm up
        start = time.process_time()
        await asyncio.gather(*(worker(calls // concurrency) for _ in range(concurrency)))
        spent = time.process_time() - start
    return spent * 1000 / (calls // concurrency * concurrency)


def main() -> None:
    if sys.argv[1] == "client":
        url, calls, concurrency = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        import uvloop

        per_call = uvloop.run(client_floor(url, calls, concurrency))
        sys.stdout.write(json.dumps({"client_cpu_ms_per_call": per_call}) + "\n")
        return
    port = int(sys.argv[1])
    # The arena's collector thresholds (arena_core.gc_tuning), so the floor is not the GC's.
    from arena_core.gc_tuning import tune_for_serving

    tune_for_serving()
    uvicorn.run(
        build_app(port),
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
