"""Talk to any A2A agent as a red-team target.

:func:`connect_target` connects to the target (:func:`~arena_core.a2a.client.connect.connect`:
its card, the interface chosen from it, the egress guard, the credentials, the rate limit and
the response limit) and returns an :class:`A2ATarget`, which sends one text message at a time
and reads the answer (:class:`~arena_core.a2a.client.target_reply.TargetReply`).
:class:`~arena_core.a2a.client.conversation.TargetConversation` keeps the ids of one conversation.

Every failure is raised as a :class:`~arena_core.errors.TargetError` subclass (or
TargetNotAllowedError) whose message says what was wrong with the target. A connection that
failed (refused, reset, closed before a complete answer) is
:class:`~arena_core.errors.TargetUnreachableError` (retryable) whether or not credentials are
in use: it is classified from the library's exception before that exception is dropped to keep
credentials out of tracebacks (:mod:`~arena_core.a2a.client.error_translation`).

Credentials: ``headers`` given to :func:`connect_target` (e.g. ``Authorization: Bearer ...``)
are a :class:`~arena_core.a2a.client.credentials.TargetCredentials`: sent only to the target's
origin and its chosen interface's, within the token's scope, never over a redirect, and
redacted from the replies of a target that echoes them.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, ClientCallContext
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
)
from google.protobuf.struct_pb2 import Struct

from arena_core.a2a.client.attachments import Attachment
from arena_core.a2a.client.cancel import cancel_task_quietly
from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.client.connect import AgentRole, Connection, connect
from arena_core.a2a.client.credentials import TargetCredentials, redact
from arena_core.a2a.client.error_translation import (
    auth_failure,
    chained_cause,
    raise_broken_connection_in,
    raise_refusal_in,
    status_in_chain,
)
from arena_core.a2a.client.response_limits import DEFAULT_MAX_RESPONSE_BYTES, ResponseRefusedError
from arena_core.a2a.client.target_reply import TargetReply, reply_from
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.egress_policy import EgressPolicy
from arena_core.errors import (
    TargetNotAllowedError,
    TargetProtocolError,
    TargetRateLimitedError,
    TargetUnreachableError,
)
from arena_core.origin import Origin
from arena_core.rate_limit import RateLimiter
from arena_core.support_desk import ToolCallRecord

logger = logging.getLogger(__name__)

RELEASE_TIMEOUT_S = 5.0
"""How long :meth:`A2ATarget.close` waits for the target to cancel the tasks left parked."""


class A2ATarget:
    """A client for one target agent, bound to the interface chosen from its card."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._credentials = connection.credentials
        self._parked: set[str] = set()
        """Ids of tasks this client left waiting for input (released by :meth:`close`)."""
        self._reported: dict[str, frozenset[str]] = {}
        """For each parked task, the artifacts already reported in a reply."""

    def __repr__(self) -> str:
        return f"A2ATarget(url={self.url!r}, binding={self.binding!r}, version={self.protocol_version!r})"

    @property
    def url(self) -> str:
        """The target's URL, as given."""
        return self._connection.url

    @property
    def card(self) -> AgentCard:
        """The target's agent card, as fetched."""
        return self._connection.card

    @property
    def interface(self) -> AgentInterface:
        """The interface chosen from the card: the only one spoken to."""
        return self._connection.interface

    @property
    def authenticated(self) -> bool:
        """True when requests to this target carry credentials."""
        return self._credentials is not None and self._credentials.applies_to(self.interface.url)

    @property
    def protocol_version(self) -> str:
        """The A2A protocol version in use (``1.0`` or ``0.3``)."""
        return self.interface.protocol_version or "0.3"

    @property
    def binding(self) -> str:
        """The protocol binding in use (``JSONRPC`` or ``HTTP+JSON``)."""
        return self.interface.protocol_binding

    def supports_extension(self, uri: str) -> bool:
        """True when the target's card lists the A2A extension ``uri``."""
        return any(extension.uri == uri for extension in self.card.capabilities.extensions)

    async def send(
        self,
        text: str,
        *,
        context_id: str | None = None,
        task_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        extensions: tuple[str, ...] = (),
        attachments: Sequence[Attachment] = (),
    ) -> TargetReply:
        """Send one user message (its text, then ``attachments`` as parts) and wait for the
        agent's answer.

        ``metadata`` becomes the message's metadata; ``extensions`` are the A2A extensions
        the message uses, named in the ``A2A-Extensions`` header.
        """
        message = Message(
            role=Role.ROLE_USER,
            message_id=str(uuid.uuid4()),
            parts=[Part(text=text), *(attachment.as_part() for attachment in attachments)],
            context_id=context_id or "",
            task_id=task_id or "",
        )
        if metadata:
            struct = Struct()
            struct.update(dict(metadata))
            message.metadata.CopyFrom(struct)
        request = SendMessageRequest(
            message=message,
            # The arena reads only the latest status; don't make the target resend everything.
            configuration=SendMessageConfiguration(history_length=1),
        )
        call = (
            ClientCallContext(
                service_parameters=ServiceParametersFactory.create([with_a2a_extensions(list(extensions))])
            )
            if extensions
            else None
        )
        last = await self._last_event(request, call)
        if last is None:
            raise TargetProtocolError(f"target {self.url} returned no answer to a message")
        reported = self._reported.pop(task_id, frozenset()) if task_id else frozenset()
        reply, reported = reply_from(last, fallback_context=context_id, reported=reported)
        if task_id:
            self._parked.discard(task_id)
        if reply.open and reply.task_id:
            self._parked.add(reply.task_id)
            self._reported[reply.task_id] = reported
        if self._credentials is None:
            return reply
        # A target that echoes the credentials must not get them into transcripts.
        return TargetReply(
            text=self._credentials.redact(reply.text),
            context_id=reply.context_id,
            task_id=reply.task_id,
            state=reply.state,
            open=reply.open,
            metadata=self._credentials.redact_json(reply.metadata),
            actions=tuple(self.redact_records(reply.actions)),
        )

    def redact_records(self, records: Sequence[ToolCallRecord]) -> list[ToolCallRecord]:
        """``records`` with the target's credentials cut out: a target may echo them into the
        arguments, results or errors of the tool calls it reports (in its task or its trace)."""
        credentials = self._credentials
        if credentials is None:
            return list(records)
        return [
            record.model_copy(
                update={
                    "tool": credentials.redact(record.tool)[:100],
                    "call_id": credentials.redact(record.call_id)[:200],
                    "arguments": credentials.redact_json(record.arguments),
                    "result": credentials.redact_json(record.result),
                    "error": None if record.error is None else credentials.redact(record.error)[:2000],
                }
            )
            for record in records
        ]

    async def _last_event(
        self, request: SendMessageRequest, call: ClientCallContext | None = None
    ) -> StreamResponse | None:
        """The last event of the target's answer to ``request``; every failure translated."""
        last: StreamResponse | None = None
        try:
            async for event in self._connection.client.send_message(request, context=call):
                last = event
        except (TargetNotAllowedError, TargetRateLimitedError):
            raise
        except ResponseRefusedError as exc:
            raise TargetProtocolError(exc.message) from None
        except A2AClientTimeoutError as exc:
            timed_out = f"target {self.url} timed out answering a message"
            raise TargetUnreachableError(timed_out) from chained_cause(exc, self._credentials)
        except (A2AClientError, httpx.HTTPError) as exc:
            self._raise_failure(exc)
        except Exception as exc:  # noqa: BLE001 - translated below, always raised
            raise_refusal_in(exc)
            raise_broken_connection_in(exc, url=self.url, credentials=self._credentials)
            raise TargetProtocolError(
                self._redact(
                    f"target {self.url} answered in a way the A2A client could not use: "
                    f"{type(exc).__name__}: {exc}"
                )
            ) from chained_cause(exc, self._credentials)
        return last

    def _raise_failure(self, exc: A2AClientError | httpx.HTTPError) -> NoReturn:
        """Raise what an error of the A2A or HTTP client means for the target."""
        raise_refusal_in(exc)
        cause = chained_cause(exc, self._credentials)
        status = status_in_chain(exc)
        if status in (401, 403):
            what = f"a message ({self.interface.url})"
            raise auth_failure(self.url, status, sent=self.authenticated, what=what) from cause
        raise_broken_connection_in(exc, url=self.url, credentials=self._credentials)
        if isinstance(exc, A2AClientError):
            raise TargetProtocolError(self._redact(f"target {self.url} failed the message: {exc}")) from cause
        raise TargetUnreachableError(
            self._redact(f"target {self.url} is not reachable: {exc or type(exc).__name__}")
        ) from cause

    def _redact(self, message: str) -> str:
        return redact(message, self._credentials)

    async def close(self) -> None:
        """Cancel the tasks this client left waiting for input, then release the connection (the
        httpx client too, when this target made it).

        The cancels are a courtesy to the target: a task parked in input-required holds its
        agent's resources until the agent's own idle timeout (the arena's defender keeps an
        active task in memory for each; docs/performance.md). They are best effort, at most
        :data:`RELEASE_TIMEOUT_S` in all, and a target that refuses or ignores them changes
        nothing for the match, which is over.
        """
        parked, self._parked = sorted(self._parked), set()
        self._reported.clear()
        if parked:
            try:
                async with asyncio.timeout(RELEASE_TIMEOUT_S):
                    for task_id in parked:  # one at a time, like every other request of a match
                        await cancel_task_quietly(
                            self._connection.client, task_id, who=f"target {self.url}", redact=self._redact
                        )
            except TimeoutError:
                logger.debug("target %s did not answer every cancel within %s s", self.url, RELEASE_TIMEOUT_S)
        # A client given a shared httpx client leaves it open on close().
        await self._connection.close()


async def connect_target(
    url: str,
    *,
    timeout_s: float = 120.0,
    http: httpx.AsyncClient | None = None,
    headers: Mapping[str, str] | None = None,
    guard: EgressGuard | None = None,
    limiter: RateLimiter | None = None,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    credential_scope: frozenset[Origin] | None = None,
    card_cache: CardCache | None = None,
) -> A2ATarget:
    """Resolve ``url``'s card and return a client bound to its best interface.

    ``http`` is used for the card and for the A2A calls when given (tests pass
    an ASGI transport here); otherwise one client is created and owned by the
    returned target, every request of which passes ``guard`` (by default, the
    built-in deny list only). With a ``guard``, the target URL and the chosen
    interface's URL are checked before any request; a refusal raises
    TargetNotAllowedError. ``headers`` (credentials such as ``Authorization: Bearer
    ...``) go with every request to the target: the card fetch and every A2A
    call, to the target's origin and its chosen interface's origin only (see the
    module doc); a shared ``http`` client is not modified. A header value that
    cannot be sent over HTTP raises ValueError (without the value). With a
    ``limiter`` every request takes a slot first
    (:mod:`~arena_core.a2a.client.target_http_client`); a request that cannot have one
    in time, or a 429 from the target that does not clear in time, raises
    TargetRateLimitedError. No response of the target is read past
    ``max_response_bytes`` (``ARENA_TARGET_MAX_RESPONSE_BYTES``): a larger one raises
    TargetProtocolError (kind ``target_protocol_error``) naming the setting.
    ``credential_scope`` (the origins the token may go to, ``ARENA_TARGET_CREDENTIAL_ORIGINS``):
    a target, or a card's chosen interface, outside it raises TargetNotAllowedError before
    anything is sent to it. ``card_cache`` reuses the target's card as its ``Cache-Control``
    allows (:mod:`~arena_core.a2a.client.card_cache`).
    """
    credentials = TargetCredentials(headers, url.strip(), scope=credential_scope) if headers else None
    if guard is None and http is None:
        guard = EgressGuard(EgressPolicy())
    connection = await connect(
        url,
        AgentRole.TARGET,
        timeout_s=timeout_s,
        http=http,
        credentials=credentials,
        guard=guard,
        limiter=limiter,
        max_response_bytes=max_response_bytes,
        card_cache=card_cache,
    )
    return A2ATarget(connection)


__all__ = ["RELEASE_TIMEOUT_S", "A2ATarget", "connect_target"]
