"""A deliberately vulnerable A2A agent: the target the protocol probes are tested against.

Raw Starlette, not a2a-sdk's server, so that it can be wrong on purpose. It speaks A2A
1.0 and 0.3 on JSON-RPC (``URL/``) and HTTP+JSON (``URL/rest``, 0.3 under ``URL/rest/v1``),
exactly as tests/conformance/wire.py describes the four wires. A request is 1.0 when it
carries ``A2A-Version: 1.0``, else 0.3. Run it as its own process with
:func:`running_vulnerable_agent` (or ``python -m support.vulnerable_agent PORT`` with
``VULNERABLE_AGENT_CONFIG`` holding ``{"flags": [...], "tokens": {name: token}, "mode": "all",
"expiry_s": 1.0, "max_open_tasks": 4}``).

With no flag it is well behaved:

* the card (``/.well-known/agent-card.json``: the 1.0 rendering with ``A2A-Version: 1.0``,
  else the 0.3 one) is signed (ES256, detached JWS over the JCS of the card without
  ``signatures``, ``jku`` = ``URL/.well-known/jwks.json``) and declares bearer security when
  tokens are configured;
* with tokens, every A2A method needs ``Authorization: Bearer <token>`` of a configured
  caller (401 with ``WWW-Authenticate`` otherwise); the card, the JWKS and ``/healthz`` are
  public. Without tokens every client is the caller ``anonymous``;
* a message makes a task (uuid4 hex ids) parked in input-required, whose status message
  says "Noted. This conversation so far: " and the texts of every user message of the same
  (caller, context) conversation joined by " | "; a follow-up with ``taskId`` continues it.
  A task parked longer than ``expiry_s`` becomes failed ("expired");
* tasks belong to their caller: another caller's task id is TaskNotFound, like an unknown
  one; another caller's ``contextId`` starts a separate conversation; ListTasks lists the
  caller's own tasks (none for ``anonymous``: without credentials nobody can be told apart);
* at most ``max_open_tasks`` (4) non-terminal tasks per caller (-32000 / HTTP 429), request
  bodies up to 1 MiB (413), JSON nested at most 100 deep and valid UTF-8 (parse error),
  method names of the request's version only (-32601), JSON-RPC only as ``application/json``
  (415), short error messages;
* push configurations only for https webhooks or http ones on a public host (loopback and
  private addresses: -32602 / 400 "webhook address not allowed"); every update of a task is
  POSTed to its webhooks with ``X-A2A-Notification-Token``;
* streams send the task, then its status update (``final`` on 0.3), then close.

Each flag of :data:`FLAGS` turns one behaviour wrong; see :data:`FLAG_DOCS`. Modes:
``all``; ``v03-only`` (the card has the 0.3 rendering only, 1.0 requests get
VersionNotSupported); ``rest-only`` (HTTP+JSON only, ``POST /`` is 404); ``jsonrpc-only``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import ipaddress
import itertools
import json
import os
import re
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import uvicorn
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from support.processes import support_agent

CONFIG_VARIABLE = "VULNERABLE_AGENT_CONFIG"

FLAG_DOCS: dict[str, str] = {
    "foreign-interface": "the card adds an interface at http://127.0.0.2:9/ (another origin)",
    "plain-http": "the card adds an interface at http://agent.example.net/a2a (also another origin)",
    "no-auth-enforced": "the card declares security but no credential is checked (needs tokens)",
    "auth-undeclared": "tokens are enforced but the card declares no security scheme",
    "bad-signature": "the card's signature is over different content",
    "open-extended-card": "the extended card is served without a token",
    "open-gettask": "GetTask is served without a token on every binding, for any caller's task",
    "accept-any-token": "any bearer value is accepted, as the first configured caller",
    "query-token": "?access_token= / ?token= / ?api_key= is accepted when there is no header",
    "rest-no-auth": "HTTP+JSON checks no token: its caller is the first configured caller",
    "foreign-read": "GetTask serves another caller's task",
    "foreign-cancel": "CancelTask cancels another caller's task",
    "foreign-subscribe": "SubscribeToTask streams another caller's task",
    "foreign-list": "ListTasks lists every caller's tasks",
    "foreign-context": "conversations are keyed by contextId only: another caller sees the history",
    "sequential-ids": 'task ids "1", "2"..., context ids "ctx-1", "ctx-2"...',
    "push-accept-private": "loopback/private webhooks are accepted and stored (never called)",
    "push-ssrf": "webhooks on any address are accepted and called",
    "push-no-token": "notifications are sent without X-A2A-Notification-Token",
    "park-forever": "tasks in input-required never expire",
    "stream-hang": "streams stay open after their final event (': keep-alive' every second)",
    "unlimited-tasks": "no limit on open tasks per caller",
    "no-body-limit": "request bodies up to 16 MiB are accepted",
    "deep-json-crash": "JSON nested deeper than the parser copes with gives HTTP 500",
    "utf8-crash": "a body that is not UTF-8 gives HTTP 500",
    "unknown-method-500": "an unknown JSON-RPC method gets -32603 (internal error)",
    "lenient-methods": "1.0 and 0.3 method names are both accepted, with or without A2A-Version",
    "any-content-type": "JSON-RPC bodies are parsed whatever their Content-Type",
    "leak-trace": "error answers carry a (fake) Python traceback",
    "leak-path": "error messages name /srv/agent/handlers.py",
    "leak-address": "error messages name backend redis://10.20.30.40:6379",
}
FLAGS: frozenset[str] = frozenset(FLAG_DOCS)
MODES: frozenset[str] = frozenset({"all", "v03-only", "rest-only", "jsonrpc-only"})

BODY_LIMIT = 1_048_576
LENIENT_BODY_LIMIT = 16 * 1_048_576
MAX_DEPTH = 100
MAX_TASKS = 10_000
MAX_TEXT = 10_000
MAX_CONFIGS_PER_TASK = 10
DELIVERY_TIMEOUT_S = 2.0
HANG_LIMIT_S = 300
FOREIGN_INTERFACE = "http://127.0.0.2:9/"
PLAIN_HTTP_INTERFACE = "http://agent.example.net/a2a"
LEAKED_PATH = "/srv/agent/handlers.py"
LEAKED_ADDRESS = "backend redis://10.20.30.40:6379 unavailable"
LEAKED_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "<agent>", line 12, in handle\n'
    "    task = TASKS[task_id]\n"
    "KeyError: 'task'"
)
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
A2A_DOMAIN = "a2a-protocol.org"
ANONYMOUS = "anonymous"
_ANY_CALLER = "\x00any"
"""The caller of an unauthenticated GetTask under ``open-gettask``: sees every task."""
TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})

Version = Literal["1.0", "0.3"]
Binding = Literal["jsonrpc", "http+json"]


# --- configuration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentConfig:
    """What one agent process is: its flags, callers (name -> token), mode and timings."""

    flags: frozenset[str] = frozenset()
    tokens: Mapping[str, str] = field(default_factory=dict)
    mode: str = "all"
    expiry_s: float = 1.0
    max_open_tasks: int = 4

    def __post_init__(self) -> None:
        unknown = sorted(set(self.flags) - FLAGS)
        if unknown:
            msg = f"unknown flags {unknown}; known: {sorted(FLAGS)}"
            raise ValueError(msg)
        if self.mode not in MODES:
            msg = f"unknown mode {self.mode!r}; known: {sorted(MODES)}"
            raise ValueError(msg)
        if "no-auth-enforced" in self.flags and not self.tokens:
            msg = "the flag no-auth-enforced needs tokens (the card must declare security)"
            raise ValueError(msg)
        if any(not isinstance(t, str) or not t for t in self.tokens.values()):
            msg = "every token must be a non-empty string"
            raise ValueError(msg)

    def to_json(self) -> str:
        return json.dumps(
            {
                "flags": sorted(self.flags),
                "tokens": dict(self.tokens),
                "mode": self.mode,
                "expiry_s": self.expiry_s,
                "max_open_tasks": self.max_open_tasks,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> AgentConfig:
        raw = json.loads(text or "{}")
        if not isinstance(raw, dict):
            msg = f"{CONFIG_VARIABLE} must hold a JSON object"
            raise ValueError(msg)
        unknown = sorted(set(raw) - {"flags", "tokens", "mode", "expiry_s", "max_open_tasks"})
        if unknown:
            msg = f"unknown keys {unknown} in {CONFIG_VARIABLE}"
            raise ValueError(msg)
        return cls(
            flags=frozenset(raw.get("flags", ())),
            tokens=dict(raw.get("tokens") or {}),
            mode=str(raw.get("mode", "all")),
            expiry_s=float(raw.get("expiry_s", 1.0)),
            max_open_tasks=int(raw.get("max_open_tasks", 4)),
        )

    @property
    def first_caller(self) -> str:
        return next(iter(self.tokens), ANONYMOUS)

    @property
    def speaks_10(self) -> bool:
        return self.mode != "v03-only"

    @property
    def jsonrpc(self) -> bool:
        return self.mode != "rest-only"

    @property
    def rest(self) -> bool:
        return self.mode != "jsonrpc-only"


# --- wires ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Wire:
    version: Version
    binding: Binding

    @property
    def jsonrpc(self) -> bool:
        return self.binding == "jsonrpc"

    @property
    def proto_names(self) -> bool:
        return self.version == "1.0" or self.binding == "http+json"

    @property
    def legacy_jsonrpc(self) -> bool:
        return (self.version, self.binding) == ("0.3", "jsonrpc")

    def state(self, name: str) -> str:
        if not self.proto_names:
            return name
        if self.version == "0.3" and name == "canceled":
            return "TASK_STATE_CANCELLED"
        return "TASK_STATE_" + name.upper().replace("-", "_")

    def role(self, name: str) -> str:
        return f"ROLE_{name.upper()}" if self.proto_names else name

    @property
    def parts_key(self) -> str:
        return "content" if (self.version, self.binding) == ("0.3", "http+json") else "parts"


V10_METHODS = {
    "SendMessage": "send",
    "SendStreamingMessage": "stream",
    "GetTask": "get",
    "CancelTask": "cancel",
    "ListTasks": "list",
    "SubscribeToTask": "subscribe",
    "CreateTaskPushNotificationConfig": "push_set",
    "GetTaskPushNotificationConfig": "push_get",
    "ListTaskPushNotificationConfigs": "push_list",
    "ListTaskPushNotificationConfig": "push_list",
    "DeleteTaskPushNotificationConfig": "push_delete",
    "GetExtendedAgentCard": "extended_card",
}
V03_METHODS = {
    "message/send": "send",
    "message/stream": "stream",
    "tasks/get": "get",
    "tasks/cancel": "cancel",
    "tasks/resubscribe": "subscribe",
    "tasks/pushNotificationConfig/set": "push_set",
    "tasks/pushNotificationConfig/get": "push_get",
    "tasks/pushNotificationConfig/list": "push_list",
    "tasks/pushNotificationConfig/delete": "push_delete",
    "agent/getAuthenticatedExtendedCard": "extended_card",
}
_STREAMING_OPS = frozenset({"stream", "subscribe"})


# --- errors --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Kind:
    code: int
    http: int
    status: str
    reason: str | None


_KINDS = {
    "task_not_found": _Kind(-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
    "not_cancelable": _Kind(-32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    "unsupported": _Kind(-32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
    "version": _Kind(-32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
    "too_many": _Kind(-32000, 429, "RESOURCE_EXHAUSTED", None),
    "parse": _Kind(-32700, 400, "INVALID_ARGUMENT", None),
    "invalid_request": _Kind(-32600, 400, "INVALID_ARGUMENT", None),
    "method": _Kind(-32601, 404, "NOT_FOUND", None),
    "params": _Kind(-32602, 400, "INVALID_ARGUMENT", None),
    "internal": _Kind(-32603, 500, "INTERNAL", None),
    "unauthenticated": _Kind(-32000, 401, "UNAUTHENTICATED", None),
    "content_type": _Kind(-32600, 415, "INVALID_ARGUMENT", None),
    "too_large": _Kind(-32600, 413, "INVALID_ARGUMENT", None),
    "not_allowed": _Kind(-32601, 405, "UNIMPLEMENTED", None),
}


class A2AError(Exception):
    """An error answer: its kind (code and HTTP status per binding) and a short message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = _KINDS[kind]
        self.message = message


class _DeliberateCrashError(Exception):
    """The agent falls over (HTTP 500 plain text), on purpose."""


# --- JSON in -------------------------------------------------------------------------------------

_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests arrays/objects deeper than ``limit`` (strings skipped)."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _is_json_type(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media in ("application/json", "application/a2a+json")


# --- the card ------------------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def canonical_json(document: Any) -> bytes:
    """JCS (RFC 8785) for documents of strings, integers, booleans, lists and objects."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class _CardSigner:
    """An ES256 key made at start; signs cards as detached JWS (kid ``k1``)."""

    def __init__(self, base_url: str) -> None:
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.jku = f"{base_url}/.well-known/jwks.json"
        numbers = self._key.public_key().public_numbers()
        self.jwks = {
            "keys": [
                {
                    "kty": "EC",
                    "crv": "P-256",
                    "x": _b64url(numbers.x.to_bytes(32, "big")),
                    "y": _b64url(numbers.y.to_bytes(32, "big")),
                    "kid": "k1",
                    "alg": "ES256",
                    "use": "sig",
                }
            ]
        }

    def sign(self, card: dict[str, Any], *, tampered: bool) -> dict[str, Any]:
        unsigned = {key: value for key, value in card.items() if key != "signatures"}
        covered = {**unsigned, "name": f"{unsigned.get('name')} (tampered)"} if tampered else unsigned
        header = {"alg": "ES256", "kid": "k1", "jku": self.jku}
        protected = _b64url(canonical_json(header))
        signing_input = f"{protected}.{_b64url(canonical_json(covered))}".encode()
        r, s = decode_dss_signature(self._key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
        signature = _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
        return {**unsigned, "signatures": [{"protected": protected, "signature": signature}]}


_SKILLS = [
    {
        "id": "notes",
        "name": "Notes",
        "description": "Notes what you say and repeats the conversation so far.",
        "tags": ["notes"],
    }
]
_EXTENDED_SKILL = {
    "id": "admin-notes",
    "name": "Admin notes",
    "description": "Only on the extended card.",
    "tags": ["admin"],
}


def _interfaces(config: AgentConfig, base_url: str) -> list[tuple[str, str]]:
    """(url, binding) of the agent's own interfaces, JSON-RPC first."""
    found = []
    if config.jsonrpc:
        found.append((f"{base_url}/", "JSONRPC"))
    if config.rest:
        found.append((f"{base_url}/rest", "HTTP+JSON"))
    return found


def _extra_interfaces(config: AgentConfig) -> list[str]:
    extra = []
    if "foreign-interface" in config.flags:
        extra.append(FOREIGN_INTERFACE)
    if "plain-http" in config.flags:
        extra.append(PLAIN_HTTP_INTERFACE)
    return extra


def _declares_security(config: AgentConfig) -> bool:
    return bool(config.tokens) and "auth-undeclared" not in config.flags


def card_v10(config: AgentConfig, base_url: str, *, extended: bool = False) -> dict[str, Any]:
    """The 1.0 rendering of the card (unsigned)."""
    own = _interfaces(config, base_url)
    interfaces = [{"url": u, "protocolBinding": b, "protocolVersion": "1.0"} for u, b in own]
    interfaces += [{"url": u, "protocolBinding": b, "protocolVersion": "0.3"} for u, b in own]
    interfaces += [
        {"url": u, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"} for u in _extra_interfaces(config)
    ]
    card: dict[str, Any] = {
        "name": "Vulnerable Agent",
        "description": "A deliberately vulnerable A2A agent for testing protocol probes.",
        "version": "1.0.0",
        "supportedInterfaces": interfaces,
        "capabilities": {"streaming": True, "pushNotifications": True, "extendedAgentCard": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [*_SKILLS, _EXTENDED_SKILL] if extended else list(_SKILLS),
    }
    if _declares_security(config):
        card["securitySchemes"] = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
        card["securityRequirements"] = [{"schemes": {"bearer": {"list": []}}}]
    return card


def card_v03(config: AgentConfig, base_url: str, *, extended: bool = False) -> dict[str, Any]:
    """The 0.3 rendering of the card (unsigned)."""
    own = _interfaces(config, base_url)
    extra = [{"url": u, "transport": b} for u, b in own]
    extra += [{"url": u, "transport": "JSONRPC"} for u in _extra_interfaces(config)]
    card: dict[str, Any] = {
        "protocolVersion": "0.3.0",
        "name": "Vulnerable Agent",
        "description": "A deliberately vulnerable A2A agent for testing protocol probes.",
        "version": "1.0.0",
        "url": own[0][0],
        "preferredTransport": own[0][1],
        "additionalInterfaces": extra,
        "capabilities": {"streaming": True, "pushNotifications": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [*_SKILLS, _EXTENDED_SKILL] if extended else list(_SKILLS),
        "supportsAuthenticatedExtendedCard": True,
    }
    if _declares_security(config):
        card["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        card["security"] = [{"bearer": []}]
    return card


# --- tasks ---------------------------------------------------------------------------------------


@dataclass
class _Message:
    role: Literal["user", "agent"]
    text: str
    message_id: str = field(default_factory=lambda: uuid.uuid4().hex)


@dataclass
class _PushConfig:
    config_id: str
    url: str
    token: str | None
    wire: _Wire
    deliver: bool


@dataclass
class _Task:
    task_id: str
    context_id: str
    owner: str
    state: str = "submitted"
    history: list[_Message] = field(default_factory=list)
    status_message: _Message | None = None
    updated: float = field(default_factory=time.monotonic)
    timestamp: str = ""
    push: dict[str, _PushConfig] = field(default_factory=dict)

    def set_status(self, state: str, message: _Message | None) -> None:
        self.state = state
        self.status_message = message
        self.updated = time.monotonic()
        self.timestamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _render_message(message: _Message, task: _Task, wire: _Wire) -> dict[str, Any]:
    part: dict[str, Any] = (
        {"kind": "text", "text": message.text} if wire.legacy_jsonrpc else {"text": message.text}
    )
    rendered: dict[str, Any] = {
        "messageId": message.message_id,
        "role": wire.role(message.role),
        wire.parts_key: [part],
        "taskId": task.task_id,
        "contextId": task.context_id,
    }
    if wire.legacy_jsonrpc:
        rendered["kind"] = "message"
    return rendered


def _render_status(task: _Task, wire: _Wire, state: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"state": wire.state(state or task.state), "timestamp": task.timestamp}
    if task.status_message is not None and state is None:
        status["message"] = _render_message(task.status_message, task, wire)
    return status


def _render_task(
    task: _Task, wire: _Wire, *, history_length: int | None = None, state: str | None = None
) -> dict[str, Any]:
    history = task.history[-history_length:] if history_length else task.history
    if state == "working" and history and history[-1].role == "agent":
        history = history[:-1]  # the snapshot before the reply
    rendered: dict[str, Any] = {
        "id": task.task_id,
        "contextId": task.context_id,
        "status": _render_status(task, wire, state),
        "history": [_render_message(m, task, wire) for m in history],
    }
    if wire.legacy_jsonrpc:
        rendered["kind"] = "task"
    return rendered


def _task_event(task: _Task, wire: _Wire, state: str | None = None) -> dict[str, Any]:
    rendered = _render_task(task, wire, state=state)
    return rendered if wire.legacy_jsonrpc else {"task": rendered}


def _status_event(task: _Task, wire: _Wire) -> dict[str, Any]:
    update: dict[str, Any] = {
        "taskId": task.task_id,
        "contextId": task.context_id,
        "status": _render_status(task, wire),
    }
    if wire.version == "0.3":
        update["final"] = True
    if wire.legacy_jsonrpc:
        return {"kind": "status-update", **update}
    return {"statusUpdate": update}


def _message_texts(message: Mapping[str, Any]) -> str:
    parts = message.get("parts", message.get("content"))
    if not isinstance(parts, list):
        raise A2AError("params", "message parts must be a list")
    texts = []
    for part in parts:
        if not isinstance(part, dict):
            raise A2AError("params", "a message part must be an object")
        text = part.get("text")
        if text is not None and not isinstance(text, str):
            raise A2AError("params", "a text part must hold a string")
        if text:
            texts.append(text)
    return " ".join(texts)[:MAX_TEXT]


def _private_host(host: str) -> bool:
    """Loopback, private, link-local or unspecified address (or a name for one)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return bool(address.is_private or address.is_loopback or address.is_link_local or address.is_unspecified)


# --- the agent -----------------------------------------------------------------------------------


class VulnerableAgent:
    """The agent's state and request handling; :meth:`app` is its ASGI application."""

    def __init__(self, config: AgentConfig, base_url: str) -> None:
        self.config = config
        self.flags = config.flags
        self.base_url = base_url
        self.tasks: dict[str, _Task] = {}
        self.conversations: dict[tuple[str, str], list[str]] = {}
        self._task_numbers = itertools.count(1)
        self._context_numbers = itertools.count(1)
        self._deliveries: set[asyncio.Task[None]] = set()
        self._http: httpx.AsyncClient | None = None
        self._by_token = {token: name for name, token in config.tokens.items()}
        signer = _CardSigner(base_url)
        self.jwks = signer.jwks
        tampered = "bad-signature" in self.flags
        rendered_03 = signer.sign(card_v03(config, base_url), tampered=tampered)
        extended_03 = signer.sign(card_v03(config, base_url, extended=True), tampered=tampered)
        if config.speaks_10:
            rendered_10 = signer.sign(card_v10(config, base_url), tampered=tampered)
            extended_10 = signer.sign(card_v10(config, base_url, extended=True), tampered=tampered)
        else:
            rendered_10, extended_10 = rendered_03, extended_03
        self.cards: dict[Version, dict[str, Any]] = {"1.0": rendered_10, "0.3": rendered_03}
        self.extended_cards: dict[Version, dict[str, Any]] = {"1.0": extended_10, "0.3": extended_03}

    # -- the application ------------------------------------------------------------------

    def app(self) -> Starlette:
        routes = [
            Route("/.well-known/agent-card.json", self._card, methods=["GET"]),
            Route("/.well-known/jwks.json", self._jwks, methods=["GET"]),
            Route("/healthz", self._health, methods=["GET"]),
            Route("/", self._jsonrpc, methods=["POST"]),
            Route("/rest/{rest:path}", self._rest, methods=["GET", "POST", "DELETE", "PUT", "PATCH"]),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        del app
        self._http = httpx.AsyncClient(timeout=DELIVERY_TIMEOUT_S, trust_env=False, follow_redirects=False)
        sweeper = asyncio.create_task(self._sweep())
        try:
            yield
        finally:
            sweeper.cancel()
            for delivery in list(self._deliveries):
                delivery.cancel()
            await self._http.aclose()

    async def _sweep(self) -> None:
        """Expire tasks parked in input-required for longer than ``expiry_s``."""
        period = min(0.2, max(0.02, self.config.expiry_s / 4))
        while True:
            await asyncio.sleep(period)
            if "park-forever" in self.flags:
                continue
            deadline = time.monotonic() - self.config.expiry_s
            for task in list(self.tasks.values()):
                if task.state == "input-required" and task.updated <= deadline:
                    task.set_status("failed", _Message("agent", "expired"))
                    self._notify(task)

    # -- public endpoints -----------------------------------------------------------------

    @staticmethod
    def _version_of(request: Request) -> Version:
        header = request.headers.get("a2a-version", "").strip()
        return "1.0" if header == "1" or header.startswith("1.") else "0.3"

    async def _card(self, request: Request) -> Response:
        return JSONResponse(self.cards[self._version_of(request)])

    async def _jwks(self, request: Request) -> Response:
        del request
        return JSONResponse(self.jwks)

    async def _health(self, request: Request) -> Response:
        del request
        return JSONResponse({"status": "ok"})

    # -- error answers --------------------------------------------------------------------

    def _leaky(self, message: str) -> str:
        """``message`` with whatever the leak flags add."""
        if "leak-path" in self.flags:
            message += f" (in {LEAKED_PATH})"
        if "leak-address" in self.flags:
            message += f": {LEAKED_ADDRESS}"
        if "leak-trace" in self.flags:
            message += "\n" + LEAKED_TRACE
        return message

    def _crash(self) -> Response:
        return PlainTextResponse(self._leaky("Internal Server Error"), status_code=500)

    def _auth_headers(self, kind: _Kind) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="vulnerable-agent"'} if kind.http == 401 else {}

    def _rpc_error(self, error: A2AError, request_id: Any, wire: _Wire | None) -> Response:
        kind = error.kind
        body: dict[str, Any] = {"code": kind.code, "message": self._leaky(error.message)}
        if kind.reason is not None and wire is not None and wire.version == "1.0":
            body["data"] = [{"@type": ERROR_INFO, "reason": kind.reason, "domain": A2A_DOMAIN}]
        status = kind.http if kind.http in (401, 413, 415) else 200
        envelope = {"jsonrpc": "2.0", "id": request_id, "error": body}
        return JSONResponse(envelope, status_code=status, headers=self._auth_headers(kind))

    def _rest_error(self, error: A2AError) -> Response:
        kind = error.kind
        body: dict[str, Any] = {
            "code": kind.http,
            "status": kind.status,
            "message": self._leaky(error.message),
        }
        if kind.reason is not None:
            body["details"] = [{"@type": ERROR_INFO, "reason": kind.reason, "domain": A2A_DOMAIN}]
        return JSONResponse({"error": body}, status_code=kind.http, headers=self._auth_headers(kind))

    # -- reading requests -----------------------------------------------------------------

    async def _body(self, request: Request) -> bytes:
        limit = LENIENT_BODY_LIMIT if "no-body-limit" in self.flags else BODY_LIMIT
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise A2AError("too_large", "request body too large")
        raw = bytearray()
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limit:
                raise A2AError("too_large", "request body too large")
        return bytes(raw)

    def _parse(self, raw: bytes) -> Any:
        """The JSON document in ``raw``; A2AError("parse") or, with the crash flags, _DeliberateCrashError."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            if "utf8-crash" in self.flags:
                raise _DeliberateCrashError from None
            raise A2AError("parse", "parse error: the body is not UTF-8") from None
        if "deep-json-crash" not in self.flags and nesting_exceeds(text, MAX_DEPTH):
            raise A2AError("parse", "parse error: JSON nested too deeply")
        try:
            return json.loads(text)
        except RecursionError:
            raise _DeliberateCrashError from None
        except ValueError:
            raise A2AError("parse", "parse error: the body is not JSON") from None

    def _caller(self, request: Request, op: str, binding: Binding) -> str:
        """Who is asking; A2AError("unauthenticated") when nobody acceptable is."""
        tokens = self.config.tokens
        if not tokens:
            return ANONYMOUS
        first = self.config.first_caller
        token: str | None = None
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            token = value.strip()
        elif "query-token" in self.flags:
            for name in ("access_token", "token", "api_key"):
                if request.query_params.get(name):
                    token = request.query_params[name]
                    break
        lax = "no-auth-enforced" in self.flags or ("rest-no-auth" in self.flags and binding == "http+json")
        if token is not None:
            for known, name in self._by_token.items():
                if hmac.compare_digest(known.encode(), token.encode()):
                    return name
            if "accept-any-token" in self.flags or lax:
                return first
            raise A2AError("unauthenticated", "invalid credentials")
        if lax:
            return first
        if op == "get" and "open-gettask" in self.flags:
            return _ANY_CALLER
        if op == "extended_card" and "open-extended-card" in self.flags:
            return first
        raise A2AError("unauthenticated", "authentication required")

    # -- JSON-RPC -------------------------------------------------------------------------

    async def _jsonrpc(self, request: Request) -> Response:
        if not self.config.jsonrpc:
            return self._rest_error(A2AError("method", "not found"))
        request_id: Any = None
        wire: _Wire | None = None
        try:
            content_type = request.headers.get("content-type", "")
            if not _is_json_type(content_type) and "any-content-type" not in self.flags:
                raise A2AError("content_type", "unsupported content type: use application/json")
            document = self._parse(await self._body(request))
            if not isinstance(document, dict):
                raise A2AError("invalid_request", "invalid request: expected one JSON-RPC request object")
            raw_id = document.get("id")
            if isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
                request_id = raw_id
            elif raw_id is not None:
                raise A2AError("invalid_request", "invalid request: bad id")
            method = document.get("method")
            if document.get("jsonrpc") != "2.0" or not isinstance(method, str):
                raise A2AError("invalid_request", "invalid request")
            version = self._version_of(request)
            if version == "1.0" and not self.config.speaks_10:
                raise A2AError("version", "version not supported: this agent speaks A2A 0.3")
            op, wire = self._resolve(method, version)
            params = document.get("params")
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise A2AError("params", "invalid params: expected an object")
            caller = self._caller(request, op, "jsonrpc")
            if op in _STREAMING_OPS:
                events = self._stream_op(op, wire, caller, params)
                first = await anext(events)
                return self._sse(self._rpc_events(first, events, request_id))
            result = self._unary_op(op, wire, caller, params)
        except A2AError as error:
            return self._rpc_error(error, request_id, wire)
        except _DeliberateCrashError:
            return self._crash()
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _resolve(self, method: str, version: Version) -> tuple[str, _Wire]:
        lenient = "lenient-methods" in self.flags
        if method in V10_METHODS and (version == "1.0" or lenient):
            return V10_METHODS[method], _Wire("1.0" if self.config.speaks_10 else "0.3", "jsonrpc")
        if method in V03_METHODS and (version == "0.3" or lenient):
            return V03_METHODS[method], _Wire("0.3", "jsonrpc")
        if "unknown-method-500" in self.flags and method not in V10_METHODS and method not in V03_METHODS:
            raise A2AError("internal", "internal error")
        raise A2AError("method", "method not found")

    async def _rpc_events(
        self, first: dict[str, Any], rest: AsyncIterator[dict[str, Any]], request_id: Any
    ) -> AsyncIterator[dict[str, Any]]:
        yield {"jsonrpc": "2.0", "id": request_id, "result": first}
        async for event in rest:
            yield {"jsonrpc": "2.0", "id": request_id, "result": event}

    # -- HTTP+JSON ------------------------------------------------------------------------

    _REST_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
        ("POST", re.compile(r"/message:send"), "send"),
        ("POST", re.compile(r"/message:stream"), "stream"),
        ("GET", re.compile(r"/tasks"), "list"),
        ("POST", re.compile(r"/tasks/([^/]+):cancel"), "cancel"),
        ("POST", re.compile(r"/tasks/([^/]+):subscribe"), "subscribe"),
        ("GET", re.compile(r"/tasks/([^/]+):subscribe"), "subscribe"),
        ("GET", re.compile(r"/tasks/([^/:]+)"), "get"),
        ("POST", re.compile(r"/tasks/([^/]+)/pushNotificationConfigs"), "push_set"),
        ("GET", re.compile(r"/tasks/([^/]+)/pushNotificationConfigs"), "push_list"),
        ("GET", re.compile(r"/tasks/([^/]+)/pushNotificationConfigs/([^/]+)"), "push_get"),
        ("DELETE", re.compile(r"/tasks/([^/]+)/pushNotificationConfigs/([^/]+)"), "push_delete"),
    )

    def _rest_route(self, method: str, path: str, version: Version) -> tuple[str, list[str]]:
        card_path = "/extendedAgentCard" if version == "1.0" else "/card"
        if path == card_path:
            if method != "GET":
                raise A2AError("not_allowed", "method not allowed")
            return "extended_card", []
        matched_path = False
        for verb, pattern, op in self._REST_ROUTES:
            found = pattern.fullmatch(path)
            if found is None or (op == "list" and version == "0.3"):
                continue
            matched_path = True
            if verb == method:
                return op, list(found.groups())
        if matched_path:
            raise A2AError("not_allowed", "method not allowed")
        raise A2AError("method", "not found")

    async def _rest(self, request: Request) -> Response:
        if not self.config.rest:
            return self._rest_error(A2AError("method", "not found"))
        path = "/" + request.path_params["rest"]
        header_10 = self._version_of(request) == "1.0"
        version: Version = "0.3" if path.startswith("/v1/") else "1.0"
        if version == "0.3":
            path = path.removeprefix("/v1")
        try:
            if (version == "1.0" or header_10) and not self.config.speaks_10:
                raise A2AError("version", "version not supported: this agent speaks A2A 0.3")
            wire = _Wire(version, "http+json")
            op, ids = self._rest_route(request.method, path, version)
            caller = self._caller(request, op, "http+json")
            params = await self._rest_params(request, op, ids, version)
            if op in _STREAMING_OPS:
                events = self._stream_op(op, wire, caller, params)
                first = await anext(events)
                return self._sse(self._chain(first, events))
            result = self._unary_op(op, wire, caller, params)
        except A2AError as error:
            return self._rest_error(error)
        except _DeliberateCrashError:
            return self._crash()
        media = "application/a2a+json" if version == "1.0" else "application/json"
        return JSONResponse(result, media_type=media)

    async def _rest_params(
        self, request: Request, op: str, ids: list[str], version: Version
    ) -> dict[str, Any]:
        body: Any = {}
        if request.method in ("POST", "PUT", "PATCH"):
            raw = await self._body(request)
            if raw.strip():
                content_type = request.headers.get("content-type", "")
                if not _is_json_type(content_type) and "any-content-type" not in self.flags:
                    raise A2AError("content_type", "unsupported content type: use application/json")
                body = self._parse(raw)
        if not isinstance(body, dict):
            raise A2AError("params", "invalid params: expected an object")
        query = request.query_params
        if op in ("send", "stream"):
            return body
        if op == "list":
            return {"contextId": query.get("contextId"), "pageSize": query.get("pageSize")}
        if op == "get":
            return {"id": ids[0], "historyLength": query.get("historyLength")}
        if op in ("cancel", "subscribe", "push_list"):
            return {"id": ids[0], "taskId": ids[0]}
        if op in ("push_get", "push_delete"):
            return (
                {"taskId": ids[0], "id": ids[1]}
                if version == "1.0"
                else {
                    "id": ids[0],
                    "pushNotificationConfigId": ids[1],
                }
            )
        if op == "push_set":
            return {**body, "taskId": ids[0]}
        return {}

    async def _chain(
        self, first: dict[str, Any], rest: AsyncIterator[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        yield first
        async for event in rest:
            yield event

    def _sse(self, events: AsyncIterator[dict[str, Any]]) -> Response:
        hang = "stream-hang" in self.flags

        async def lines() -> AsyncIterator[str]:
            async for event in events:
                yield f"data: {json.dumps(event)}\n\n"
            if hang:
                for _ in range(HANG_LIMIT_S):
                    await asyncio.sleep(1.0)
                    yield ": keep-alive\n\n"

        return StreamingResponse(
            lines(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    # -- operations -----------------------------------------------------------------------

    def _unary_op(self, op: str, wire: _Wire, caller: str, params: dict[str, Any]) -> Any:
        if op == "send":
            task = self._accept(wire, caller, params)
            return _task_event(task, wire)
        if op == "get":
            task = self._find(params.get("id"), caller, foreign="foreign-read" in self.flags)
            return _render_task(task, wire, history_length=_history_length(params.get("historyLength")))
        if op == "cancel":
            task = self._find(params.get("id"), caller, foreign="foreign-cancel" in self.flags)
            if task.state in TERMINAL:
                raise A2AError("not_cancelable", "task cannot be canceled")
            task.set_status("canceled", _Message("agent", "canceled"))
            self._notify(task)
            return _render_task(task, wire)
        if op == "list":
            return self._list(wire, caller, params)
        if op.startswith("push_"):
            return self._push_op(op, wire, caller, params)
        if op == "extended_card":
            return self.extended_cards[wire.version]
        raise A2AError("method", "method not found")

    async def _stream_op(
        self, op: str, wire: _Wire, caller: str, params: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        if op == "stream":
            task = self._accept(wire, caller, params)
            yield _task_event(task, wire, state="working")
        else:
            task = self._find(params.get("id"), caller, foreign="foreign-subscribe" in self.flags)
            yield _task_event(task, wire)
        yield _status_event(task, wire)

    def _find(self, task_id: Any, caller: str, *, foreign: bool) -> _Task:
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or not (foreign or caller in (_ANY_CALLER, task.owner)):
            raise A2AError("task_not_found", "task not found")
        return task

    def _new_ids(self) -> tuple[str, str]:
        if "sequential-ids" in self.flags:
            return str(next(self._task_numbers)), f"ctx-{next(self._context_numbers)}"
        return uuid.uuid4().hex, uuid.uuid4().hex

    def _accept(self, wire: _Wire, caller: str, params: dict[str, Any]) -> _Task:
        """A user message: a new task, or the next turn of the one it names; a webhook the
        message's ``configuration`` carries is checked first and attached to the task."""
        message = params.get("message")
        if not isinstance(message, dict):
            raise A2AError("params", "invalid params: a message is required")
        text = _message_texts(message)
        carried = _carried_push(params.get("configuration"))
        push = self._push_config(wire, carried) if carried is not None else None
        task_id, context_id = message.get("taskId"), message.get("contextId")
        if task_id is not None:
            task = self._find(task_id, caller, foreign=False)
            if task.state in TERMINAL:
                raise A2AError("unsupported", "the task is in a terminal state")
        else:
            if context_id is not None and (not isinstance(context_id, str) or not 0 < len(context_id) <= 200):
                raise A2AError("params", "invalid params: bad contextId")
            self._admit(caller)
            new_task, new_context = self._new_ids()
            task = _Task(new_task, context_id or new_context, caller)
            self.tasks[task.task_id] = task
        if push is not None:
            self._attach(task, push)
        history = self._conversation(caller, task.context_id)
        history.append(text)
        reply = _Message("agent", "Noted. This conversation so far: " + " | ".join(history))
        task.history += [_Message("user", text), reply]
        del task.history[:-40]
        task.set_status("input-required", reply)
        self._notify(task)
        return task

    def _admit(self, caller: str) -> None:
        if "unlimited-tasks" not in self.flags:
            limit = self.config.max_open_tasks
            open_tasks = sum(1 for t in self.tasks.values() if t.owner == caller and t.state not in TERMINAL)
            if open_tasks >= limit:
                raise A2AError("too_many", f"too many open tasks (limit {limit})")
        while len(self.tasks) >= MAX_TASKS:
            del self.tasks[next(iter(self.tasks))]

    def _conversation(self, caller: str, context_id: str) -> list[str]:
        key = ("*" if "foreign-context" in self.flags else caller, context_id)
        if key not in self.conversations:
            while len(self.conversations) >= MAX_TASKS:
                del self.conversations[next(iter(self.conversations))]
            self.conversations[key] = []
        history = self.conversations[key]
        del history[:-50]
        return history

    def _list(self, wire: _Wire, caller: str, params: dict[str, Any]) -> dict[str, Any]:
        if "foreign-list" in self.flags:
            tasks = list(self.tasks.values())
        elif caller == ANONYMOUS:
            tasks = []
        else:
            tasks = [task for task in self.tasks.values() if task.owner == caller]
        context_id = params.get("contextId")
        if isinstance(context_id, str) and context_id:
            tasks = [task for task in tasks if task.context_id == context_id]
        size = _history_length(params.get("pageSize")) or 50
        shown = [_render_task(task, wire) for task in reversed(tasks[-min(size, 100) :])]
        return {"tasks": shown, "nextPageToken": "", "pageSize": len(shown), "totalSize": len(tasks)}

    # -- push notifications ---------------------------------------------------------------

    def _push_op(self, op: str, wire: _Wire, caller: str, params: dict[str, Any]) -> Any:
        legacy = wire.version == "0.3"
        task_id = params.get("id") if legacy and op != "push_set" else params.get("taskId")
        task = self._find(task_id, caller, foreign=False)
        if op == "push_set":
            made = self._push_config(wire, params)
            self._attach(task, made)
            return self._render_config(task, made, wire)
        if op == "push_list":
            configs = [self._render_config(task, c, wire) for c in task.push.values()]
            return configs if wire.legacy_jsonrpc else {"configs": configs, "nextPageToken": ""}
        config_id = params.get("pushNotificationConfigId") if legacy else params.get("id")
        config = task.push.get(config_id) if isinstance(config_id, str) else None
        if config is None:
            raise A2AError("task_not_found", "push notification config not found")
        if op == "push_get":
            return self._render_config(task, config, wire)
        del task.push[config.config_id]
        return None if wire.legacy_jsonrpc else {}

    def _push_config(self, wire: _Wire, params: dict[str, Any]) -> _PushConfig:
        """A webhook configuration out of ``params`` (any spelling), refused when not allowed."""
        raw: Any = params
        nested = params.get("config")
        if isinstance(nested, dict):
            raw = nested
        if isinstance(raw.get("pushNotificationConfig"), dict):
            raw = raw["pushNotificationConfig"]
        url, token = raw.get("url"), raw.get("token")
        config_id = raw.get("id") or params.get("configId") or uuid.uuid4().hex
        if not isinstance(url, str) or not isinstance(config_id, str) or not isinstance(token, str | None):
            raise A2AError("params", "invalid params: a webhook url is required")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise A2AError("params", "invalid params: the webhook must be an http(s) URL")
        private = _private_host(parts.hostname)
        if private and not ({"push-accept-private", "push-ssrf"} & self.flags):
            raise A2AError("params", "webhook address not allowed")
        return _PushConfig(config_id, url, token, wire, deliver=not private or "push-ssrf" in self.flags)

    @staticmethod
    def _attach(task: _Task, config: _PushConfig) -> None:
        if len(task.push) >= MAX_CONFIGS_PER_TASK and config.config_id not in task.push:
            raise A2AError("params", "too many push notification configs")
        task.push[config.config_id] = config

    def _render_config(self, task: _Task, config: _PushConfig, wire: _Wire) -> dict[str, Any]:
        inner: dict[str, Any] = {"id": config.config_id, "url": config.url}
        if config.token is not None:
            inner["token"] = config.token
        if wire.version == "1.0":
            return {"taskId": task.task_id, **inner}
        if wire.jsonrpc:
            return {"taskId": task.task_id, "pushNotificationConfig": inner}
        name = f"tasks/{task.task_id}/pushNotificationConfigs/{config.config_id}"
        return {"name": name, "pushNotificationConfig": inner}

    def _notify(self, task: _Task) -> None:
        """POST the task to each of its webhooks that may be called (fire and forget)."""
        for config in list(task.push.values()):
            if not config.deliver or self._http is None or len(self._deliveries) > 100:
                continue
            headers = {"Content-Type": "application/json"}
            if config.token is not None and "push-no-token" not in self.flags:
                headers["X-A2A-Notification-Token"] = config.token
            body = json.dumps(_render_task(task, config.wire)).encode()
            delivery = asyncio.create_task(self._deliver(config.url, body, headers))
            self._deliveries.add(delivery)
            delivery.add_done_callback(self._deliveries.discard)

    async def _deliver(self, url: str, body: bytes, headers: dict[str, str]) -> None:
        assert self._http is not None
        with contextlib.suppress(httpx.HTTPError):
            await self._http.post(url, content=body, headers=headers)


def _carried_push(configuration: Any) -> dict[str, Any] | None:
    """The webhook a SendMessage ``configuration`` carries (1.0, 0.3 JSON-RPC, 0.3 HTTP+JSON names)."""
    if not isinstance(configuration, dict):
        return None
    for key in ("taskPushNotificationConfig", "pushNotificationConfig", "pushNotification"):
        if isinstance(configuration.get(key), dict):
            return dict(configuration[key])
    return None


def _history_length(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.isdigit() and int(value) > 0:
        return int(value)
    return None


def create_vulnerable_app(config: AgentConfig, base_url: str) -> Starlette:
    """The agent as an ASGI app served at ``base_url`` (no trailing slash)."""
    return VulnerableAgent(config, base_url).app()


@contextlib.contextmanager
def running_vulnerable_agent(
    flags: Iterable[str] = (),
    *,
    tokens: Mapping[str, str] | None = None,
    mode: str = "all",
    expiry_s: float = 1.0,
    max_open_tasks: int = 4,
) -> Iterator[str]:
    """Run the agent as its own process on 127.0.0.1 (a free port); yield its URL.

    Raises ValueError for an unknown flag or mode before anything starts.
    """
    config = AgentConfig(frozenset(flags), dict(tokens or {}), mode, expiry_s, max_open_tasks)
    with support_agent("support.vulnerable_agent", **{CONFIG_VARIABLE: config.to_json()}) as url:
        yield url


def main(argv: list[str]) -> None:
    """``python -m support.vulnerable_agent PORT`` with the configuration in the environment."""
    port = int(argv[1])
    config = AgentConfig.from_json(os.environ.get(CONFIG_VARIABLE, ""))
    app = create_vulnerable_app(config, f"http://127.0.0.1:{port}")
    # A hung stream (flag stream-hang) must not hold up the exit when the test ends.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=2)


if __name__ == "__main__":
    main(sys.argv)
