"""A stock a2a-sdk 1.x client holding a conversation with an agent it found by its card.

Run with the project's interpreter (a2a-sdk 1.3): ``ClientFactory.create_from_url`` fetches the
card (with the ``A2A-Version: 1.0`` header the factory puts on its HTTP client), ``create`` picks
the first card interface whose binding the config supports and, among those, protocol 1.0 before
0.3, and ``Client.send_message`` sends each turn (``SendStreamingMessage``/``SendMessage``;
HTTP+JSON: ``/message:stream`` or ``/message:send`` under the interface URL), for each
variant asked for. Prints the transcripts (see ``_conversation``).
"""

from __future__ import annotations

import importlib.metadata
import uuid

import httpx
from _conversation import CARD_PATH, LEGACY_CARD_FIELDS, Transcript, Turn, card_headers, main
from a2a.client import ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState


def _state(value: int) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``input-required`` (the 0.3 spelling the transcript uses)."""
    return TaskState.Name(value).removeprefix("TASK_STATE_").lower().replace("_", "-")  # type: ignore[arg-type]


def _texts(parts: object) -> str:
    return "\n".join(part.text for part in parts if part.WhichOneof("content") == "text")  # type: ignore[attr-defined]


def _record(turn: Turn, event: StreamResponse) -> None:
    kind = event.WhichOneof("payload")
    turn.events.append(str(kind))
    if kind == "message":
        turn.kind = turn.kind or "message"
        turn.task_id = event.message.task_id or None
        turn.context_id = event.message.context_id
        turn.status_text = _texts(event.message.parts)
    elif kind == "task":
        turn.kind = turn.kind or "task"
        task = event.task
        turn.task_id, turn.context_id, turn.state = task.id, task.context_id, _state(task.status.state)
        turn.status_text = _texts(task.status.message.parts)
        turn.artifact_text = "\n".join(_texts(artifact.parts) for artifact in task.artifacts)
    elif kind == "status_update":
        # A follow-up to an existing task streams its updates without a Task first.
        turn.kind = turn.kind or "task"
        update = event.status_update
        turn.task_id, turn.context_id = update.task_id, update.context_id
        turn.state = _state(update.status.state)
        if update.status.HasField("message"):
            turn.status_text = _texts(update.status.message.parts)
    elif kind == "artifact_update":
        turn.kind = turn.kind or "task"
        text = _texts(event.artifact_update.artifact.parts)
        turn.artifact_text = f"{turn.artifact_text}{text}" if event.artifact_update.append else text


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
        config = ClientConfig(
            streaming=transcript.streaming,
            supported_protocol_bindings=[transcript.binding],
            httpx_client=http,
        )
        try:
            client = await ClientFactory(config).create_from_url(url)
        except Exception as exc:
            transcript.fail("discovery", exc)
            return
        card = client._card  # private: what the client's parser made of the card
        transcript.card = {
            "interfaces": [
                [i.protocol_binding, i.url, i.protocol_version] for i in card.supported_interfaces
            ],
            "streaming": card.capabilities.streaming,
        }
        transport = client._transport  # private, but which transport was chosen is the point
        transcript.transport = {"class": type(transport).__name__, "url": str(getattr(transport, "url", ""))}
        task_id: str | None = None
        context_id: str | None = None
        for number, text in enumerate(turns, start=1):
            message = Message(
                role=Role.ROLE_USER,
                parts=[Part(text=text)],
                message_id=uuid.uuid4().hex,
                task_id=task_id or "",
                context_id=context_id or "",
            )
            turn = Turn(sent_task_id=task_id, sent_context_id=context_id)
            transcript.turns.append(turn)
            try:
                async for event in client.send_message(SendMessageRequest(message=message)):
                    _record(turn, event)
            except Exception as exc:
                transcript.fail(f"turn {number}", exc)
                return
            task_id, context_id = turn.next_ids()
        await client.close()


if __name__ == "__main__":
    main(__doc__ or "", f"a2a-sdk {importlib.metadata.version('a2a-sdk')}", converse)
