"""A stock a2a-sdk 0.3 client holding a conversation with an agent it found by its card.

Run with the interpreter of the a2a-sdk 0.3 virtualenv that tools/install-interop-clients makes:
``A2ACardResolver`` fetches and validates the card, ``ClientFactory(ClientConfig(...)).create``
picks the transport from the card's ``preferredTransport``/``url`` and ``additionalInterfaces``,
and ``Client.send_message`` sends each turn (``message/stream`` or ``message/send``; HTTP+JSON:
``/v1/message:stream`` or ``:send`` under the interface URL), for each
variant asked for. Prints the transcripts (see ``_conversation``).
"""

from __future__ import annotations

import importlib.metadata
import uuid
from typing import Any

import httpx
from _conversation import CARD_PATH, LEGACY_CARD_FIELDS, Transcript, Turn, card_headers, main
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, Task, TextPart


def _texts(parts: list[Part] | None) -> str:
    return "\n".join(part.root.text for part in parts or [] if isinstance(part.root, TextPart))


def _record(turn: Turn, event: Any) -> None:
    """Fold one yielded item (``(Task, update)`` or ``Message``) into ``turn``."""
    if isinstance(event, Message):
        turn.events.append("message")
        turn.kind = turn.kind or "message"
        turn.context_id = event.context_id
        turn.task_id = event.task_id
        turn.status_text = _texts(event.parts)
        return
    task, update = event
    turn.events.append(update.kind if update is not None else "task")
    turn.kind = turn.kind or "task"
    assert isinstance(task, Task)
    turn.task_id, turn.context_id = task.id, task.context_id
    turn.state = task.status.state.value
    turn.status_text = _texts(task.status.message.parts) if task.status.message else ""
    turn.artifact_text = "\n".join(_texts(artifact.parts) for artifact in task.artifacts or [])


async def converse(transcript: Transcript, url: str, turns: list[str], http_timeout_s: float) -> None:
    async def on_request(request: httpx.Request) -> None:
        if request.url.path == CARD_PATH:
            transcript.card_request_headers = card_headers(request.headers)

    async def on_response(response: httpx.Response) -> None:
        if response.request.url.path == CARD_PATH and response.status_code == 200:
            await response.aread()
            raw = response.json()
            transcript.card_legacy_fields = [name for name in LEGACY_CARD_FIELDS if name in raw]

    hooks = {"request": [on_request], "response": [on_response]}
    async with httpx.AsyncClient(timeout=http_timeout_s, event_hooks=hooks) as http:
        try:
            card = await A2ACardResolver(http, url).get_agent_card()
        except Exception as exc:
            transcript.fail("discovery", exc)
            return
        transcript.card = {
            "url": card.url,
            "preferredTransport": card.preferred_transport,
            "protocolVersion": card.protocol_version,
            "additionalInterfaces": [[i.transport, i.url] for i in card.additional_interfaces or []],
            "streaming": bool(card.capabilities.streaming),
        }
        config = ClientConfig(
            streaming=transcript.streaming, supported_transports=[transcript.binding], httpx_client=http
        )
        try:
            client = ClientFactory(config).create(card)
        except ValueError as exc:
            transcript.fail("transport", exc)
            return
        transport = client._transport  # private, but which transport was chosen is the point
        transcript.transport = {"class": type(transport).__name__, "url": str(getattr(transport, "url", ""))}
        task_id: str | None = None
        context_id: str | None = None
        for number, text in enumerate(turns, start=1):
            message = Message(
                role=Role.user,
                parts=[Part(root=TextPart(text=text))],
                message_id=uuid.uuid4().hex,
                task_id=task_id,
                context_id=context_id,
            )
            turn = Turn(sent_task_id=task_id, sent_context_id=context_id)
            transcript.turns.append(turn)
            try:
                async for event in client.send_message(message):
                    _record(turn, event)
            except Exception as exc:
                transcript.fail(f"turn {number}", exc)
                return
            task_id, context_id = turn.next_ids()


if __name__ == "__main__":
    main(__doc__ or "", f"a2a-sdk {importlib.metadata.version('a2a-sdk')}", converse)
