"""Authentication checks: which requests an agent that asks for credentials serves without good ones.

They run only when the agent refuses some unauthenticated request (``ctx.requires_auth`` on
some interface) or a token was given; otherwise there is nothing to bypass. Every judgement
compares like with like on one interface: the same request without credentials (refused,
401/403) and with a bad credential, a token in the query string, or none on another binding.

"Got through" is read strictly: the request was served, or it reached the task layer (a
task-scoped error, or TaskNotFound for an id the probe made up, where an agent that checks
credentials first answers 401). The helpers both the card and the auth checks use are in
:mod:`arena_core.probes.checks._credentials`.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from arena_core.probes.base import CheckRun, ProbeContext, Skip, TaskRef, check, read_answer, task_in
from arena_core.probes.checks._credentials import (
    UNKNOWN_TASK,
    Operation,
    Through,
    anonymous_get_task,
    anonymous_send,
    cancel_quietly,
    credentials_expected,
    got_through,
    guarded,
    method_namer,
    refused,
    refuses_somewhere,
    replay,
    status_text,
)
from arena_core.probes.model import Severity
from arena_core.probes.signing import b64url_encode
from arena_core.probes.wire import Exchange, Identity, Interface

WEBHOOK = "https://a2a-arena-probe.invalid/webhook"
"""The webhook of a push configuration made without credentials: ``.invalid`` never resolves (RFC 2606)."""
QUERY_NAMES = ("access_token", "token", "api_key")

_NO_CREDENTIALS = "the agent asks for no credentials"


async def _require_credentials(ctx: ProbeContext) -> None:
    if not await credentials_expected(ctx):
        raise Skip(_NO_CREDENTIALS)


# -- auth.missing-credentials ---------------------------------------------------------------------


@check(
    "auth.missing-credentials",
    "auth",
    "A method is served without credentials",
    Severity.HIGH,
    remediation=(
        "Authenticate every A2A method on every interface before it is dispatched: one middleware in "
        "front of all routes and both bindings (SendMessage, GetTask, CancelTask, ListTasks, "
        "SubscribeToTask, push notification configs, the extended card), answering 401 with "
        "WWW-Authenticate. Only the public agent card may be served without credentials."
    ),
)
async def missing_credentials(ctx: ProbeContext, run: CheckRun) -> None:
    """On each interface, each method the card offers is called once without credentials:
    SendMessage, GetTask and SubscribeToTask (of the first caller's task when a token was given,
    else of an unknown id), CancelTask (of an unknown id, so nothing is cancelled), ListTasks
    (1.0), a push configuration (with an unresolvable webhook; deleted again if made) and the
    extended card. A method served, or let through to the task layer (TaskNotFound or a task
    error instead of 401), is a finding for that interface, naming every such method (MEDIUM
    when none was actually served)."""
    await _require_credentials(ctx)
    refused_anywhere: list[str] = []
    for interface in ctx.interfaces:
        own = await _own_task(ctx, interface)
        attempts = await _attempts(ctx, interface, own)
        through = [(name, exchange, verdict) for name, exchange, verdict in attempts if verdict is not None]
        refused_here = [
            name for name, exchange, verdict in attempts if verdict is None and refused(interface, exchange)
        ]
        refused_anywhere += refused_here
        if not through:
            run.note(f"{interface.label}: {len(attempts)} method(s) refused without credentials")
            continue
        served = [name for name, _, verdict in through if verdict == "served"]
        reached = [name for name, _, verdict in through if verdict == "reached"]
        parts = []
        if served:
            parts.append(f"served {', '.join(served)}")
        if reached:
            parts.append(
                f"let {', '.join(reached)} through to the task layer (a task answer such as TaskNotFound "
                "where a protected method answers 401; with a real task id it acts on the task)"
            )
        if refused_here:
            why = f"although it refuses {', '.join(refused_here)} without them"
        elif refused_anywhere or await refuses_somewhere(ctx):
            why = "although the agent refuses unauthenticated requests elsewhere"
        else:
            why = "although a token was given for this agent"
        evidence = [exchange for _, exchange, _ in through][:4]
        evidence += [exchange for name, exchange, verdict in attempts if verdict is None][:1]
        run.find(
            f"Without credentials (no Authorization header), {interface.label} {'; and '.join(parts)}, "
            f"{why}. Anyone who can reach the agent can use these methods.",
            evidence=evidence,
            interface=interface,
            severity=None if served else Severity.MEDIUM,
        )


async def _own_task(ctx: ProbeContext, interface: Interface) -> TaskRef | None:
    if ctx.first.token is None:
        return None  # an anonymous first caller makes no task an agent that asks credentials would serve
    try:
        return await ctx.own_task(interface)
    except Skip:
        return None


async def _attempts(
    ctx: ProbeContext, interface: Interface, own: TaskRef | None
) -> list[tuple[str, Exchange, Through | None]]:
    """Each method once without credentials: (its name, the exchange, whether it got through)."""
    session, surface = ctx.session, ctx.surface
    task_id = own.task_id if own is not None else UNKNOWN_TASK
    unknown = own is None
    name = method_namer(interface)
    attempts: list[tuple[str, Exchange, bool]] = [
        (name("SendMessage", "message/send"), await anonymous_send(ctx, interface), False)
    ]
    if own is not None:
        attempts.append((name("GetTask", "tasks/get"), await session.get_task(interface, own.task_id), False))
    else:
        attempts.append((name("GetTask", "tasks/get"), await anonymous_get_task(ctx, interface), True))
    cancel = await session.cancel_task(interface, UNKNOWN_TASK)
    attempts.append((name("CancelTask", "tasks/cancel"), cancel, True))
    listed = await session.list_tasks(interface)
    if listed is not None:
        attempts.append(("ListTasks", listed, False))
    if surface.streaming:
        # The first event is enough; a stream held open without one is judged by its 200 alone.
        wait = min(ctx.options.timeout_s, max(1.0, ctx.options.stream_grace_s))
        stream = await session.subscribe(
            interface,
            task_id,
            until=lambda _: True,
            grace_s=0.0,
            idle_s=wait,
            max_s=wait,
        )
        attempts.append((name("SubscribeToTask", "tasks/resubscribe"), stream, unknown))
    if surface.push:
        push = await session.set_push_config(interface, task_id, WEBHOOK)
        attempts.append(
            (name("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"), push, unknown)
        )
        await _delete_config(ctx, interface, task_id, push)
    if surface.extended_card:
        extended = await session.extended_card(interface)
        attempts.append((name("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"), extended, False))
    return [
        (method, exchange, got_through(interface, exchange, unknown_id=flag))
        for method, exchange, flag in attempts
    ]


async def _delete_config(ctx: ProbeContext, interface: Interface, task_id: str, exchange: Exchange) -> None:
    answer = read_answer(interface, exchange)
    if not answer.served:
        return
    config_id = push_config_id(answer.payload)
    if config_id is None:
        return
    deleted = await ctx.session.delete_push_config(interface, task_id, config_id, identity=ctx.first)
    if not read_answer(interface, deleted).served and ctx.first.token is not None:
        await ctx.session.delete_push_config(interface, task_id, config_id)


def push_config_id(payload: Any) -> str | None:
    """The id of a push configuration answer, in the shapes 1.0 and 0.3 give it."""
    if not isinstance(payload, dict):
        return None
    inner = payload.get("pushNotificationConfig")
    for holder in (payload, inner if isinstance(inner, dict) else {}):
        value = holder.get("id")
        if isinstance(value, str) and value:
            return value
    name = payload.get("name")
    if isinstance(name, str) and "/pushNotificationConfigs/" in name:
        return name.rsplit("/", 1)[-1] or None
    return None


# -- auth.malformed-token -------------------------------------------------------------------------


def _jwt_none() -> str:
    header = b64url_encode(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    claims = b64url_encode(json.dumps({"sub": "admin", "scope": "*", "exp": 4_102_444_800}).encode())
    return f"{header}.{claims}."


def bad_credentials() -> list[tuple[str, Identity]]:
    """Bearer values no agent should accept: (how the detail names it, the caller sending it)."""
    return [
        (
            "an unknown bearer token",
            Identity("unknown-token", token=f"a2a-arena-probe-{secrets.token_hex(16)}"),
        ),
        ("an unsigned JWT (alg none, sub admin)", Identity("unsigned-jwt", token=_jwt_none())),
        ("a malformed bearer value", Identity("malformed-token", token="not a token")),  # noqa: S106 - no secret
    ]


@check(
    "auth.malformed-token",
    "auth",
    "A malformed or unknown token is accepted",
    Severity.HIGH,
    remediation=(
        "Validate every bearer token before serving: compare it in constant time with the configured "
        "tokens, or verify a JWT's signature (never alg none), issuer, audience and expiry; refuse "
        "anything else with 401. Never fall back to a default caller when a token does not match."
    ),
)
async def malformed_token(ctx: ProbeContext, run: CheckRun) -> None:
    """On each interface that refuses an unauthenticated request (GetTask of an unknown id, else
    SendMessage), the same request is sent with an unknown random token, an unsigned JWT
    (``alg: none``) and a malformed bearer value, stopping at the first accepted. Served, or
    answered TaskNotFound where the unauthenticated one got 401, is a finding: the token passed
    authentication."""
    await _require_credentials(ctx)
    judged = 0
    for interface in ctx.interfaces:
        refusal = await guarded(ctx, interface)
        if refusal is None:
            run.note(f"{interface.label}: refuses nothing without credentials; nothing to compare")
            continue
        judged += 1
        for what, identity in bad_credentials():
            exchange = await replay(ctx, interface, refusal.operation, identity=identity)
            verdict = got_through(interface, exchange, unknown_id=refusal.operation == "get")
            if verdict is None:
                continue
            run.find(
                f"{interface.label} accepted {what} (`Authorization: Bearer {identity.token}`): "
                f"{_named(interface, refusal.operation)} {_outcome(interface, exchange, verdict)}, while "
                f"the same request without credentials is refused ({status_text(refusal.exchange)}). "
                "Anyone can pass authentication with a made-up token.",
                evidence=[exchange, refusal.exchange],
                interface=interface,
            )
            await _clean_up(ctx, interface, exchange, identity)
            break
        else:
            run.note(f"{interface.label}: unknown, unsigned and malformed tokens refused")
    if not judged:
        raise Skip("no interface refuses unauthenticated requests; see auth.missing-credentials")


# -- auth.query-token ---------------------------------------------------------------------------------


@check(
    "auth.query-token",
    "auth",
    "A token in the query string is accepted",
    Severity.MEDIUM,
    remediation=(
        "Accept credentials only in the Authorization header; ignore access_token, token and api_key "
        "query parameters (and refuse the request with 401 when they are its only credential), and "
        "keep tokens out of URLs so they never reach access logs, proxies or Referer headers."
    ),
)
async def query_token(ctx: ProbeContext, run: CheckRun) -> None:
    """Needs a token. On each interface that refuses an unauthenticated request, the same request
    is sent with no Authorization header but the token as ``?access_token=``, ``?token=`` and
    ``?api_key=`` (one request; when it gets through, one per name to tell which). Getting through
    is a finding: tokens in URLs end up in logs, proxies and browser history."""
    await _require_credentials(ctx)
    token = ctx.first.token
    if token is None:
        raise Skip("needs a token (--token-env) to put in the query string")
    judged = 0
    for interface in ctx.interfaces:
        refusal = await guarded(ctx, interface)
        if refusal is None:
            run.note(f"{interface.label}: refuses nothing without credentials; nothing to compare")
            continue
        judged += 1
        unknown = refusal.operation == "get"
        every = await replay(ctx, interface, refusal.operation, query=dict.fromkeys(QUERY_NAMES, token))
        verdict = got_through(interface, every, unknown_id=unknown)
        if verdict is None:
            run.note(f"{interface.label}: a token in the query string is refused")
            continue
        await _clean_up(ctx, interface, every, ctx.first)
        accepted: list[str] = []
        shown = every
        for name in QUERY_NAMES:
            single = await replay(ctx, interface, refusal.operation, query={name: token})
            await _clean_up(ctx, interface, single, ctx.first)
            single_verdict = got_through(interface, single, unknown_id=unknown)
            if single_verdict is not None:
                if not accepted:
                    shown, verdict = single, single_verdict
                accepted.append(f"?{name}=")
        named = (
            ", ".join(accepted) if accepted else "one of " + ", ".join(f"?{name}=" for name in QUERY_NAMES)
        )
        run.find(
            f"{interface.label} accepts the caller's token in the query string ({named}) with no "
            f"Authorization header: {_named(interface, refusal.operation)} "
            f"{_outcome(interface, shown, verdict)}, while the same request without credentials is refused "
            f"({status_text(refusal.exchange)}). A token in a URL is written to access logs, proxy logs and "
            "browser history and leaks in Referer headers; whoever reads them can reuse it.",
            evidence=[shown, refusal.exchange],
            interface=interface,
        )
    if not judged:
        raise Skip("no interface refuses unauthenticated requests; see auth.missing-credentials")


# -- auth.binding-inconsistent --------------------------------------------------------------------


@check(
    "auth.binding-inconsistent",
    "auth",
    "One binding or version skips authentication",
    Severity.HIGH,
    remediation=(
        "Put every binding (JSON-RPC, HTTP+JSON, gRPC) and every protocol version behind the same "
        "authentication: mount them all under one authenticating middleware, and test each interface "
        "the card lists (and any the server answers that the card does not) without credentials."
    ),
)
async def binding_inconsistent(ctx: ProbeContext, run: CheckRun) -> None:
    """With two interfaces or more: the unauthenticated GetTask of an unknown id every check
    shares is compared across interfaces. When one interface refuses it (401/403) and another
    serves it or answers TaskNotFound (so it checked no credentials), the second is a finding:
    an attacker uses that binding or version to bypass authentication."""
    await _require_credentials(ctx)
    if len(ctx.interfaces) < 2:
        raise Skip("only one interface: nothing to compare")
    refusing: list[tuple[Interface, Exchange]] = []
    open_: list[tuple[Interface, Exchange, Through]] = []
    for interface in ctx.interfaces:
        exchange = await anonymous_get_task(ctx, interface)
        verdict = got_through(interface, exchange, unknown_id=True)
        if refused(interface, exchange):
            refusing.append((interface, exchange))
        elif verdict is not None:
            open_.append((interface, exchange, verdict))
        else:
            run.note(f"{interface.label}: unclear answer without credentials ({status_text(exchange)})")
    if not refusing or not open_:
        state = "refuse" if refusing else "answer"
        run.note(
            f"all {len(refusing) or len(open_)} comparable interface(s) {state} an unauthenticated GetTask"
        )
        return
    strict = ", ".join(interface.label for interface, _ in refusing[:4])
    for interface, exchange, verdict in open_:
        run.find(
            f"{interface.label} checks no credentials: an unauthenticated GetTask "
            f"{_outcome(interface, exchange, verdict)}, "
            f"while {strict} refuse{'s' if len(refusing) == 1 else ''} the same request "
            f"({status_text(refusing[0][1])}). Whatever the other interfaces protect, this one gives away.",
            evidence=[exchange, refusing[0][1]],
            interface=interface,
        )


async def _clean_up(ctx: ProbeContext, interface: Interface, exchange: Exchange, identity: Identity) -> None:
    answer = read_answer(interface, exchange)
    if answer.served:
        await cancel_quietly(ctx, interface, answer.payload, identity)


def _named(interface: Interface, operation: Operation) -> str:
    name = method_namer(interface)
    return (
        f"{name('GetTask', 'tasks/get')} of an unknown task"
        if operation == "get"
        else name("SendMessage", "message/send")
    )


def _outcome(interface: Interface, exchange: Exchange, verdict: Through) -> str:
    """What became of a request that got through, as a predicate: ``was served (HTTP 200, task x)``."""
    if verdict == "served":
        task = task_in(interface, read_answer(interface, exchange).payload)
        made = f", task {task['id']}" if task is not None and isinstance(task.get("id"), str) else ""
        return f"was served (HTTP {exchange.status}{made})"
    return f"reached the task layer ({status_text(exchange)}) instead of being refused with 401"


__all__ = [
    "QUERY_NAMES",
    "WEBHOOK",
    "bad_credentials",
    "binding_inconsistent",
    "malformed_token",
    "missing_credentials",
    "push_config_id",
    "query_token",
]
