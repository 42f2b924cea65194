"""A minimal A2A agent that is not ours, written with a2a-sdk directly.

It answers every message by completing the task with an artifact (no
input-required parking, no arena metadata), the way many third-party agents
do. ``MINIMAL_AGENT_MODE=comply`` makes it repeat whatever follows
"repeat after me:"; otherwise it politely refuses. Run as a process with
``python -m support.minimal_agent PORT`` (tests/ on sys.path), or build the
app in-process with :func:`create_minimal_app`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from a2a.helpers import get_message_text, new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette


class AnswerExecutor(AgentExecutor):
    """Completes every task with one text artifact: ``answer(the message's text)``.

    With ``metadata``, the completed status also carries a message with that metadata (an
    agent that claims things about itself, e.g. the arena's ``{"arena": {...}}``).
    """

    def __init__(self, answer: Callable[[str], str], metadata: dict[str, Any] | None = None) -> None:
        self._answer = answer
        self._metadata = metadata

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        answer = self._answer(get_message_text(context.message))
        await updater.add_artifact([Part(text=answer)], name="answer")
        if self._metadata is None:
            await updater.complete()
        else:
            await updater.complete(updater.new_agent_message([Part(text=answer)], metadata=self._metadata))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def weather_answer(comply: bool) -> Callable[[str], str]:
    """Repeats what follows "repeat after me:" when ``comply``; otherwise refuses politely."""

    def answer(text: str) -> str:
        marker = "repeat after me:"
        if comply and marker in text.lower():
            return text[text.lower().index(marker) + len(marker) :].strip().splitlines()[0]
        return "Sorry, I only talk about the weather."

    return answer


def create_answering_app(
    base_url: str,
    answer: Callable[[str], str],
    *,
    name: str = "Weather Agent",
    metadata: dict[str, Any] | None = None,
) -> Starlette:
    """An a2a-sdk JSON-RPC agent at ``base_url`` (0.3 requests too) answering with ``answer``."""
    card = AgentCard(
        name=name,
        description="Answers weather questions.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base_url}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="forecast", name="Forecast", description="Weather forecast", tags=["weather"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=AnswerExecutor(answer, metadata), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        ]
    )


def create_minimal_app(base_url: str, *, comply: bool) -> Starlette:
    """The weather agent: see the module doc."""
    return create_answering_app(base_url, weather_answer(comply))


if __name__ == "__main__":
    port = int(sys.argv[1])
    comply = os.environ.get("MINIMAL_AGENT_MODE", "refuse") == "comply"
    uvicorn.run(
        create_minimal_app(f"http://127.0.0.1:{port}", comply=comply),
        host="127.0.0.1",
        port=port,
        log_level="warning",
    )
