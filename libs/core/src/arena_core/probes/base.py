"""What every check is built from: its definition, the run's context, and reading answers.

A check is an async function registered with :func:`check`; it gets the run's
:class:`ProbeContext` (the session, the surface, the callers, the options) and a
:class:`CheckRun` to put findings in, and raises :class:`Skip` when it cannot look
(not offered by the card, no second caller...). It never decides pass/fail itself: no
finding is a pass; an exception other than Skip is an ``error`` (never a pass).

Reading answers is strict (:func:`read_answer`): a request was *served* only when a
JSON-RPC response carries a ``result``, or an HTTP+JSON response is a 2xx with a JSON
body. An HTML error page with status 200, an empty 200, a JSON-RPC ``error`` are not
served. ``reached`` is looser: the request got past authentication to the task layer (it
was served, or it was answered with a task-scoped error such as TaskNotCancelable),
which is what an isolation check needs to know.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from arena_core.probes.model import (
    MAX_FINDINGS_PER_CHECK,
    Category,
    CheckResult,
    Finding,
    Severity,
)
from arena_core.probes.surface import Surface
from arena_core.probes.wire import ANONYMOUS, Exchange, Identity, Interface, ProbeSession

PROBE_TEXT = "Hello. This is an automated A2A protocol check; a short reply is enough."

TASK_SCOPED_ERRORS = frozenset({-32002, -32003, -32004})
"""TaskNotCancelable, PushNotificationNotSupported, UnsupportedOperation: answers about a task
that was found (TaskNotFound, -32001, is the answer an unknown or foreign task must get)."""
TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
INTERRUPTED = frozenset({"input-required", "auth-required"})


class Skip(Exception):  # noqa: N818 - a signal, not an error
    """The check could not look; the message says why."""


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    """How a run behaves; the CLI, a campaign's ``probes:`` and the attacker skill fill it."""

    only: frozenset[str] = frozenset()
    skip: frozenset[str] = frozenset()
    fail_on: Severity = Severity.HIGH
    max_requests: int = 400
    rate_per_s: float = 20.0
    timeout_s: float = 10.0
    max_duration_s: float = 300.0
    wait_s: float = 5.0
    """How long to wait for something to happen: a task to expire, a webhook to be called."""
    stream_grace_s: float = 3.0
    """How long a server has to close a stream after its last event."""
    concurrent_tasks: int = 10
    card_keys: tuple[dict[str, Any], ...] = ()
    """JWKs (RFC 7517) that may have signed the card; without them only same-origin ``jku`` keys."""

    def selects(self, check_id: str, category: str) -> bool:
        def named(names: frozenset[str]) -> bool:
            return check_id in names or category in names

        return (not self.only or named(self.only)) and not named(self.skip)


@dataclass(frozen=True, slots=True)
class CheckDef:
    id: str
    category: Category
    title: str
    severity: Severity
    remediation: str
    run: Callable[[ProbeContext, CheckRun], Awaitable[None]]
    description: str = ""


CHECKS: list[CheckDef] = []


def check(
    check_id: str, category: Category, title: str, severity: Severity, *, remediation: str
) -> Callable[
    [Callable[[ProbeContext, CheckRun], Awaitable[None]]], Callable[[ProbeContext, CheckRun], Awaitable[None]]
]:
    """Register the decorated coroutine as a check (its docstring is the description)."""

    def register(
        function: Callable[[ProbeContext, CheckRun], Awaitable[None]],
    ) -> Callable[[ProbeContext, CheckRun], Awaitable[None]]:
        if any(existing.id == check_id for existing in CHECKS):
            msg = f"two checks named {check_id}"
            raise ValueError(msg)
        description = " ".join((function.__doc__ or "").split())
        CHECKS.append(CheckDef(check_id, category, title, severity, remediation, function, description))
        return function

    return register


class CheckRun:
    """Where a check puts its findings (capped at :data:`MAX_FINDINGS_PER_CHECK`)."""

    def __init__(self, definition: CheckDef, session: ProbeSession) -> None:
        self.definition = definition
        self.findings: list[Finding] = []
        self.looked: list[str] = []
        self._session = session
        self._requests_before = session.requests
        self._started = time.monotonic()

    def find(
        self,
        detail: str,
        *,
        evidence: Iterable[Exchange] = (),
        interface: Interface | None = None,
        severity: Severity | None = None,
        title: str | None = None,
    ) -> None:
        """Record a finding (at the check's severity unless a lower one is given)."""
        if len(self.findings) >= MAX_FINDINGS_PER_CHECK:
            return
        chosen = severity or self.definition.severity
        self.findings.append(
            Finding(
                check_id=self.definition.id,
                title=title or self.definition.title,
                severity=min(chosen, self.definition.severity),
                detail=self._session.redact(detail),
                interface=interface.label if interface else None,
                evidence=[exchange.excerpt() for exchange in list(evidence)[:5]],
                remediation=self.definition.remediation,
            )
        )

    def note(self, text: str) -> None:
        """What was looked at (the reason shown for a pass)."""
        self.looked.append(text)

    def result(self, status: str | None = None, reason: str | None = None) -> CheckResult:
        definition = self.definition
        final = status or ("failed" if self.findings else "passed")
        if final == "passed" and reason is None and self.looked:
            reason = "; ".join(self.looked)
        return CheckResult(
            check_id=definition.id,
            category=definition.category,
            title=definition.title,
            severity=definition.severity,
            status=final,  # type: ignore[arg-type]
            reason=self._session.redact(reason) if reason else None,
            findings=self.findings,
            requests=self._session.requests - self._requests_before,
            duration_s=round(time.monotonic() - self._started, 3),
        )


# -- reading answers --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """What an exchange came to, read the same way for every interface."""

    served: bool
    status: int | None
    error_code: int | None = None
    """The JSON-RPC error code (or, in a stream, the first event's)."""
    payload: Any = None

    @property
    def auth_refused(self) -> bool:
        return self.status in (401, 403)

    @property
    def reached(self) -> bool:
        """Past authentication and into the task layer: served, or a task-scoped error."""
        return self.served or self.error_code in TASK_SCOPED_ERRORS or self.status == 409

    @property
    def not_found(self) -> bool:
        return self.error_code == -32001 or self.status == 404

    @property
    def server_error(self) -> bool:
        """A 5xx, a JSON-RPC internal error, or no answer at all."""
        return self.status is None or self.status >= 500 or self.error_code == -32603


def read_answer(interface: Interface, exchange: Exchange) -> Answer:
    """Strictly: see the module doc."""
    if exchange.status is None:
        return Answer(False, None)
    if exchange.events is not None:
        documents = exchange.event_documents()
        first = documents[0] if documents else None
        if interface.jsonrpc:
            if isinstance(first, dict) and isinstance(first.get("error"), dict):
                return Answer(False, exchange.status, _code(first["error"]))
            served = exchange.status == 200 and isinstance(first, dict) and "result" in first
            return Answer(
                served,
                exchange.status,
                None,
                first.get("result") if served and isinstance(first, dict) else None,
            )
        served = 200 <= exchange.status < 300 and isinstance(first, dict)
        return Answer(served, exchange.status, None, first if served else None)
    document = exchange.json()
    if interface.jsonrpc:
        if not isinstance(document, dict):
            return Answer(False, exchange.status)
        if isinstance(document.get("error"), dict):
            return Answer(False, exchange.status, _code(document["error"]))
        served = exchange.status == 200 and "result" in document
        return Answer(served, exchange.status, None, document.get("result") if served else None)
    served = 200 <= exchange.status < 300 and document is not None and "json" in exchange.media_type
    return Answer(served, exchange.status, None, document if served else None)


def _code(error: dict[str, Any]) -> int | None:
    code = error.get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def task_in(interface: Interface, payload: Any) -> dict[str, Any] | None:
    """The Task in a SendMessage answer, a stream event, or a bare GetTask/CancelTask answer."""
    if not isinstance(payload, dict):
        return None
    if isinstance(payload.get("task"), dict):
        return dict(payload["task"])
    if payload.get("kind") == "task" or ("id" in payload and "status" in payload):
        return payload
    return None


def tasks_listed(payload: Any) -> list[dict[str, Any]]:
    """The tasks of a ListTasks answer (``tasks``), any other shape: none."""
    if isinstance(payload, dict) and isinstance(payload.get("tasks"), list):
        return [task for task in payload["tasks"] if isinstance(task, dict)]
    return []


@dataclass(frozen=True, slots=True)
class TaskRef:
    """A task a caller of the probe made."""

    interface: Interface
    identity: Identity
    task_id: str
    context_id: str | None
    state: str | None
    exchange: Exchange


@dataclass
class ProbeContext:
    """Everything a check may use."""

    session: ProbeSession
    surface: Surface
    options: ProbeOptions
    first: Identity = ANONYMOUS
    second: Identity | None = None
    """The other caller for the isolation checks; None when there is none (see :attr:`anonymous_pair`)."""
    listener: Any = None
    """The push checks' webhook listener (:class:`arena_core.probes.listener.WebhookListener`)."""
    _auth: dict[Interface, bool] = field(default_factory=dict)
    _tasks: list[TaskRef] = field(default_factory=list)

    @property
    def interfaces(self) -> list[Interface]:
        return self.surface.interfaces

    @property
    def anonymous_pair(self) -> bool:
        """True when both callers are anonymous clients (the agent asks for no credentials)."""
        return self.first.token is None and self.second is not None and self.second.token is None

    async def requires_auth(self, interface: Interface) -> bool:
        """Whether ``interface`` refuses an unauthenticated GetTask (401/403); asked once."""
        if interface not in self._auth:
            exchange = await self.session.get_task(interface, "probe-auth-check-0000")
            self._auth[interface] = read_answer(interface, exchange).auth_refused
        return self._auth[interface]

    async def new_task(
        self,
        interface: Interface,
        identity: Identity | None = None,
        text: str = PROBE_TEXT,
        **ids: str | None,
    ) -> TaskRef | None:
        """Send ``text`` as ``identity`` (the first caller by default); the task made, None if none."""
        who = identity or self.first
        exchange = await self.session.send_message(interface, text, identity=who, **ids)
        answer = read_answer(interface, exchange)
        task = task_in(interface, answer.payload) if answer.served else None
        if task is None or not isinstance(task.get("id"), str):
            return None
        status = task.get("status")
        state = interface.state_name(status.get("state")) if isinstance(status, dict) else None
        context = task.get("contextId")
        ref = TaskRef(
            interface, who, task["id"], context if isinstance(context, str) else None, state, exchange
        )
        self._tasks.append(ref)
        return ref

    async def own_task(self, interface: Interface, identity: Identity | None = None) -> TaskRef:
        """A task of ``identity`` on ``interface``, made once and reused; Skip when none can be made."""
        who = identity or self.first
        for ref in self._tasks:
            if ref.interface == interface and ref.identity == who:
                return ref
        made = await self.new_task(interface, who)
        if made is None:
            raise Skip(
                f"could not create a task on {interface.label} (SendMessage did not answer with a Task)"
            )
        return made

    @property
    def tasks(self) -> list[TaskRef]:
        return list(self._tasks)


__all__ = [
    "CHECKS",
    "INTERRUPTED",
    "PROBE_TEXT",
    "TERMINAL",
    "Answer",
    "CheckDef",
    "CheckRun",
    "ProbeContext",
    "ProbeOptions",
    "Skip",
    "TaskRef",
    "check",
    "read_answer",
    "task_in",
    "tasks_listed",
]
