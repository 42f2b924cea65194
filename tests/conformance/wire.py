"""Raw A2A on the wire: requests built by hand, responses kept as sent.

No a2a-sdk client is used, so every check sees the bytes another implementation
would see. A :class:`Wire` is one protocol version on one binding; an :class:`Agent`
speaks one wire to one agent, finding its endpoints in the agent card as a client
of that version would:

* 1.0: the card fetched with ``A2A-Version: 1.0``, its ``supportedInterfaces`` at
  protocol 1.0 (JSON-RPC methods ``SendMessage``...; HTTP+JSON ``{url}/message:send``...);
* 0.3: the card fetched without the header (the specification reads that as 0.3),
  its ``url``/``preferredTransport`` and ``additionalInterfaces`` (JSON-RPC methods
  ``message/send``...; HTTP+JSON ``{url}/v1/message:send``...).

Every request and response is kept in an :class:`Exchange`, whose ``str`` is what a
failing check prints: the request, the response and, for streams, the events.
"""

from __future__ import annotations

import codecs
import itertools
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

Version = Literal["1.0", "0.3"]
Binding = Literal["jsonrpc", "http+json"]

CARD_PATH = "/.well-known/agent-card.json"
VERSION_HEADER = "A2A-Version"
A2A_JSON = "application/a2a+json"
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
A2A_DOMAIN = "a2a-protocol.org"

TERMINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected"})
INTERRUPTED_STATES = frozenset({"input-required", "auth-required"})

_REQUEST_IDS = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Wire:
    """One protocol version on one binding."""

    version: Version
    binding: Binding

    @property
    def id(self) -> str:
        return f"{self.version}-{self.binding}"

    @property
    def jsonrpc(self) -> bool:
        return self.binding == "jsonrpc"

    @property
    def headers(self) -> dict[str, str]:
        """Service parameters a client of this version sends (0.3 clients send no A2A-Version)."""
        return {VERSION_HEADER: "1.0"} if self.version == "1.0" else {}

    @property
    def enums_are_proto_names(self) -> bool:
        """1.0 (both bindings) and the 0.3 HTTP+JSON binding write ProtoJSON enum names."""
        return self.version == "1.0" or self.binding == "http+json"

    def state(self, name: str) -> str:
        """How this wire spells task state ``name`` (``completed``, ``input-required``...).

        1.0: ``TASK_STATE_COMPLETED`` (1.0 4.1.3, 5.5); 0.3 JSON-RPC: ``completed`` (0.3 6.3);
        0.3 HTTP+JSON: the 0.3 proto's names, ``TASK_STATE_CANCELLED`` with two Ls.
        """
        if not self.enums_are_proto_names:
            return name
        proto = "TASK_STATE_" + name.upper().replace("-", "_")
        if self.version == "0.3" and name == "canceled":
            return "TASK_STATE_CANCELLED"
        return proto

    def state_name(self, spelled: Any) -> str | None:
        """The inverse of :meth:`state`: ``TASK_STATE_INPUT_REQUIRED`` -> ``input-required``."""
        if not isinstance(spelled, str):
            return None
        if not self.enums_are_proto_names:
            return spelled
        if not spelled.startswith("TASK_STATE_"):
            return None
        name = spelled.removeprefix("TASK_STATE_").lower().replace("_", "-")
        return "canceled" if name == "cancelled" else name

    def role(self, name: Literal["user", "agent"]) -> str:
        return f"ROLE_{name.upper()}" if self.enums_are_proto_names else name

    @property
    def message_parts_key(self) -> str:
        """The 0.3 proto (0.3 HTTP+JSON) calls a message's parts ``content``."""
        return "content" if (self.version, self.binding) == ("0.3", "http+json") else "parts"


V10_JSONRPC = Wire("1.0", "jsonrpc")
V10_REST = Wire("1.0", "http+json")
V03_JSONRPC = Wire("0.3", "jsonrpc")
V03_REST = Wire("0.3", "http+json")
V10_WIRES = (V10_JSONRPC, V10_REST)
V03_WIRES = (V03_JSONRPC, V03_REST)
ALL_WIRES = (*V10_WIRES, *V03_WIRES)
JSONRPC_WIRES = (V10_JSONRPC, V03_JSONRPC)
REST_WIRES = (V10_REST, V03_REST)


# --- Server-Sent Events -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event (WHATWG HTML, "Interpreting an event stream")."""

    event: str
    data: str

    def json(self) -> Any:
        return json.loads(self.data)


@dataclass(frozen=True, slots=True)
class SseParse:
    events: list[SseEvent]
    unterminated: str
    """Field lines after the last blank line: an event the stream never finished."""


def parse_sse(text: str) -> SseParse:
    """Parse an event stream: ``data:`` lines joined by newlines, dispatched at a blank line."""
    events: list[SseEvent] = []
    data: list[str] = []
    event_type = ""
    pending: list[str] = []
    lines = re.split(r"\r\n|\r|\n", text)
    # The text after the last line terminator is not a line yet ("" when the text ends with one).
    partial = lines.pop()
    for line in lines:
        if line == "":
            if data:
                events.append(SseEvent(event_type or "message", "\n".join(data)))
            data, event_type, pending = [], "", []
            continue
        pending.append(line)
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event_type = value
    pending.append(partial)
    return SseParse(events, "\n".join(line for line in pending if line and not line.startswith(":")))


# --- Exchanges -------------------------------------------------------------------------------

_SHOWN_HEADERS = ("content-type", "a2a-version", "cache-control", "etag", "last-modified", "vary")


def _clip(text: str, limit: int = 3000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


@dataclass
class Exchange:
    """One request and what came back (for a stream: the events, and whether it closed)."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str
    status: int
    headers: httpx.Headers
    body: str
    events: list[SseEvent] | None = None
    closed: bool = True
    unterminated: str = ""

    @property
    def content_type(self) -> str:
        return str(self.headers.get("content-type", ""))

    @property
    def media_type(self) -> str:
        return self.content_type.split(";")[0].strip().lower()

    @property
    def is_stream(self) -> bool:
        return self.media_type == "text/event-stream"

    def json(self) -> Any:
        return json.loads(self.body)

    def event_json(self) -> list[Any]:
        return [event.json() for event in self.events or []]

    def __str__(self) -> str:
        sent = "".join(
            f"\n    {name}: {value}"
            for name, value in self.request_headers.items()
            if name.lower() in _SHOWN_HEADERS
        )
        got = "".join(
            f"\n    {name}: {value}" for name, value in self.headers.items() if name.lower() in _SHOWN_HEADERS
        )
        lines = [
            f"  request:  {self.method} {self.url}{sent}",
            f"    body: {_clip(self.request_body, 1500)}" if self.request_body else "",
            f"  response: {self.status}{got}",
        ]
        if self.events is not None:
            lines += [f"    event {i} ({e.event}): {_clip(e.data, 1500)}" for i, e in enumerate(self.events)]
            lines.append(
                f"    stream {'closed by the server' if self.closed else 'still open (read timed out)'}"
            )
            if self.unterminated:
                lines.append(f"    unterminated event: {self.unterminated!r}")
        elif self.body:
            lines.append(f"    body: {_clip(self.body)}")
        return "\n".join(line for line in lines if line)


def explain(why: str, *exchanges: Exchange) -> str:
    """A failure message: the requirement broken, then the exchanges that show it."""
    return "\n".join([why, *(str(exchange) for exchange in exchanges)])


# --- Errors ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """An error of the specification and its code on each binding (1.0 5.4, 9.5; 0.3 8.1, 8.2)."""

    name: str
    jsonrpc_code: int
    http_status: int
    reason: str | None
    """The ErrorInfo reason 1.0 requires on HTTP+JSON for A2A-specific errors (11.6)."""


TASK_NOT_FOUND = ErrorKind("TaskNotFoundError", -32001, 404, "TASK_NOT_FOUND")
TASK_NOT_CANCELABLE = ErrorKind("TaskNotCancelableError", -32002, 400, "TASK_NOT_CANCELABLE")
PUSH_NOT_SUPPORTED = ErrorKind(
    "PushNotificationNotSupportedError", -32003, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED"
)
UNSUPPORTED_OPERATION = ErrorKind("UnsupportedOperationError", -32004, 400, "UNSUPPORTED_OPERATION")
CONTENT_TYPE_NOT_SUPPORTED = ErrorKind(
    "ContentTypeNotSupportedError", -32005, 400, "CONTENT_TYPE_NOT_SUPPORTED"
)
VERSION_NOT_SUPPORTED = ErrorKind("VersionNotSupportedError", -32009, 400, "VERSION_NOT_SUPPORTED")
PARSE_ERROR = ErrorKind("JSONParseError", -32700, 400, None)
INVALID_REQUEST = ErrorKind("InvalidRequestError", -32600, 400, None)
METHOD_NOT_FOUND = ErrorKind("MethodNotFoundError", -32601, 404, None)
INVALID_PARAMS = ErrorKind("InvalidParamsError", -32602, 400, None)


@dataclass(frozen=True, slots=True)
class ErrorSeen:
    """An error as a binding carried it."""

    jsonrpc_code: int | None
    http_status: int
    reason: str | None
    domain: str | None
    message: Any
    envelope: Mapping[str, Any]


def _error_info(details: Any) -> tuple[str | None, str | None]:
    if isinstance(details, list):
        for detail in details:
            if isinstance(detail, dict) and detail.get("@type") == ERROR_INFO:
                return detail.get("reason"), detail.get("domain")
    return None, None


def error_seen(wire: Wire, exchange: Exchange) -> ErrorSeen | None:
    """The error ``exchange`` carried, or None.

    JSON-RPC: the response's ``error``, or the ``error`` of a stream's only event (an SSE
    stream may carry the failure of a streaming method). HTTP+JSON: a 4xx/5xx status with a
    ``google.rpc.Status`` body ``{"error": {"code", "status", "message", "details"}}``.
    """
    try:
        if exchange.events is not None:
            if not exchange.events:
                return None
            document = exchange.events[0].json()
        else:
            document = exchange.json()
    except ValueError:
        document = None
    if wire.jsonrpc:
        if not isinstance(document, dict) or not isinstance(document.get("error"), dict):
            return None
        error = document["error"]
        reason, domain = _error_info(error.get("data"))
        code = error.get("code")
        return ErrorSeen(
            code if isinstance(code, int) else None,
            exchange.status,
            reason,
            domain,
            error.get("message"),
            error,
        )
    if exchange.status < 400:
        return None
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict):
        return ErrorSeen(None, exchange.status, None, None, None, {})
    reason, domain = _error_info(error.get("details"))
    return ErrorSeen(None, exchange.status, reason, domain, error.get("message"), error)


def expect_error(wire: Wire, exchange: Exchange, kind: ErrorKind, why: str) -> ErrorSeen:
    """Assert ``exchange`` carried ``kind`` as ``wire``'s binding spells it; return it.

    JSON-RPC: ``error.code`` (and a string ``error.message``: 1.0 3.3.2, JSON-RPC 2.0 5.1).
    HTTP+JSON: the HTTP status and a ``google.rpc.Status`` body; on 1.0, A2A-specific errors
    also carry an ErrorInfo with the reason and the ``a2a-protocol.org`` domain (11.6 MUST).
    """
    seen = error_seen(wire, exchange)
    where = f"{kind.name} ({kind.jsonrpc_code if wire.jsonrpc else kind.http_status})"
    assert seen is not None, explain(f"{why}: expected {where}, got no error", exchange)
    if wire.jsonrpc:
        assert seen.jsonrpc_code == kind.jsonrpc_code, explain(f"{why}: expected {where}", exchange)
    else:
        assert seen.http_status == kind.http_status, explain(f"{why}: expected {where}", exchange)
        if wire.version == "1.0":
            assert seen.envelope.get("code") == kind.http_status, explain(
                f"{why}: error.code must repeat the HTTP status (1.0 11.6)", exchange
            )
            assert isinstance(seen.envelope.get("status"), str), explain(
                f"{why}: error.status must name the google.rpc code (1.0 11.6)", exchange
            )
            if kind.reason is not None:
                assert (seen.reason, seen.domain) == (kind.reason, A2A_DOMAIN), explain(
                    f"{why}: an A2A error must carry ErrorInfo reason {kind.reason} "
                    f"in the {A2A_DOMAIN} domain (1.0 11.6 MUST)",
                    exchange,
                )
    assert isinstance(seen.message, str) and seen.message, explain(
        f"{why}: the error must carry a human-readable message (1.0 3.3.2 MUST)", exchange
    )
    return seen


# --- Talking to an agent -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoints:
    jsonrpc: str
    rest: str


def card_endpoints(card: dict[str, object], version: str) -> Endpoints:
    """The endpoints ``card`` declares for ``version``.

    1.0: its ``supportedInterfaces`` at 1.0; 0.3: its ``url`` and ``additionalInterfaces``.
    """
    urls: dict[str, str] = {}
    if version == "1.0":
        interfaces = card.get("supportedInterfaces")
        for interface in interfaces if isinstance(interfaces, list) else []:
            if isinstance(interface, dict) and interface.get("protocolVersion") == "1.0":
                urls.setdefault(str(interface.get("protocolBinding")), str(interface.get("url")))
    else:
        if isinstance(card.get("url"), str):
            urls[str(card.get("preferredTransport", "JSONRPC"))] = str(card["url"])
        interfaces = card.get("additionalInterfaces")
        for interface in interfaces if isinstance(interfaces, list) else []:
            if isinstance(interface, dict):
                urls.setdefault(str(interface.get("transport")), str(interface.get("url")))
    missing = {"JSONRPC", "HTTP+JSON"} - urls.keys()
    assert not missing, f"the {version} agent card declares no {sorted(missing)} interface: {card}"
    return Endpoints(jsonrpc=urls["JSONRPC"], rest=urls["HTTP+JSON"])


class Agent:
    """One wire to one agent, over raw HTTP."""

    def __init__(self, http: httpx.Client, wire: Wire, endpoints: Endpoints) -> None:
        self.http = http
        self.wire = wire
        self.endpoints = endpoints

    # -- building ---------------------------------------------------------------------------

    def message(
        self,
        text: str,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        message_id: str | None = None,
    ) -> dict[str, Any]:
        """A user message with one text part, spelled for this wire."""
        message: dict[str, Any] = {"messageId": message_id or uuid.uuid4().hex}
        if self.wire.version == "0.3" and self.wire.jsonrpc:
            message |= {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": text}]}
        else:
            message |= {"role": "ROLE_USER", self.wire.message_parts_key: [{"text": text}]}
        if task_id is not None:
            message["taskId"] = task_id
        if context_id is not None:
            message["contextId"] = context_id
        return message

    def _rest(self, path: str) -> str:
        base = self.endpoints.rest.rstrip("/")
        return f"{base}/v1{path}" if self.wire.version == "0.3" else f"{base}{path}"

    # -- sending ----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
    ) -> Exchange:
        """One plain request; ``headers`` default to the wire's (JSON bodies get a JSON content type)."""
        sent = dict(self.wire.headers if headers is None else headers)
        if body is not None:
            content = json.dumps(body).encode()
            sent.setdefault("Content-Type", self._body_type())
        response = self.http.request(method, url, content=content, headers=sent, params=params)
        return Exchange(
            method,
            str(response.request.url),
            sent,
            (content or b"").decode(errors="replace"),
            response.status_code,
            response.headers,
            response.text,
        )

    def stream_request(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        idle_timeout_s: float = 5.0,
        after_first: Callable[[SseEvent], None] | None = None,
    ) -> Exchange:
        """A request answered with an event stream: read until the server closes it.

        A stream still open after ``idle_timeout_s`` without a byte is recorded as not
        closed (the agents' SSE keep-alive comes every 15 s, so it does not hide one).
        ``after_first`` runs once the first event is complete (e.g. to cancel the task).
        """
        sent = dict(self.wire.headers if headers is None else headers)
        content = json.dumps(body).encode() if body is not None else b""
        if body is not None:
            sent.setdefault("Content-Type", self._body_type())
        timeout = httpx.Timeout(10.0, read=idle_timeout_s)
        with self.http.stream(method, url, content=content, headers=sent, timeout=timeout) as response:
            exchange = Exchange(
                method,
                str(response.request.url),
                sent,
                content.decode(errors="replace"),
                response.status_code,
                response.headers,
                "",
            )
            if not exchange.is_stream:
                response.read()
                exchange.body = response.text
                return exchange
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            text = ""
            called = after_first is None
            closed = False
            try:
                for chunk in response.iter_raw():
                    text += decoder.decode(chunk)
                    if not called:
                        parsed = parse_sse(text)
                        if parsed.events:
                            called = True
                            assert after_first is not None
                            after_first(parsed.events[0])
                text += decoder.decode(b"", final=True)
                closed = True
            except httpx.ReadTimeout:
                closed = False
            parsed = parse_sse(text)
            exchange.body = text
            exchange.events = parsed.events
            exchange.closed = closed
            exchange.unterminated = parsed.unterminated
            return exchange

    def _body_type(self) -> str:
        # 1.0 HTTP+JSON SHOULD use application/a2a+json (11.1); JSON-RPC and 0.3 HTTP+JSON: application/json.
        return A2A_JSON if self.wire == V10_REST else "application/json"

    def rpc(
        self,
        method: str,
        params: Any,
        *,
        request_id: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Exchange:
        """A JSON-RPC 2.0 request to the agent's JSON-RPC endpoint."""
        rid = next(_REQUEST_IDS) if request_id is None else request_id
        envelope = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        return self.request("POST", self.endpoints.jsonrpc, body=envelope, headers=headers)

    def rpc_stream(
        self,
        method: str,
        params: Any,
        *,
        request_id: Any = None,
        after_first: Callable[[SseEvent], None] | None = None,
    ) -> Exchange:
        rid = next(_REQUEST_IDS) if request_id is None else request_id
        envelope = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        return self.stream_request("POST", self.endpoints.jsonrpc, body=envelope, after_first=after_first)

    def _method(self, v10: str, v03: str) -> str:
        return v10 if self.wire.version == "1.0" else v03

    # -- operations -------------------------------------------------------------------------

    def send(self, message: dict[str, Any], configuration: dict[str, Any] | None = None) -> Exchange:
        """SendMessage (1.0) / message/send (0.3)."""
        params: dict[str, Any] = {"message": message}
        if configuration is not None:
            params["configuration"] = configuration
        if self.wire.jsonrpc:
            return self.rpc(self._method("SendMessage", "message/send"), params)
        return self.request("POST", self._rest("/message:send"), body=params)

    def say(self, text: str, **ids: str | None) -> Exchange:
        """Send one text message (``task_id``/``context_id`` as given)."""
        return self.send(self.message(text, **ids))

    def stream(self, message: dict[str, Any], *, request_id: Any = None) -> Exchange:
        """SendStreamingMessage (1.0) / message/stream (0.3), read to the end."""
        params = {"message": message}
        if self.wire.jsonrpc:
            method = self._method("SendStreamingMessage", "message/stream")
            return self.rpc_stream(method, params, request_id=request_id)
        return self.stream_request("POST", self._rest("/message:stream"), body=params)

    def get_task(self, task_id: str, history_length: int | None = None) -> Exchange:
        """GetTask (1.0) / tasks/get (0.3)."""
        if self.wire.jsonrpc:
            params: dict[str, Any] = {"id": task_id}
            if history_length is not None:
                params["historyLength"] = history_length
            return self.rpc(self._method("GetTask", "tasks/get"), params)
        query = {"historyLength": str(history_length)} if history_length is not None else None
        return self.request("GET", self._rest(f"/tasks/{task_id}"), params=query)

    def list_tasks(self, **params: Any) -> Exchange:
        """ListTasks (1.0 only): JSON-RPC params, or HTTP+JSON camelCase query parameters (11.5)."""
        if self.wire.jsonrpc:
            return self.rpc("ListTasks", params)
        query = {
            name: (str(value).lower() if isinstance(value, bool) else str(value))
            for name, value in params.items()
        }
        return self.request("GET", self._rest("/tasks"), params=query)

    def cancel(self, task_id: str) -> Exchange:
        """CancelTask (1.0) / tasks/cancel (0.3)."""
        if self.wire.jsonrpc:
            return self.rpc(self._method("CancelTask", "tasks/cancel"), {"id": task_id})
        return self.request("POST", self._rest(f"/tasks/{task_id}:cancel"))

    def subscribe(self, task_id: str, after_first: Callable[[SseEvent], None] | None = None) -> Exchange:
        """SubscribeToTask (1.0) / tasks/resubscribe (0.3), read to the end."""
        if self.wire.jsonrpc:
            method = self._method("SubscribeToTask", "tasks/resubscribe")
            return self.rpc_stream(method, {"id": task_id}, after_first=after_first)
        return self.stream_request("POST", self._rest(f"/tasks/{task_id}:subscribe"), after_first=after_first)

    def extended_card(self) -> Exchange:
        """GetExtendedAgentCard (1.0) / agent/getAuthenticatedExtendedCard (0.3)."""
        if self.wire == V10_JSONRPC:
            return self.rpc("GetExtendedAgentCard", {})
        if self.wire == V03_JSONRPC:
            rid = next(_REQUEST_IDS)
            envelope = {"jsonrpc": "2.0", "id": rid, "method": "agent/getAuthenticatedExtendedCard"}
            return self.request("POST", self.endpoints.jsonrpc, body=envelope)
        return self.request(
            "GET", self._rest("/extendedAgentCard" if self.wire.version == "1.0" else "/card")
        )

    def push_config_operations(self, task_id: str) -> Iterator[tuple[str, Exchange]]:
        """Each push notification configuration operation this wire has, applied to ``task_id``."""
        url = "https://client.example.com/webhook"
        if self.wire == V10_JSONRPC:
            yield (
                "CreateTaskPushNotificationConfig",
                self.rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": url}),
            )
            yield (
                "GetTaskPushNotificationConfig",
                self.rpc("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "config-1"}),
            )
            yield (
                "ListTaskPushNotificationConfigs",
                self.rpc("ListTaskPushNotificationConfigs", {"taskId": task_id}),
            )
            yield (
                "DeleteTaskPushNotificationConfig",
                self.rpc("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "config-1"}),
            )
        elif self.wire == V10_REST:
            configs = self._rest(f"/tasks/{task_id}/pushNotificationConfigs")
            yield "POST pushNotificationConfigs", self.request("POST", configs, body={"url": url})
            yield "GET pushNotificationConfigs/{id}", self.request("GET", f"{configs}/config-1")
            yield "GET pushNotificationConfigs", self.request("GET", configs)
            yield "DELETE pushNotificationConfigs/{id}", self.request("DELETE", f"{configs}/config-1")
        elif self.wire == V03_JSONRPC:
            yield (
                "tasks/pushNotificationConfig/set",
                self.rpc(
                    "tasks/pushNotificationConfig/set",
                    {"taskId": task_id, "pushNotificationConfig": {"url": url}},
                ),
            )
            yield (
                "tasks/pushNotificationConfig/get",
                self.rpc(
                    "tasks/pushNotificationConfig/get",
                    {"id": task_id, "pushNotificationConfigId": "config-1"},
                ),
            )
            yield (
                "tasks/pushNotificationConfig/list",
                self.rpc("tasks/pushNotificationConfig/list", {"id": task_id}),
            )
            yield (
                "tasks/pushNotificationConfig/delete",
                self.rpc(
                    "tasks/pushNotificationConfig/delete",
                    {"id": task_id, "pushNotificationConfigId": "config-1"},
                ),
            )
        else:
            configs = self._rest(f"/tasks/{task_id}/pushNotificationConfigs")
            body = {
                "parent": f"tasks/{task_id}",
                "configId": "config-1",
                "config": {"pushNotificationConfig": {"url": url}},
            }
            yield "POST v1/.../pushNotificationConfigs", self.request("POST", configs, body=body)
            yield "GET v1/.../pushNotificationConfigs/{id}", self.request("GET", f"{configs}/config-1")
            yield "GET v1/.../pushNotificationConfigs", self.request("GET", configs)

    # -- reading ----------------------------------------------------------------------------

    def result(self, exchange: Exchange, why: str = "the request must succeed") -> Any:
        """The success payload: JSON-RPC ``result``, or the HTTP+JSON body."""
        assert exchange.status == 200, explain(f"{why}: expected HTTP 200", exchange)
        try:
            document = exchange.json()
        except ValueError:
            raise AssertionError(explain(f"{why}: the body is not JSON", exchange)) from None
        if self.wire.jsonrpc:
            assert isinstance(document, dict) and "result" in document, explain(
                f"{why}: expected a JSON-RPC result", exchange
            )
            return document["result"]
        return document

    def task_of(self, exchange: Exchange, why: str = "expected a Task") -> dict[str, Any]:
        """The Task a SendMessage/GetTask/CancelTask answered with."""
        payload = self.result(exchange, why)
        return self.task_in(payload, exchange, why)

    def task_in(self, payload: Any, exchange: Exchange, why: str = "expected a Task") -> dict[str, Any]:
        """The Task in a SendMessage response or stream event payload (or a bare Task)."""
        if isinstance(payload, dict):
            if self.wire.version == "0.3" and self.wire.jsonrpc:
                if payload.get("kind") == "task":
                    return payload
            elif isinstance(payload.get("task"), dict):
                return dict(payload["task"])
            elif "id" in payload and "status" in payload:  # GetTask / CancelTask answer a bare Task
                return payload
        raise AssertionError(explain(f"{why}: the response holds no Task", exchange))

    def state_of(self, task: Mapping[str, Any]) -> str | None:
        status = task.get("status")
        return self.wire.state_name(status.get("state")) if isinstance(status, dict) else None

    def text_of(self, message: Any) -> str:
        """The text parts of a message (or artifact), joined."""
        if not isinstance(message, dict):
            return ""
        parts = message.get(self.wire.message_parts_key)
        if parts is None:
            parts = message.get("parts")  # artifacts keep "parts" on every wire
        if not isinstance(parts, list):
            return ""
        return "".join(part.get("text", "") for part in parts if isinstance(part, dict))

    def reply_of(self, task: Mapping[str, Any]) -> str:
        """The agent's reply: the text of the task's status message."""
        status = task.get("status")
        return self.text_of(status.get("message")) if isinstance(status, dict) else ""

    def stream_payloads(self, exchange: Exchange) -> list[Any]:
        """The stream events' payloads: JSON-RPC ``result`` (or the whole event if it has none)."""
        payloads = []
        for document in exchange.event_json():
            if self.wire.jsonrpc and isinstance(document, dict) and "result" in document:
                payloads.append(document["result"])
            else:
                payloads.append(document)
        return payloads

    def event_kind(self, payload: Any) -> str | None:
        """``task``, ``message``, ``statusUpdate`` or ``artifactUpdate`` (None: not exactly one)."""
        if not isinstance(payload, dict):
            return None
        if self.wire.version == "0.3" and self.wire.jsonrpc:
            kinds = {
                "task": "task",
                "message": "message",
                "status-update": "statusUpdate",
                "artifact-update": "artifactUpdate",
            }
            return kinds.get(str(payload.get("kind")))
        present = [key for key in ("task", "message", "statusUpdate", "artifactUpdate") if key in payload]
        return present[0] if len(present) == 1 else None

    def event_body(self, payload: Any) -> dict[str, Any]:
        """The object inside a stream event (0.3 JSON-RPC events are the object itself)."""
        if self.wire.version == "0.3" and self.wire.jsonrpc:
            return dict(payload)
        kind = self.event_kind(payload)
        return dict(payload[kind]) if kind else {}


__all__ = [
    "ALL_WIRES",
    "CARD_PATH",
    "CONTENT_TYPE_NOT_SUPPORTED",
    "INTERRUPTED_STATES",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_WIRES",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PUSH_NOT_SUPPORTED",
    "REST_WIRES",
    "TASK_NOT_CANCELABLE",
    "TASK_NOT_FOUND",
    "TERMINAL_STATES",
    "UNSUPPORTED_OPERATION",
    "V03_JSONRPC",
    "V03_REST",
    "V03_WIRES",
    "V10_JSONRPC",
    "V10_REST",
    "V10_WIRES",
    "VERSION_HEADER",
    "VERSION_NOT_SUPPORTED",
    "Agent",
    "Endpoints",
    "ErrorKind",
    "ErrorSeen",
    "Exchange",
    "SseEvent",
    "Wire",
    "card_endpoints",
    "error_seen",
    "expect_error",
    "explain",
    "parse_sse",
]
