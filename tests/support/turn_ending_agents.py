"""Third-party A2A agents, written with a2a-sdk directly, that end a turn in the three ways agents do.

* ``parks``: the reply is the status message of a task parked in ``input-required``; the
  next message continues that task (the arena's defender's way).
* ``parks-artifacts``: the same task, but each reply is a new artifact of it and the status
  message a bare "Anything else?" (the task collects one artifact per turn).
* ``completes``: every turn is a task of its own, completed with the reply as an artifact
  and a bare "Done." as the status message (a common pattern: the answer is the artifact);
  the next message carries the contextId only and opens a new task in that context.
* ``completes-same``: the same, with the reply as both the status message and the artifact
  (as the arena's defender does in its ``complete`` turn mode).
* ``messages``: the reply is a Message (no task at all) carrying the contextId.

Each agent remembers what it was told per contextId (:class:`ConversationLog`) and answers
``reply N in this conversation: no.``, except the ``give_up_at``-th message of one
conversation, which it answers ``reply N in this conversation: <phrase>``. So an attacker
wins against it only when it keeps the conversation's context from turn to turn, and a test
can tell each reply apart.

The app serves JSON-RPC at ``/`` and HTTP+JSON at ``/rest``, each in A2A 1.0 and 0.3; its
card lists one interface (``binding``, ``version``), the one a client will use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from a2a.helpers import get_message_text, new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette

TurnEnding = Literal["parks", "parks-artifacts", "completes", "completes-same", "messages"]
TURN_ENDINGS: tuple[TurnEnding, ...] = ("parks", "parks-artifacts", "completes", "completes-same", "messages")
REST_PREFIX = "/rest"
DONE = "Done."
ANYTHING_ELSE = "Anything else?"


@dataclass
class ConversationLog:
    """What an agent was told, per contextId, in order; and the ids of the tasks it made."""

    messages: dict[str, list[str]] = field(default_factory=dict)
    task_ids: list[str] = field(default_factory=list)

    def record(self, context_id: str, text: str) -> int:
        """Keep ``text`` in ``context_id``'s conversation; return how many it now holds."""
        told = self.messages.setdefault(context_id, [])
        told.append(text)
        return len(told)


class CountingExecutor(AgentExecutor):
    """Answers by the message's position in its conversation, ending turns the ``ending`` way."""

    def __init__(self, ending: TurnEnding, log: ConversationLog, *, give_up_at: int, phrase: str) -> None:
        self._ending = ending
        self._log = log
        self._give_up_at = give_up_at
        self._phrase = phrase

    def answer(self, position: int) -> str:
        said = self._phrase if position == self._give_up_at else "no."
        return f"reply {position} in this conversation: {said}"

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        position = self._log.record(context.context_id, get_message_text(context.message))
        answer = self.answer(position)
        if self._ending == "messages":
            await event_queue.enqueue_event(new_text_message(answer, context_id=context.context_id))
            return
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            self._log.task_ids.append(context.task_id)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if self._ending == "parks":
            await updater.requires_input(updater.new_agent_message([Part(text=answer)]))
            return
        if self._ending == "parks-artifacts":
            await updater.add_artifact([Part(text=answer)], name=f"answer-{position}")
            await updater.requires_input(updater.new_agent_message([Part(text=ANYTHING_ELSE)]))
            return
        await updater.add_artifact([Part(text=answer)], name="answer")
        status = answer if self._ending == "completes-same" else DONE
        await updater.complete(updater.new_agent_message([Part(text=status)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def create_turn_ending_app(
    base_url: str,
    ending: TurnEnding,
    log: ConversationLog,
    *,
    binding: str = "JSONRPC",
    version: str = "1.0",
    give_up_at: int = 3,
    phrase: str = "I Give Up",
) -> Starlette:
    """The agent at ``base_url`` (see the module doc); its card offers ``binding`` at ``version``."""
    path = REST_PREFIX if binding == "HTTP+JSON" else "/"
    card = AgentCard(
        name=f"Counting Agent ({ending})",
        description="Counts the messages of each conversation.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base_url}{path}", protocol_binding=binding, protocol_version=version)
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="count", name="Count", description="Counts messages", tags=["count"])],
    )
    executor = CountingExecutor(ending, log, give_up_at=give_up_at, phrase=phrase)
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    return Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
            *create_rest_routes(handler, path_prefix=REST_PREFIX, enable_v0_3_compat=True),
        ]
    )


__all__ = [
    "ANYTHING_ELSE",
    "DONE",
    "TURN_ENDINGS",
    "ConversationLog",
    "CountingExecutor",
    "TurnEnding",
    "create_turn_ending_app",
]
