"""Talk to any A2A agent as a red-team target.

:func:`connect_target` fetches and validates the target's agent card, picks the
interface to use (JSON-RPC or HTTP+JSON; protocol 1.0 preferred, 0.3 as the
fallback, the card's order breaking ties) and returns an :class:`A2ATarget`.
:class:`TargetConversation` keeps the ids of one conversation and always sends
both ``contextId`` and ``taskId`` on a follow-up to a parked task (a2a-python
#1206: a follow-up with only ``taskId`` is given a fresh context).

Every failure is raised as a :class:`~arena_core.errors.TargetError` subclass
whose message says what was wrong with the target.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, TransportProtocol
from google.protobuf.json_format import MessageToDict

from arena_core.errors import AgentCardError, TargetProtocolError, TargetUnreachableError

SUPPORTED_BINDINGS = (TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value)
MAX_CARD_BYTES = 1_000_000

_OPEN_STATES = frozenset(
    {
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_SUBMITTED,
    }
)
_STATE_NAMES = {
    TaskState.TASK_STATE_SUBMITTED: "submitted",
    TaskState.TASK_STATE_WORKING: "working",
    TaskState.TASK_STATE_INPUT_REQUIRED: "input-required",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_REJECTED: "rejected",
}


@dataclass(frozen=True, slots=True)
class TargetReply:
    """One answer from the target.

    ``state`` is the task state name (``input-required``, ``completed``,
    ``failed``, ...) or ``message`` when the agent answered with a bare Message.
    ``open`` tells whether the task accepts a follow-up with its taskId.
    """

    text: str
    context_id: str
    task_id: str | None
    state: str
    open: bool
    metadata: dict[str, Any]


def card_url_for(url: str) -> str:
    """The well-known card URL of a target given as a base URL or a card URL."""
    base = url.strip()
    if base.endswith(".json"):
        return base
    return f"{base.rstrip('/')}{AGENT_CARD_WELL_KNOWN_PATH}"


async def fetch_agent_card(url: str, http: httpx.AsyncClient) -> tuple[AgentCard, dict[str, Any]]:
    """Fetch and validate the card of the agent at ``url``.

    Returns the parsed card and the raw JSON. Raises TargetUnreachableError
    when nothing answers and AgentCardError when the answer is not a card.
    """
    card_url = card_url_for(url)
    try:
        response = await http.get(card_url, headers={"Accept": "application/json"})
    except httpx.TimeoutException as exc:
        raise TargetUnreachableError(f"target {url} did not answer in time ({type(exc).__name__})") from exc
    except httpx.HTTPError as exc:
        raise TargetUnreachableError(f"target {url} is not reachable: {exc or type(exc).__name__}") from exc
    if response.status_code != 200:
        raise AgentCardError(
            f"no A2A agent card at {card_url}: HTTP {response.status_code}"
            + (" (is this an A2A agent?)" if response.status_code == 404 else "")
        )
    if len(response.content) > MAX_CARD_BYTES:
        raise AgentCardError(f"agent card at {card_url} is larger than {MAX_CARD_BYTES} bytes")
    try:
        raw = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AgentCardError(f"{card_url} did not return JSON, so it is not an A2A agent card") from exc
    if not isinstance(raw, dict):
        raise AgentCardError(f"{card_url} returned JSON that is not an object, not an agent card")
    return parse_card(raw, card_url), raw


def parse_card(raw: dict[str, Any], source: str) -> AgentCard:
    """Validate card JSON (1.0, or 0.3 with legacy fields) into an AgentCard."""
    missing = [key for key in ("name", "skills") if key not in raw]
    if "supportedInterfaces" not in raw and "url" not in raw:
        missing.append("supportedInterfaces")
    if missing:
        raise AgentCardError(f"{source} is not a valid A2A agent card: missing {', '.join(missing)}")
    try:
        card = parse_agent_card(dict(raw))
    except Exception as exc:
        raise AgentCardError(f"{source} is not a valid A2A agent card: {exc}") from exc
    if not card.supported_interfaces:
        raise AgentCardError(f"{source} lists no interface to reach the agent")
    return card


def choose_interface(card: AgentCard) -> AgentInterface:
    """Pick JSON-RPC or HTTP+JSON, protocol 1.x first, then 0.3, in card order."""
    usable = [i for i in card.supported_interfaces if i.protocol_binding in SUPPORTED_BINDINGS]
    if not usable:
        offered = ", ".join(sorted({i.protocol_binding for i in card.supported_interfaces})) or "none"
        raise AgentCardError(
            f"agent '{card.name}' offers no interface the arena speaks "
            f"(offered: {offered}; supported: {', '.join(SUPPORTED_BINDINGS)})"
        )

    def rank(interface: AgentInterface) -> int:
        version = interface.protocol_version or ""
        if version.startswith("1."):
            return 0
        if version.startswith("0.3"):
            return 1
        return 2

    chosen: AgentInterface = min(usable, key=rank)
    return chosen


class A2ATarget:
    """A client for one target agent, bound to the interface chosen from its card."""

    def __init__(
        self,
        url: str,
        card: AgentCard,
        interface: AgentInterface,
        client: Client,
        *,
        owned_http: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.card = card
        self.interface = interface
        self._client = client
        self._owned_http = owned_http

    @property
    def protocol_version(self) -> str:
        """The A2A protocol version in use (``1.0`` or ``0.3``)."""
        return self.interface.protocol_version or "0.3"

    @property
    def binding(self) -> str:
        """The protocol binding in use (``JSONRPC`` or ``HTTP+JSON``)."""
        return self.interface.protocol_binding

    async def send(
        self, text: str, *, context_id: str | None = None, task_id: str | None = None
    ) -> TargetReply:
        """Send one user text message and wait for the agent's answer."""
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=text)],
            context_id=context_id or "",
            task_id=task_id or "",
        )
        request = SendMessageRequest(
            message=message,
            # The arena reads only the latest status; don't make the target resend everything.
            configuration=SendMessageConfiguration(history_length=1),
        )
        last: StreamResponse | None = None
        try:
            async for event in self._client.send_message(request):
                last = event
        except A2AClientTimeoutError as exc:
            raise TargetUnreachableError(f"target {self.url} timed out answering a message") from exc
        except A2AClientError as exc:
            raise TargetProtocolError(f"target {self.url} failed the message: {exc}") from exc
        except httpx.HTTPError as exc:
            raise TargetUnreachableError(
                f"target {self.url} is not reachable: {exc or type(exc).__name__}"
            ) from exc
        except Exception as exc:
            raise TargetProtocolError(
                f"target {self.url} answered in a way the A2A client could not use: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if last is None:
            raise TargetProtocolError(f"target {self.url} returned no answer to a message")
        return _reply_from(last, fallback_context=context_id)

    async def close(self) -> None:
        """Release the connection (the httpx client too, when this target made it)."""
        # A client given a shared httpx client leaves it open on close().
        await self._client.close()
        if self._owned_http is not None:
            await self._owned_http.aclose()


async def connect_target(
    url: str, *, timeout_s: float = 120.0, http: httpx.AsyncClient | None = None
) -> A2ATarget:
    """Resolve ``url``'s card and return a client bound to its best interface.

    ``http`` is used for the card and for the A2A calls when given (tests pass
    an ASGI transport here); otherwise one client is created and owned by the
    returned target.
    """
    owned = http is None
    client_http = http or httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0))
    try:
        card, _ = await fetch_agent_card(url, client_http)
        interface = choose_interface(card)
        pinned = AgentCard()
        pinned.CopyFrom(card)
        del pinned.supported_interfaces[:]
        pinned.supported_interfaces.append(interface)
        factory = ClientFactory(
            ClientConfig(
                streaming=False,
                httpx_client=client_http,
                supported_protocol_bindings=list(SUPPORTED_BINDINGS),
            )
        )
        client = factory.create(pinned)
    except BaseException:
        if owned:
            await client_http.aclose()
        raise
    return A2ATarget(url, card, interface, client, owned_http=client_http if owned else None)


def _text_of(parts: Any) -> str:
    chunks: list[str] = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            chunks.append(part.text)
        elif kind == "data":
            chunks.append(json.dumps(MessageToDict(part.data), separators=(",", ":")))
    return "\n".join(chunks)


def _reply_from(event: StreamResponse, *, fallback_context: str | None) -> TargetReply:
    kind = event.WhichOneof("payload")
    if kind == "message":
        message = event.message
        return TargetReply(
            text=_text_of(message.parts),
            context_id=message.context_id or fallback_context or "",
            task_id=message.task_id or None,
            state="message",
            open=False,
            metadata=MessageToDict(message.metadata) if message.HasField("metadata") else {},
        )
    if kind == "task":
        return _reply_from_task(event.task)
    raise TargetProtocolError(f"target answered a message with a '{kind}' event instead of a task or message")


def _reply_from_task(task: Task) -> TargetReply:
    status = task.status
    text = ""
    metadata: dict[str, Any] = {}
    if status.HasField("message") and status.message.parts:
        text = _text_of(status.message.parts)
        if status.message.HasField("metadata"):
            metadata = MessageToDict(status.message.metadata)
    if not text and task.artifacts:
        text = "\n".join(_text_of(artifact.parts) for artifact in task.artifacts)
    if not text:
        for message in reversed(task.history):
            if message.role == Role.ROLE_AGENT:
                text = _text_of(message.parts)
                break
    return TargetReply(
        text=text,
        context_id=task.context_id,
        task_id=task.id,
        state=_STATE_NAMES.get(status.state, "unknown"),
        open=status.state in _OPEN_STATES,
        metadata=metadata,
    )


class TargetConversation:
    """One conversation with a target: remembers ids, knows how to continue."""

    def __init__(self, target: A2ATarget) -> None:
        self._target = target
        self.context_id: str | None = None
        self.task_id: str | None = None
        self._task_open = False

    def reset(self) -> None:
        """Forget the ids: the next message starts a new conversation."""
        self.context_id = None
        self.task_id = None
        self._task_open = False

    async def send(self, text: str) -> TargetReply:
        """Send ``text`` in this conversation (a new one after :meth:`reset`).

        A parked task is continued with both ids; after a terminal task a new
        task is opened in the same context.
        """
        task_id = self.task_id if self._task_open else None
        reply = await self._target.send(text, context_id=self.context_id, task_id=task_id)
        self.context_id = reply.context_id or self.context_id
        self.task_id = reply.task_id
        self._task_open = reply.open
        return reply


__all__ = [
    "A2ATarget",
    "TargetConversation",
    "TargetReply",
    "card_url_for",
    "choose_interface",
    "connect_target",
    "fetch_agent_card",
    "parse_card",
]
