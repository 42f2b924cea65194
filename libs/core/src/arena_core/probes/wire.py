"""Raw A2A for the probes: requests built by hand on one interface, bounded, polite and recorded.

The probes speak raw HTTP, not a2a-sdk's client: they send what a well-behaved client
never would (no token, a malformed one, the wrong content type, 0.3 method names under
the 1.0 header...) and must see the bytes that come back. A :class:`ProbeSession` is the
only way a check reaches the target, and it keeps the rules of a probe run:

* **same origin only**: every URL must have the target card's origin (an interface the
  card lists elsewhere is reported, never contacted), and the egress allowlist
  (``ARENA_TARGET_ALLOWLIST``) applies on top, through :class:`GuardedTransport`;
* **a budget**: at most ``max_requests`` requests, then :class:`ProbeStopped`;
* **a rate**: at most ``rate_per_s`` requests a second (a check that needs a burst, the
  concurrency check, takes it with :meth:`ProbeSession.burst` and pays it back after);
* **time bounds**: each request ``timeout_s``, a stream's idle and total time, the whole
  run ``max_duration_s``; after 8 transport failures in a row the target is taken as gone;
* **redaction**: the tokens the run holds never appear in an excerpt, in any encoding
  (as sent, URL-encoded, base64) nor cut short (a 12-character piece of one is enough).

Every request and response is kept as an :class:`Exchange`; a finding's evidence is an
excerpt of some of them, and the leak checks read all of them at the end of the run.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import itertools
import json
import re
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from arena_core.a2a.egress_guard import EgressGuard, GuardedTransport
from arena_core.egress_policy import EgressPolicy
from arena_core.errors import TargetNotAllowedError
from arena_core.origin import Origin
from arena_core.probes.model import Evidence, ProbedInterface

Version = Literal["1.0", "0.3"]
Binding = Literal["jsonrpc", "http+json"]

VERSION_HEADER = "A2A-Version"
JSON = "application/json"
A2A_JSON = "application/a2a+json"
MAX_BODY_BYTES = 1_048_576
"""The most of one response body a probe reads (a larger body is cut, noted in the exchange)."""
FAILURES_MEANING_GONE = 8
EXCERPT_CHARS = 1_200
_IDS = itertools.count(1)


class ProbeStopped(Exception):  # noqa: N818 - a signal, not an error
    """The run must stop: out of requests, out of time, or the target is gone."""


@dataclass(frozen=True, slots=True)
class Interface:
    """One protocol version on one binding at one URL, as the card declares it."""

    url: str
    version: Version
    binding: Binding

    @property
    def jsonrpc(self) -> bool:
        return self.binding == "jsonrpc"

    @property
    def label(self) -> str:
        return f"{self.version} {'JSONRPC' if self.jsonrpc else 'HTTP+JSON'} {self.url}"

    @property
    def headers(self) -> dict[str, str]:
        """What a client of this version sends (0.3 clients send no A2A-Version)."""
        return {VERSION_HEADER: "1.0"} if self.version == "1.0" else {}

    @property
    def content_type(self) -> str:
        return A2A_JSON if (self.version, self.binding) == ("1.0", "http+json") else JSON

    def rest_url(self, path: str) -> str:
        """``path`` under this HTTP+JSON interface (0.3 puts its operations under ``/v1``)."""
        base = self.url.rstrip("/")
        return f"{base}/v1{path}" if self.version == "0.3" else f"{base}{path}"

    def method(self, v10: str, v03: str) -> str:
        return v10 if self.version == "1.0" else v03

    def described(self) -> ProbedInterface:
        return ProbedInterface(url=self.url, protocol_version=self.version, binding=self.binding)

    # -- messages ---------------------------------------------------------------------------

    def message(
        self, text: str, *, task_id: str | None = None, context_id: str | None = None
    ) -> dict[str, Any]:
        """A user message with one text part, spelled for this interface."""
        message: dict[str, Any] = {"messageId": uuid.uuid4().hex}
        if (self.version, self.binding) == ("0.3", "jsonrpc"):
            message |= {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": text}]}
        elif self.version == "0.3":
            message |= {"role": "ROLE_USER", "content": [{"text": text}]}
        else:
            message |= {"role": "ROLE_USER", "parts": [{"text": text}]}
        if task_id is not None:
            message["taskId"] = task_id
        if context_id is not None:
            message["contextId"] = context_id
        return message

    def state_name(self, spelled: object) -> str | None:
        """``TASK_STATE_INPUT_REQUIRED`` or ``input-required`` -> ``input-required``."""
        if not isinstance(spelled, str):
            return None
        name = spelled.removeprefix("TASK_STATE_").lower().replace("_", "-")
        return "canceled" if name == "cancelled" else name


@dataclass(frozen=True, slots=True)
class Identity:
    """A caller: ``token`` None is an anonymous client."""

    name: str
    token: str | None = None


ANONYMOUS = Identity("anonymous")


@dataclass
class Exchange:
    """One request and what came back (``status`` None: no answer; ``error`` says why)."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    error: str | None = None
    events: list[str] | None = None
    """For a stream: each event's data, in order."""
    closed: bool = True
    """For a stream: False when the server still held it open when the probe stopped reading."""
    elapsed_s: float = 0.0
    _json: Any = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def json(self) -> Any:
        """The body as JSON; None when it is not JSON (or there is none)."""
        if not self._parsed:
            self._parsed = True
            try:
                self._json = json.loads(self.body) if self.body else None
            except (ValueError, RecursionError):
                self._json = None
        return self._json

    def event_documents(self) -> list[Any]:
        documents = []
        for data in self.events or []:
            try:
                documents.append(json.loads(data))
            except (ValueError, RecursionError):
                documents.append(None)
        return documents

    def excerpt(self) -> Evidence:
        """The exchange as evidence: request line, chosen headers and bodies, cut short."""
        sent = "".join(f"\n{name}: {value}" for name, value in self.request_headers.items())
        request = f"{self.method} {self.url}{sent}"
        if self.request_body:
            request += "\n\n" + _clip(self.request_body)
        if self.status is None:
            response = f"(no answer: {self.error})"
        else:
            shown = {k: v for k, v in self.headers.items() if k in _SHOWN_HEADERS}
            response = f"HTTP {self.status}" + "".join(f"\n{k}: {v}" for k, v in shown.items())
            if self.events is not None:
                response += "".join(f"\n\ndata: {_clip(event, 400)}" for event in self.events[:4])
                response += "\n\n(stream " + ("closed by the server)" if self.closed else "still open)")
            elif self.body:
                response += "\n\n" + _clip(self.body)
        return Evidence(request=request, response=response)


_SHOWN_HEADERS = ("content-type", "www-authenticate", "a2a-version", "location", "retry-after")


def _clip(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class Redactor:
    """Removes the run's secrets from text, in the forms they can take on the wire."""

    PIECE = 12

    def __init__(self) -> None:
        self._pattern: re.Pattern[str] | None = None
        self._forms: set[str] = set()

    def add(self, secret: str | None) -> None:
        if not secret or len(secret) < 4:
            return
        forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
        raw = secret.encode()
        for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
            forms.add(encoded.decode().rstrip("="))
        # Pieces: an excerpt cut in the middle of a token, or a server echoing part of one.
        forms |= {secret[i : i + self.PIECE] for i in range(0, max(1, len(secret) - self.PIECE + 1))}
        self._forms |= {form for form in forms if len(form) >= min(self.PIECE, len(secret))}
        alternatives = sorted(self._forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(form) for form in alternatives))

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub("[REDACTED]", text)


@dataclass(slots=True)
class Limits:
    max_requests: int = 400
    rate_per_s: float = 20.0
    timeout_s: float = 10.0
    max_duration_s: float = 300.0


class ProbeSession:
    """The probes' only way to the target: see the module doc."""

    def __init__(
        self,
        target: str,
        *,
        limits: Limits | None = None,
        policy: EgressPolicy | None = None,
        guard: EgressGuard | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``policy`` (or a ready ``guard``) is the egress allowlist; ``transport`` replaces the
        guarded transport altogether (tests)."""
        origin = Origin.of_web(target)
        if origin is None:
            msg = f"the target must be an http(s) URL with a host, not {target!r}"
            raise ValueError(msg)
        self.origin = origin
        self.target = target
        self.limits = limits or Limits()
        self.redact = Redactor()
        self.exchanges: list[Exchange] = []
        self.requests = 0
        self._started = time.monotonic()
        self._next_slot = self._started
        self._unpaced = 0
        self.paced_s = 0.0
        """Seconds waited so far to keep to the rate."""
        self._failures = 0
        self._stopped: str | None = None
        if transport is None:
            transport = GuardedTransport(guard or EgressGuard(policy or EgressPolicy()))
        inner = transport
        self._http = httpx.AsyncClient(transport=inner, trust_env=False, follow_redirects=False)

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- the rules --------------------------------------------------------------------------

    @property
    def stopped(self) -> str | None:
        return self._stopped

    def same_origin(self, url: str) -> bool:
        return Origin.of_web(url) == self.origin

    def time_left(self) -> float:
        return self.limits.max_duration_s - (time.monotonic() - self._started)

    def _stop(self, why: str) -> ProbeStopped:
        self._stopped = self._stopped or why
        return ProbeStopped(self._stopped)

    async def _admit(self, url: str) -> None:
        if self._stopped:
            raise ProbeStopped(self._stopped)
        if not self.same_origin(url):
            msg = f"refused to leave the target's origin {self.origin} for {Origin.of_web(url) or url}"
            raise TargetNotAllowedError(msg)
        if self.requests >= self.limits.max_requests:
            raise self._stop(f"the request budget ({self.limits.max_requests}) is spent")
        if self.time_left() <= 0:
            raise self._stop(f"the run's time bound ({self.limits.max_duration_s:g} s) is reached")
        self.requests += 1
        if self._unpaced:
            return
        now = time.monotonic()
        wait = self._next_slot - now
        self._next_slot = max(now, self._next_slot) + 1.0 / self.limits.rate_per_s
        if wait > 0:
            wait = min(wait, self.time_left())
            self.paced_s += wait
            await asyncio.sleep(wait)

    @asynccontextmanager
    async def burst(self) -> AsyncIterator[None]:
        """Requests inside are sent unpaced; the time they would have taken is waited after."""
        before = self.requests
        self._unpaced += 1
        try:
            yield
        finally:
            self._unpaced -= 1
            owed = (self.requests - before) / self.limits.rate_per_s
            self._next_slot = max(self._next_slot, time.monotonic()) + owed

    def _record(self, exchange: Exchange) -> Exchange:
        if exchange.status is None:
            self._failures += 1
            if self._failures >= FAILURES_MEANING_GONE:
                self._stopped = self._stopped or (
                    f"the target stopped answering ({FAILURES_MEANING_GONE} requests in a row failed)"
                )
        else:
            self._failures = 0
        self.exchanges.append(exchange)
        return exchange

    def _headers(self, identity: Identity, headers: Mapping[str, str]) -> dict[str, str]:
        sent = dict(headers)
        if identity.token is not None and not any(k.lower() == "authorization" for k in sent):
            sent["Authorization"] = f"Bearer {identity.token}"
        return sent

    def _shown(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {name: self.redact(value) for name, value in headers.items()}

    # -- sending ----------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        url: str,
        *,
        identity: Identity = ANONYMOUS,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        content: bytes | None = None,
        content_type: str | None = JSON,
        params: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> Exchange:
        """One plain request; the body is read up to :data:`MAX_BODY_BYTES`."""
        if params:
            url = str(httpx.URL(url).copy_merge_params(dict(params)))
        await self._admit(url)
        if body is not None:
            content = json.dumps(body).encode()
        sent = self._headers(identity, headers or {})
        if content is not None and content_type is not None:
            sent.setdefault("Content-Type", content_type)
        exchange = Exchange(
            method,
            self.redact(url),
            self._shown(sent),
            self.redact((content or b"")[:4_000].decode("utf-8", "replace")),
        )
        limit = min(timeout_s or self.limits.timeout_s, max(0.1, self.time_left()))
        started = time.monotonic()
        try:
            async with asyncio.timeout(limit):
                async with self._http.stream(
                    method, url, content=content, headers=sent, timeout=limit
                ) as response:
                    exchange.status = response.status_code
                    exchange.headers = {k.lower(): self.redact(v) for k, v in response.headers.items()}
                    raw = bytearray()
                    async for chunk in response.aiter_bytes():
                        raw += chunk
                        if len(raw) >= MAX_BODY_BYTES:
                            break
                    exchange.body = self.redact(_decode(bytes(raw[:MAX_BODY_BYTES]), response.headers))
        except TargetNotAllowedError:
            raise
        except TimeoutError:
            exchange.error = f"no answer within {limit:g} s"
        except httpx.HTTPError as exc:
            exchange.error = self.redact(f"{type(exc).__name__}: {exc}") or type(exc).__name__
        exchange.elapsed_s = time.monotonic() - started
        return self._record(exchange)

    async def stream(
        self,
        method: str,
        url: str,
        *,
        identity: Identity = ANONYMOUS,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        idle_s: float = 5.0,
        max_s: float = 20.0,
        until: Any = None,
        grace_s: float | None = None,
    ) -> Exchange:
        """A request answered by an event stream, read until it closes.

        Reading stops (``closed`` False) after ``idle_s`` without a byte or ``max_s`` in all;
        with ``until`` (a predicate on an event's JSON) and ``grace_s``, once an event
        matches, the server has ``grace_s`` more to close the stream.
        """
        await self._admit(url)
        content = json.dumps(body).encode() if body is not None else b""
        sent = self._headers(identity, headers or {})
        sent.setdefault("Accept", "text/event-stream")
        if body is not None:
            sent.setdefault("Content-Type", JSON)
        exchange = Exchange(
            method,
            self.redact(url),
            self._shown(sent),
            self.redact(content[:4_000].decode("utf-8", "replace")),
        )
        total = min(max_s, max(0.1, self.time_left()))
        started = time.monotonic()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = ""
        deadline = started + total
        try:
            async with self._http.stream(
                method,
                url,
                content=content,
                headers=sent,
                timeout=httpx.Timeout(self.limits.timeout_s, read=idle_s),
            ) as response:
                exchange.status = response.status_code
                exchange.headers = {k.lower(): self.redact(v) for k, v in response.headers.items()}
                if not exchange.media_type.startswith("text/event-stream"):
                    raw = await _read_bounded(response, deadline)
                    exchange.body = self.redact(_decode(raw, response.headers))
                    exchange.elapsed_s = time.monotonic() - started
                    return self._record(exchange)
                exchange.events = []
                exchange.closed = False
                chunks = response.aiter_bytes()
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    try:
                        chunk = await asyncio.wait_for(anext(chunks), left)
                    except StopAsyncIteration:
                        exchange.closed = True
                        break
                    except TimeoutError:
                        break
                    text += decoder.decode(chunk)
                    if len(text) > MAX_BODY_BYTES:
                        break
                    events, text = _split_events(text)
                    for data in events:
                        exchange.events.append(self.redact(data))
                        if until is not None and grace_s is not None and _matches(until, data):
                            deadline = min(deadline, time.monotonic() + grace_s)
        except TargetNotAllowedError:
            raise
        except httpx.ReadTimeout:
            if exchange.status is None:
                exchange.error = f"no answer within {idle_s:g} s"
        except httpx.HTTPError as exc:
            if exchange.status is None:
                exchange.error = self.redact(f"{type(exc).__name__}: {exc}") or type(exc).__name__
        exchange.elapsed_s = time.monotonic() - started
        return self._record(exchange)

    # -- A2A operations -------------------------------------------------------------------------

    async def rpc(
        self,
        interface: Interface,
        method: str,
        params: Any = None,
        *,
        identity: Identity = ANONYMOUS,
        headers: Mapping[str, str] | None = None,
        **options: Any,
    ) -> Exchange:
        envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_IDS), "method": method}
        if params is not None:
            envelope["params"] = params
        sent = interface.headers if headers is None else dict(headers)
        return await self.request(
            "POST", interface.url, identity=identity, headers=sent, body=envelope, **options
        )

    async def send_message(
        self, interface: Interface, text: str, *, identity: Identity = ANONYMOUS, **ids: str | None
    ) -> Exchange:
        params = {"message": interface.message(text, **ids)}
        if interface.jsonrpc:
            return await self.rpc(
                interface, interface.method("SendMessage", "message/send"), params, identity=identity
            )
        return await self.request(
            "POST",
            interface.rest_url("/message:send"),
            identity=identity,
            headers=interface.headers,
            body=params,
            content_type=interface.content_type,
        )

    async def stream_message(
        self, interface: Interface, text: str, *, identity: Identity = ANONYMOUS, **options: Any
    ) -> Exchange:
        params = {"message": interface.message(text)}
        if interface.jsonrpc:
            envelope = {
                "jsonrpc": "2.0",
                "id": next(_IDS),
                "method": interface.method("SendStreamingMessage", "message/stream"),
                "params": params,
            }
            return await self.stream(
                "POST", interface.url, identity=identity, headers=interface.headers, body=envelope, **options
            )
        return await self.stream(
            "POST",
            interface.rest_url("/message:stream"),
            identity=identity,
            headers=interface.headers,
            body=params,
            **options,
        )

    async def get_task(
        self, interface: Interface, task_id: str, *, identity: Identity = ANONYMOUS
    ) -> Exchange:
        if interface.jsonrpc:
            return await self.rpc(
                interface, interface.method("GetTask", "tasks/get"), {"id": task_id}, identity=identity
            )
        return await self.request(
            "GET",
            interface.rest_url(f"/tasks/{_segment(task_id)}"),
            identity=identity,
            headers=interface.headers,
        )

    async def cancel_task(
        self, interface: Interface, task_id: str, *, identity: Identity = ANONYMOUS
    ) -> Exchange:
        if interface.jsonrpc:
            return await self.rpc(
                interface, interface.method("CancelTask", "tasks/cancel"), {"id": task_id}, identity=identity
            )
        return await self.request(
            "POST",
            interface.rest_url(f"/tasks/{_segment(task_id)}:cancel"),
            identity=identity,
            headers=interface.headers,
            content=b"{}",
            content_type=interface.content_type,
        )

    async def list_tasks(self, interface: Interface, *, identity: Identity = ANONYMOUS) -> Exchange | None:
        """ListTasks; None on 0.3, which has no such method."""
        if interface.version == "0.3":
            return None
        if interface.jsonrpc:
            return await self.rpc(interface, "ListTasks", {}, identity=identity)
        return await self.request(
            "GET", interface.rest_url("/tasks"), identity=identity, headers=interface.headers
        )

    async def subscribe(
        self, interface: Interface, task_id: str, *, identity: Identity = ANONYMOUS, **options: Any
    ) -> Exchange:
        if interface.jsonrpc:
            envelope = {
                "jsonrpc": "2.0",
                "id": next(_IDS),
                "method": interface.method("SubscribeToTask", "tasks/resubscribe"),
                "params": {"id": task_id},
            }
            return await self.stream(
                "POST", interface.url, identity=identity, headers=interface.headers, body=envelope, **options
            )
        return await self.stream(
            "POST",
            interface.rest_url(f"/tasks/{_segment(task_id)}:subscribe"),
            identity=identity,
            headers=interface.headers,
            **options,
        )

    async def set_push_config(
        self,
        interface: Interface,
        task_id: str,
        webhook: str,
        *,
        token: str | None = None,
        identity: Identity = ANONYMOUS,
    ) -> Exchange:
        """Create a push notification configuration for ``task_id`` sending to ``webhook``."""
        config: dict[str, Any] = {"url": webhook}
        if token is not None:
            config["token"] = token
        if interface.jsonrpc and interface.version == "1.0":
            return await self.rpc(
                interface,
                "CreateTaskPushNotificationConfig",
                {"taskId": task_id, **config},
                identity=identity,
            )
        if interface.jsonrpc:
            params = {"taskId": task_id, "pushNotificationConfig": config}
            return await self.rpc(interface, "tasks/pushNotificationConfig/set", params, identity=identity)
        url = interface.rest_url(f"/tasks/{_segment(task_id)}/pushNotificationConfigs")
        body: Any = config
        if interface.version == "0.3":
            body = {
                "parent": f"tasks/{task_id}",
                "configId": "probe",
                "config": {"pushNotificationConfig": config},
            }
        return await self.request(
            "POST",
            url,
            identity=identity,
            headers=interface.headers,
            body=body,
            content_type=interface.content_type,
        )

    async def delete_push_config(
        self, interface: Interface, task_id: str, config_id: str, *, identity: Identity = ANONYMOUS
    ) -> Exchange:
        if interface.jsonrpc:
            method = interface.method(
                "DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete"
            )
            params = (
                {"taskId": task_id, "id": config_id}
                if interface.version == "1.0"
                else {
                    "id": task_id,
                    "pushNotificationConfigId": config_id,
                }
            )
            return await self.rpc(interface, method, params, identity=identity)
        url = interface.rest_url(f"/tasks/{_segment(task_id)}/pushNotificationConfigs/{_segment(config_id)}")
        return await self.request("DELETE", url, identity=identity, headers=interface.headers)

    async def extended_card(self, interface: Interface, *, identity: Identity = ANONYMOUS) -> Exchange:
        if interface.jsonrpc:
            method = interface.method("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard")
            return await self.rpc(
                interface, method, {} if interface.version == "1.0" else None, identity=identity
            )
        path = "/extendedAgentCard" if interface.version == "1.0" else "/card"
        return await self.request(
            "GET", interface.rest_url(path), identity=identity, headers=interface.headers
        )


def _segment(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _decode(raw: bytes, headers: Mapping[str, str]) -> str:
    del headers  # JSON and SSE are UTF-8; anything else is shown with replacements
    return raw.decode("utf-8", "replace")


async def _read_bounded(response: httpx.Response, deadline: float) -> bytes:
    raw = bytearray()
    chunks = response.aiter_bytes()
    while len(raw) < MAX_BODY_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            raw += await asyncio.wait_for(anext(chunks), left)
        except (StopAsyncIteration, TimeoutError):
            break
    return bytes(raw[:MAX_BODY_BYTES])


_EVENT_END = re.compile(r"\r\n\r\n|\n\n|\r\r")


def _split_events(text: str) -> tuple[list[str], str]:
    """Complete events' data out of an SSE text, and the unfinished rest."""
    events: list[str] = []
    while True:
        found = _EVENT_END.search(text)
        if found is None:
            return events, text
        block, text = text[: found.start()], text[found.end() :]
        data = [
            line[5:].removeprefix(" ") for line in re.split(r"\r\n|\r|\n", block) if line.startswith("data:")
        ]
        if data:
            events.append("\n".join(data))


def _matches(predicate: Any, data: str) -> bool:
    try:
        return bool(predicate(json.loads(data)))
    except (ValueError, RecursionError):
        return False


def interfaces_labels(interfaces: Iterable[Interface]) -> list[str]:
    return [interface.label for interface in interfaces]


__all__ = [
    "A2A_JSON",
    "ANONYMOUS",
    "JSON",
    "VERSION_HEADER",
    "Binding",
    "Exchange",
    "Identity",
    "Interface",
    "Limits",
    "ProbeSession",
    "ProbeStopped",
    "Redactor",
    "Version",
]
