"""Talk to any A2A agent as a red-team target.

:func:`connect_target` fetches and validates the target's agent card, picks the
interface to use (JSON-RPC or HTTP+JSON; protocol 1.0 preferred, 0.3 as the
fallback, the card's order breaking ties) and returns an :class:`A2ATarget`.
:class:`TargetConversation` keeps the ids of one conversation and always sends
both ``contextId`` and ``taskId`` on a follow-up to a parked task (a2a-python
#1206: a follow-up with only ``taskId`` is given a fresh context); after a task that
ended, or a bare Message, it opens the next task in the same context.

Every failure is raised as a :class:`~arena_core.errors.TargetError` subclass
whose message says what was wrong with the target. A connection that failed (refused,
reset, closed before a complete answer) is :class:`~arena_core.errors.TargetUnreachableError`
(retryable) whether or not credentials are in use: it is classified from the library's
exception before that exception is dropped to keep credentials out of tracebacks.

Credentials: ``headers`` given to :func:`connect_target` (e.g. ``Authorization:
Bearer ...``) are attached by a :class:`TargetCredentials` auth object, per
request, never to a shared httpx client. They are sent only to the target's own
origin (scheme, host and port of the URL given) and to the origin of the
interface chosen from its card, unless that interface would downgrade an https
target to plain http; redirects are not followed while credentials are in use.
Their values are kept out of reprs and error messages, and redacted from the
replies of a target that echoes them.

Egress: with an :class:`~arena_core.a2a.egress_guard.EgressGuard` (the
attacker's ``ARENA_TARGET_ALLOWLIST``), the target URL and the interface chosen
from its card are checked before anything connects to them. The client that
:func:`connect_target` makes itself checks every request again (redirects
included) and connects only to checked addresses. A refusal raises
:class:`~arena_core.errors.TargetNotAllowedError`.

Rate limits: with a :class:`~arena_core.rate_limit.RateLimiter` (the attacker's
``ARENA_TARGET_RATE_LIMIT``), every request of a target (the card fetch, each
message) takes a slot for its origin before it goes out, waiting at most until
its deadline: ``timeout_s`` after the call started, or the end of the enclosing
:func:`~arena_core.rate_limit.deadline_scope` (the match) when sooner. A target
answering 429 Too Many Requests is retried once after its ``Retry-After`` (1 s
without one) when that fits the deadline, and its origin is held for that long
for every request of the limiter. Otherwise the call raises
:class:`~arena_core.rate_limit.TargetRateLimitedError` (kind ``rate_limited``).

Response size: every response of a target (the card, each reply, an event stream as a
whole) is read through :func:`~arena_core.a2a.response_limits.limit_response`: at most
``max_response_bytes`` bytes (``ARENA_TARGET_MAX_RESPONSE_BYTES``), decoded, and never
more than :data:`MAX_CARD_BYTES` for the card. A response over the limit raises
TargetProtocolError (naming the setting) as soon as the limit is passed, before the rest
is read; a card over its own limit raises AgentCardError.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.client import A2AClientError, A2AClientTimeoutError, Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.types.a2a_pb2 import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.constants import (
    AGENT_CARD_WELL_KNOWN_PATH,
    PROTOCOL_VERSION_1_0,
    VERSION_HEADER,
    TransportProtocol,
)
from google.protobuf.json_format import MessageToDict

from arena_core.a2a.egress_guard import EgressGuard, display_origin, guarded_client, not_allowed_in
from arena_core.a2a.response_limits import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_RESPONSE_BYTES,
    ResponseRefusedError,
    ResponseTooLargeError,
    limit_response,
    refused_response_in,
)
from arena_core.credential_scope import Origin, display, origin_of
from arena_core.egress_policy import EgressPolicy
from arena_core.errors import (
    AgentCardError,
    TargetAuthError,
    TargetNotAllowedError,
    TargetProtocolError,
    TargetUnreachableError,
)
from arena_core.exception_chain import find_in_chain
from arena_core.rate_limit import (
    RateLimiter,
    TargetRateLimitedError,
    current_deadline,
    retry_after_s,
    target_origin,
)

logger = logging.getLogger(__name__)

SUPPORTED_BINDINGS = (TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value)
MAX_CARD_BYTES = 1_000_000
RELEASE_TIMEOUT_S = 5.0
"""How long :meth:`A2ATarget.close` waits for the target to cancel the tasks left parked."""
REDACTED = "[redacted]"
CREDENTIALS_HINT = (
    "name an ARENA_TARGET_TOKEN_* variable of the attacker in the match's target_token_env "
    "(credentials.bearer_token_env in a campaign)"
)

# Visible ASCII and inner spaces: anything else would be refused by the HTTP stack with
# an error that quotes the value.
_HEADER_VALUE = re.compile(r"[\x21-\x7e]+(?: +[\x21-\x7e]+)*")
DEFAULT_RETRY_AFTER_S = 1.0
"""How long to wait before retrying a 429 that names no (readable) Retry-After."""
MAX_HOLD_S = 3600.0
"""The longest a target's Retry-After holds its origin for other requests."""

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

    ``text`` is what the agent said in this turn: a bare Message's text, or a task's status
    message followed by the artifacts this turn added (an open task's earlier artifacts are
    not repeated), or failing both the task's last agent message. ``state`` is the task state
    name (``input-required``, ``completed``, ``failed``, ...) or ``message`` when the agent
    answered with a bare Message. ``open`` tells whether the task accepts a follow-up with
    its taskId.
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


class TargetCredentials(httpx.Auth):
    """Headers (e.g. a bearer token) for one target, sent only to its allowed origins.

    Passed per request (``auth=``), so a shared httpx client is never changed. The
    values never appear in ``repr`` or in the error messages of this module. With a
    ``scope`` (the token's ``ARENA_TARGET_CREDENTIAL_ORIGINS`` entry) no origin outside
    it is ever added: a target outside it raises TargetNotAllowedError here.
    """

    def __init__(
        self, headers: Mapping[str, str], target_url: str, *, scope: frozenset[Origin] | None = None
    ) -> None:
        for name, value in headers.items():
            if not _HEADER_VALUE.fullmatch(value):
                # Never quote the value: it is a secret.
                raise ValueError(
                    f"the {name} header for target {target_url} is empty or holds characters "
                    "that cannot be sent in HTTP (only visible ASCII and inner spaces)"
                )
        self._headers = dict(headers)
        self._https = httpx.URL(target_url).scheme == "https"
        self._scope = scope
        if not self.in_scope(target_url):
            raise TargetNotAllowedError(
                f"target {display_origin(target_url)} is outside the origins its token may go to "
                "(ARENA_TARGET_CREDENTIAL_ORIGINS)"
            )
        self._origins = {origin_of(target_url)}
        secrets = set(self._headers.values())
        secrets |= {value.split(" ", 1)[1] for value in self._headers.values() if " " in value}
        # Longest first, so a token is not half-redacted inside its "Bearer <token>" form.
        self._secrets = tuple(sorted(secrets, key=len, reverse=True))

    def in_scope(self, url: httpx.URL | str) -> bool:
        """True unless a scope is set and ``url``'s origin is outside it."""
        return self._scope is None or origin_of(url) in self._scope

    def allow(self, url: str) -> bool:
        """Also send the headers to ``url``'s origin, unless it downgrades https to http or
        leaves the scope."""
        if (self._https and httpx.URL(url).scheme != "https") or not self.in_scope(url):
            return False
        self._origins.add(origin_of(url))
        return True

    def applies_to(self, url: httpx.URL | str) -> bool:
        """True when a request to ``url`` carries the headers."""
        origin = origin_of(url)
        return origin is not None and origin in self._origins

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if self.applies_to(request.url):
            request.headers.update(self._headers)
        yield request

    def redact(self, text: str) -> str:
        """``text`` with every credential value replaced by ``[redacted]``."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def redact_json(self, value: Any) -> Any:
        """:meth:`redact` applied to every string in a JSON-like value."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(str(k)): self.redact_json(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_json(v) for v in value]
        return value

    def __repr__(self) -> str:
        names = ", ".join(sorted(self._headers))
        origins = ", ".join(sorted(display(origin) for origin in self._origins if origin is not None))
        return f"TargetCredentials(headers=[{names}], origins=[{origins}])"


class _NoTransport(httpx.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise RuntimeError("requests of a target client are sent through its shared client")


class TargetHttpClient(httpx.AsyncClient):
    """``inner`` as seen by one target's requests: rate-limited, 429-aware, credentialed, size-capped.

    The a2a-sdk transports call ``build_request`` and ``send`` on the client they are
    given; both are delegated to ``inner`` (its transport, timeouts, hooks and pool).
    ``send`` first takes a ``limiter`` slot for the request's origin (see the module doc
    for deadlines and 429s). With ``credentials``, requests carry this target's auth and
    never follow redirects. ``inner`` is not changed; headers the SDK sets on this
    client's defaults are added to each request. Every response's body is read (by ``send``,
    or by the caller of ``send(..., stream=True)``) through
    :func:`~arena_core.a2a.response_limits.limit_response`: at most ``max_response_bytes``.
    """

    def __init__(
        self,
        inner: httpx.AsyncClient,
        *,
        credentials: TargetCredentials | None,
        limiter: RateLimiter | None,
        timeout_s: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(transport=_NoTransport(), trust_env=False)
        self._inner = inner
        self._credentials = credentials
        self._limiter = limiter
        self._timeout_s = timeout_s
        self._max_response_bytes = max_response_bytes

    def build_request(self, *args: Any, **kwargs: Any) -> httpx.Request:
        request = self._inner.build_request(*args, **kwargs)
        # Defaults set on this client (the a2a-sdk sets A2A-Version) rank below the request's own.
        for name, value in self.headers.multi_items():
            request.headers.setdefault(name, value)
        return request

    async def send(self, request: httpx.Request, *, stream: bool = False, **kwargs: Any) -> httpx.Response:
        if self._credentials is not None:
            kwargs["auth"] = self._credentials
            kwargs["follow_redirects"] = False
        # Only the codings the size limit decodes itself, as it counts.
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        response = await self._send_paced(request, kwargs)
        if not stream:
            try:
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
        return response

    async def _send_paced(self, request: httpx.Request, kwargs: dict[str, Any]) -> httpx.Response:
        """``request`` sent in its rate-limit slot, 429s handled; its body is not read yet."""
        deadline = time.monotonic() + self._timeout_s
        until_match_ends = current_deadline()
        if until_match_ends is not None:
            deadline = min(deadline, until_match_ends)
        origin = target_origin(request.url)
        await self._take_slot(origin, deadline)
        response = await self._send_limited(request, kwargs)
        if response.status_code != 429:
            return response
        await response.aclose()
        asked = retry_after_s(response.headers.get("Retry-After"))
        wait = DEFAULT_RETRY_AFTER_S if asked is None else asked
        if self._limiter is not None:
            # Every request to this origin backs off, on every replica, not only this one.
            await self._limiter.hold(origin, min(wait, MAX_HOLD_S))
        left = deadline - time.monotonic()
        if wait > left:
            raise TargetRateLimitedError(
                f"target {origin} answered 429 Too Many Requests and asks to wait {wait:.1f} s, "
                f"longer than the {max(0.0, left):.1f} s left before the request's deadline; "
                "try again later"
            )
        await asyncio.sleep(wait)
        await self._take_slot(origin, deadline)
        response = await self._send_limited(request, kwargs)
        if response.status_code == 429:
            await response.aclose()
            raise TargetRateLimitedError(
                f"target {origin} answered 429 Too Many Requests again after waiting {wait:.1f} s "
                "as it asked; try again later"
            )
        return response

    async def _send_limited(self, request: httpx.Request, kwargs: dict[str, Any]) -> httpx.Response:
        """``request`` sent by ``inner``; the body of its response, not read yet, is size-capped."""
        response = await self._inner.send(request, stream=True, **kwargs)
        try:
            limit_response(response, self._max_response_bytes, url=request.url)
        except BaseException:
            await response.aclose()
            raise
        return response

    async def _take_slot(self, origin: str, deadline: float) -> None:
        if self._limiter is not None:
            await self._limiter.acquire(origin, max_wait_s=deadline - time.monotonic())

    @property
    def is_closed(self) -> bool:
        return self._inner.is_closed


def _auth_failure(url: str, status: int, *, sent: bool, what: str) -> TargetAuthError:
    reason = "Unauthorized" if status == 401 else "Forbidden"
    if sent:
        problem = "it rejected the credentials sent (check the token's value and rights)"
    elif status == 401:
        problem = f"it needs credentials; {CREDENTIALS_HINT}"
    else:
        problem = f"it refuses requests without credentials; {CREDENTIALS_HINT}"
    return TargetAuthError(f"target {url} answered {status} {reason} to {what}: {problem}")


def status_in_chain(exc: BaseException) -> int | None:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code
        seen = seen.__cause__ or seen.__context__
    return None


async def fetch_agent_card(
    url: str, http: httpx.AsyncClient, *, headers: Mapping[str, str] | None = None
) -> tuple[AgentCard, dict[str, Any]]:
    """Fetch and validate the card of the agent at ``url``.

    ``headers`` (credentials) are sent to the card's origin only. Returns the
    parsed card and the raw JSON. Raises TargetUnreachableError when nothing
    answers, TargetError on 401/403 and AgentCardError when the answer is not a card.
    """
    credentials = TargetCredentials(headers, card_url_for(url)) if headers else None
    return await _fetch_card(url, http, credentials)


async def _fetch_card(
    url: str, http: httpx.AsyncClient, credentials: TargetCredentials | None
) -> tuple[AgentCard, dict[str, Any]]:
    card_url = card_url_for(url)
    # A2A-Version 1.0: an agent that renders its card per version (ours do) sends the 1.0 card,
    # the one a 1.x client should read; others ignore the header.
    headers = {"Accept": "application/json", VERSION_HEADER: PROTOCOL_VERSION_1_0}
    options: dict[str, Any] = {"headers": headers}
    if credentials is not None:
        options.update(auth=credentials, follow_redirects=False)
    try:
        async with http.stream("GET", card_url, **options) as response:
            if response.status_code in (401, 403):
                what = f"the agent card request ({card_url})"
                raise _auth_failure(url, response.status_code, sent=credentials is not None, what=what)
            if response.status_code != 200:
                raise AgentCardError(
                    f"no A2A agent card at {card_url}: HTTP {response.status_code}"
                    + (" (is this an A2A agent?)" if response.status_code == 404 else "")
                )
            content = await _read_card(response, card_url)
    except ResponseRefusedError as exc:
        raise TargetProtocolError(exc.message) from None
    except httpx.TimeoutException as exc:
        raise TargetUnreachableError(
            f"target {url} did not answer in time ({type(exc).__name__})"
        ) from _cause(exc, credentials)
    except httpx.HTTPError as exc:
        message = f"target {url} is not reachable: {exc or type(exc).__name__}"
        message = credentials.redact(message) if credentials else message
        raise TargetUnreachableError(message) from _cause(exc, credentials)
    try:
        raw = json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = f"{card_url} did not return JSON, so it is not an A2A agent card"
        raise AgentCardError(message) from _cause(exc, credentials)
    if not isinstance(raw, dict):
        raise AgentCardError(f"{card_url} returned JSON that is not an object, not an agent card")
    if credentials is None:
        return parse_card(raw, card_url), raw
    try:
        return parse_card(raw, card_url), raw
    except AgentCardError as exc:
        raise AgentCardError(credentials.redact(exc.message)) from _cause(exc, credentials)


async def _read_card(response: httpx.Response, card_url: str) -> bytes:
    """The card's body: at most MAX_CARD_BYTES (and the target's response limit), streamed."""
    try:
        limit_response(response, MAX_CARD_BYTES, url=card_url)
        return await response.aread()
    except ResponseTooLargeError as exc:
        if exc.limit != MAX_CARD_BYTES:
            raise
        raise AgentCardError(f"agent card at {card_url} is larger than {MAX_CARD_BYTES} bytes") from None


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
        credentials: TargetCredentials | None = None,
    ) -> None:
        self.url = url
        self.card = card
        self.interface = interface
        self._client = client
        self._owned_http = owned_http
        self._credentials = credentials
        self._parked: set[str] = set()
        """Ids of tasks this client left waiting for input (released by :meth:`close`)."""
        self._reported: dict[str, frozenset[str]] = {}
        """For each parked task, the artifacts already reported in a reply (:func:`_artifact_key`)."""

    def __repr__(self) -> str:
        return f"A2ATarget(url={self.url!r}, binding={self.binding!r}, version={self.protocol_version!r})"

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
        except (TargetNotAllowedError, TargetRateLimitedError):
            raise
        except ResponseRefusedError as exc:
            raise TargetProtocolError(exc.message) from None
        except A2AClientTimeoutError as exc:
            timed_out = f"target {self.url} timed out answering a message"
            raise TargetUnreachableError(timed_out) from _cause(exc, self._credentials)
        except (A2AClientError, httpx.HTTPError) as exc:
            _raise_refusal_in(exc)
            status = status_in_chain(exc)
            if status in (401, 403):
                raise _auth_failure(
                    self.url, status, sent=self.authenticated, what=f"a message ({self.interface.url})"
                ) from _cause(exc, self._credentials)
            self._raise_broken_connection_in(exc)
            if isinstance(exc, A2AClientError):
                failure = f"target {self.url} failed the message: {exc}"
                raise TargetProtocolError(self._redact(failure)) from _cause(exc, self._credentials)
            raise TargetUnreachableError(
                self._redact(f"target {self.url} is not reachable: {exc or type(exc).__name__}")
            ) from _cause(exc, self._credentials)
        except Exception as exc:  # noqa: BLE001 - translated below, always raised
            _raise_refusal_in(exc)
            self._raise_broken_connection_in(exc)
            raise TargetProtocolError(
                self._redact(
                    f"target {self.url} answered in a way the A2A client could not use: "
                    f"{type(exc).__name__}: {exc}"
                )
            ) from _cause(exc, self._credentials)
        if last is None:
            raise TargetProtocolError(f"target {self.url} returned no answer to a message")
        reported = self._reported.pop(task_id, frozenset()) if task_id else frozenset()
        reply, reported = _reply_from(last, fallback_context=context_id, reported=reported)
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
        )

    def _redact(self, message: str) -> str:
        return self._credentials.redact(message) if self._credentials else message

    def _raise_broken_connection_in(self, exc: BaseException) -> None:
        """Raise TargetUnreachableError when a broken connection lies behind ``exc``.

        Decided here, from the whole chain, because with credentials in use the chain is cut
        off the error raised (:func:`_cause`): nobody after this point can tell a connection
        that broke (retryable) from a target that misspoke. The message names the failure's
        type and text, redacted, never the request.
        """
        broken = connection_failure_in(exc)
        if broken is None:
            return
        detail = f"{type(broken).__name__}: {broken}" if str(broken) else type(broken).__name__
        raise TargetUnreachableError(
            self._redact(f"target {self.url} is not reachable: the connection failed ({detail})")
        ) from _cause(exc, self._credentials)

    async def _cancel_quietly(self, task_id: str) -> None:
        await cancel_task_quietly(self._client, task_id, who=f"target {self.url}", redact=self._redact)

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
                        await self._cancel_quietly(task_id)
            except TimeoutError:
                logger.debug("target %s did not answer every cancel within %s s", self.url, RELEASE_TIMEOUT_S)
        # A client given a shared httpx client leaves it open on close().
        await self._client.close()
        if self._owned_http is not None:
            await self._owned_http.aclose()


async def cancel_task_quietly(
    client: Client, task_id: str, *, who: str, redact: Callable[[str], str] = str
) -> None:
    """Ask ``who`` (an A2A agent) to cancel ``task_id``; whatever it answers is only logged.

    The caller is abandoning the task, so a refusal (it already ended) or a failure changes
    nothing. A cancel of the caller itself still propagates: it is never swallowed here.
    """
    try:
        await client.cancel_task(CancelTaskRequest(id=task_id))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the agent answers, the task is abandoned
        logger.debug("%s did not cancel task %s: %s", who, task_id, redact(str(exc)))


def _cause(exc: BaseException, credentials: TargetCredentials | None) -> BaseException | None:
    """What to chain a translated error to: nothing while credentials are in use.

    The original error can quote them (a target echoing its token in an error), and a chained
    traceback reaches logs and spans (``exception.stacktrace``) unredacted.
    """
    return None if credentials is not None else exc


_NOT_CONNECTION_FAILURES = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


def connection_failure_in(exc: BaseException) -> httpx.TransportError | None:
    """The httpx failure of the connection itself behind ``exc`` (however a library wrapped
    it), or None.

    Refused, reset, timed out, or closed by the other side before a complete answer (what a
    killed replica or a cut network looks like): the target's A2A is not at fault, and another
    try may well succeed. A URL scheme httpx cannot speak, or a request it would not send, is
    not such a failure.
    """
    failure = find_in_chain(exc, httpx.TransportError)
    if failure is None or isinstance(failure, _NOT_CONNECTION_FAILURES):
        return None
    return failure


def _raise_refusal_in(exc: BaseException) -> None:
    """Raise the egress refusal or the refused response a library wrapped into ``exc``, if any."""
    refused = not_allowed_in(exc)
    if refused is not None:
        raise refused from exc
    response_refused = refused_response_in(exc)
    if response_refused is not None:
        # Alone: the wrapping says nothing more, and a transport failure in the chain would
        # make it look worth retrying.
        raise TargetProtocolError(response_refused.message) from None


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
    ``limiter`` every request takes a slot first (see the module doc); a request
    that cannot have one in time, or a 429 from the target that does not clear in
    time, raises TargetRateLimitedError. No response of the target is read past
    ``max_response_bytes`` (``ARENA_TARGET_MAX_RESPONSE_BYTES``): a larger one raises
    TargetProtocolError (kind ``target_protocol_error``) naming the setting.
    ``credential_scope`` (the origins the token may go to, ``ARENA_TARGET_CREDENTIAL_ORIGINS``):
    a target, or a card's chosen interface, outside it raises TargetNotAllowedError before
    anything is sent to it.
    """
    credentials = TargetCredentials(headers, url.strip(), scope=credential_scope) if headers else None
    owned = http is None
    if guard is None and owned:
        guard = EgressGuard(EgressPolicy())
    if guard is not None:
        await guard.check_url(card_url_for(url), what="the target")
    client_http = http or guarded_client(guard or EgressGuard(EgressPolicy()), timeout=_timeout(timeout_s))
    # Every request of this target, the card fetch included, goes through one wrapper.
    sdk_http = TargetHttpClient(
        client_http,
        credentials=credentials,
        limiter=limiter,
        timeout_s=timeout_s,
        max_response_bytes=max_response_bytes,
    )
    try:
        card, _ = await _fetch_card(url, sdk_http, credentials)
        interface = choose_interface(card)
        if guard is not None:
            await guard.check_url(
                interface.url, what=f"the interface the agent card of {display_origin(url)} lists"
            )
        pinned = AgentCard()
        pinned.CopyFrom(card)
        del pinned.supported_interfaces[:]
        pinned.supported_interfaces.append(interface)
        if credentials is not None:
            if not credentials.in_scope(interface.url):
                raise TargetNotAllowedError(
                    f"the agent card of {display_origin(url)} moves the match to an interface on "
                    f"{display_origin(interface.url)}, outside the origins this target's token may "
                    "go to (ARENA_TARGET_CREDENTIAL_ORIGINS); nothing was sent there"
                )
            credentials.allow(interface.url)
        factory = ClientFactory(
            ClientConfig(
                streaming=False,
                httpx_client=sdk_http,
                supported_protocol_bindings=list(SUPPORTED_BINDINGS),
            )
        )
        client = factory.create(pinned)
    except BaseException:
        if owned:
            await client_http.aclose()
        raise
    return A2ATarget(
        url,
        card,
        interface,
        client,
        owned_http=client_http if owned else None,
        credentials=credentials,
    )


def _timeout(timeout_s: float) -> httpx.Timeout:
    # Connecting gets at most 10 s, and never longer than ARENA_TARGET_TIMEOUT_S.
    return httpx.Timeout(timeout_s, connect=min(10.0, timeout_s))


def _text_of(parts: Any) -> str:
    chunks: list[str] = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            chunks.append(part.text)
        elif kind == "data":
            chunks.append(json.dumps(MessageToDict(part.data), separators=(",", ":")))
    return "\n".join(chunks)


def _reply_from(
    event: StreamResponse, *, fallback_context: str | None, reported: frozenset[str]
) -> tuple[TargetReply, frozenset[str]]:
    """The reply in ``event`` and the artifacts of its task reported so far (``reported`` before)."""
    kind = event.WhichOneof("payload")
    if kind == "message":
        message = event.message
        reply = TargetReply(
            text=_text_of(message.parts),
            context_id=message.context_id or fallback_context or "",
            task_id=message.task_id or None,
            state="message",
            open=False,
            metadata=MessageToDict(message.metadata) if message.HasField("metadata") else {},
        )
        return reply, reported
    if kind == "task":
        return _reply_from_task(event.task, reported)
    raise TargetProtocolError(f"target answered a message with a '{kind}' event instead of a task or message")


def _reply_from_task(task: Task, reported: frozenset[str]) -> tuple[TargetReply, frozenset[str]]:
    """What the agent said in this turn: its status message, then every artifact not in ``reported``.

    Both, because agents that complete a task per turn often put the answer in an artifact
    and a formality ("Done.") in the status message: the judge must see the answer. A task
    that stays open (input-required) keeps its earlier artifacts, which were judged with the
    turn that brought them, hence ``reported``. With neither, the last agent message of the
    (bounded) history is the answer.
    """
    status = task.status
    chunks: list[str] = []
    metadata: dict[str, Any] = {}
    if status.HasField("message") and status.message.parts:
        status_text = _text_of(status.message.parts)
        if status_text:
            chunks.append(status_text)
        if status.message.HasField("metadata"):
            metadata = MessageToDict(status.message.metadata)
    seen = set(reported)
    for artifact in task.artifacts:
        artifact_text = _text_of(artifact.parts)
        key = _artifact_key(artifact.artifact_id, artifact_text)
        if key in seen:
            continue
        seen.add(key)
        if artifact_text and artifact_text not in chunks:
            chunks.append(artifact_text)
    text = "\n".join(chunks)
    if not text:
        for message in reversed(task.history):
            if message.role == Role.ROLE_AGENT:
                text = _text_of(message.parts)
                break
    reply = TargetReply(
        text=text,
        context_id=task.context_id,
        task_id=task.id,
        state=_STATE_NAMES.get(status.state, "unknown"),
        open=status.state in _OPEN_STATES,
        metadata=metadata,
    )
    return reply, frozenset(seen)


def _artifact_key(artifact_id: str, text: str) -> str:
    # The content counts too: an agent may extend an artifact under the same id.
    return f"{artifact_id}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


class TargetConversation:
    """One conversation with a target (one A2A context): remembers its ids, knows how to continue.

    Agents end a turn in one of three ways; each is continued in the same context, so the
    target keeps the conversation's history:

    * the task stays open (``input-required``, as the arena's defender does): the next
      message continues that task, carrying both ``taskId`` and ``contextId`` (a2a-python#1206);
    * the task ends (``completed``, ``rejected``: one task per turn): the next message carries
      the ``contextId`` only, and the agent opens a new task in that context;
    * a bare Message instead of a task: likewise, with the Message's ``contextId`` (the one
      sent when it has none; an agent that never names a context gets a new one each turn).

    Every reply's text is what the agent said in that turn (:class:`TargetReply`).
    """

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
        """Send ``text`` in this conversation (a new one after :meth:`reset`), as the class doc says."""
        task_id = self.task_id if self._task_open else None
        reply = await self._target.send(text, context_id=self.context_id, task_id=task_id)
        self.context_id = reply.context_id or self.context_id
        self.task_id = reply.task_id
        self._task_open = reply.open
        return reply


__all__ = [
    "A2ATarget",
    "TargetConversation",
    "TargetCredentials",
    "TargetHttpClient",
    "TargetReply",
    "cancel_task_quietly",
    "card_url_for",
    "choose_interface",
    "connect_target",
    "connection_failure_in",
    "fetch_agent_card",
    "parse_card",
    "status_in_chain",
]
