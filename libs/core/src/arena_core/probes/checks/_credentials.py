"""What the card and auth checks share: reading a request's fate without credentials, and reusing it.

Requests without credentials are the probes' most repeated ones; these helpers send each
(GetTask of an unknown task, SendMessage) at most once per interface and run, finding an
earlier one in the session's exchanges, so that the card and auth checks stay polite.
"""

from __future__ import annotations

import json
import secrets
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from arena_core.probes.base import PROBE_TEXT, Answer, ProbeContext, read_answer, task_in
from arena_core.probes.wire import ANONYMOUS, VERSION_HEADER, Exchange, Identity, Interface

UNKNOWN_TASK = "a2a-arena-probe-unknown-task"
"""A task id no agent has: an answer about it (TaskNotFound) shows the request passed authentication."""
Operation = Literal["get", "send"]
Through = Literal["served", "reached"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """An unauthenticated request an interface refused (401/403), and which operation it was."""

    exchange: Exchange
    operation: Operation


async def credentials_expected(ctx: ProbeContext) -> bool:
    """A token was given, or some interface refuses an unauthenticated GetTask."""
    return ctx.first.token is not None or await refuses_somewhere(ctx)


async def refuses_somewhere(ctx: ProbeContext) -> bool:
    for interface in ctx.interfaces:
        if await ctx.requires_auth(interface):
            return True
    return False


async def guarded(ctx: ProbeContext, interface: Interface) -> Refusal | None:
    """An unauthenticated request ``interface`` refuses: the shared GetTask, else (when credentials
    are expected at all) a SendMessage; None when it refuses neither."""
    if await ctx.requires_auth(interface):
        return Refusal(await anonymous_get_task(ctx, interface), "get")
    if not await credentials_expected(ctx):
        return None
    sent = await anonymous_send(ctx, interface)
    return Refusal(sent, "send") if refused(interface, sent) else None


async def anonymous_get_task(ctx: ProbeContext, interface: Interface) -> Exchange:
    """The unauthenticated GetTask ``ctx.requires_auth`` sent on ``interface`` (sent once per run)."""
    await ctx.requires_auth(interface)
    earlier = _earlier(ctx, interface, "get")
    return earlier if earlier is not None else await ctx.session.get_task(interface, UNKNOWN_TASK)


async def anonymous_send(ctx: ProbeContext, interface: Interface) -> Exchange:
    """An unauthenticated SendMessage on ``interface``: an earlier one of the run, else a new one
    (whose task, if one is made, is cancelled again)."""
    earlier = _earlier(ctx, interface, "send")
    if earlier is not None:
        return earlier
    sent = await ctx.session.send_message(interface, PROBE_TEXT)
    await cancel_quietly(ctx, interface, read_answer(interface, sent).payload, ANONYMOUS)
    return sent


async def cancel_quietly(ctx: ProbeContext, interface: Interface, payload: Any, identity: Identity) -> None:
    """Cancel the task in ``payload`` (a served SendMessage's), if any: the probe leaves nothing open."""
    task = task_in(interface, payload)
    if task is not None and isinstance(task.get("id"), str):
        await ctx.session.cancel_task(interface, task["id"], identity=identity)


def rendering(ctx: ProbeContext, interface: Interface) -> tuple[dict[str, Any], str]:
    """The card as ``interface``'s clients read it, and which rendering that is (``1.0``/``0.3``)."""
    surface = ctx.surface
    if interface.version == "0.3" and surface.card_v03 is not None:
        return surface.card_v03, "0.3"
    return surface.card, "1.0" if "supportedInterfaces" in surface.card else "0.3"


def got_through(interface: Interface, exchange: Exchange, *, unknown_id: bool) -> Through | None:
    """``served``, ``reached`` (the task layer answered), or None (refused, or unclear)."""
    answer = read_answer(interface, exchange)
    if answer.auth_refused:
        return None
    if answer.served:
        return "served"
    if answer.reached or (unknown_id and _not_found(interface, exchange, answer)):
        return "reached"
    if exchange.events is not None and exchange.status == 200 and answer.error_code is None:
        return "reached"  # an event stream opened for a client without credentials
    return None


def _not_found(interface: Interface, exchange: Exchange, answer: Answer) -> bool:
    """TaskNotFound: -32001, or an HTTP+JSON 404 with a JSON body (a bare 404 may be a missing route)."""
    if answer.error_code == -32001:
        return True
    return not interface.jsonrpc and exchange.status == 404 and isinstance(exchange.json(), dict)


def refused(interface: Interface, exchange: Exchange) -> bool:
    return read_answer(interface, exchange).auth_refused


def _earlier(ctx: ProbeContext, interface: Interface, operation: Operation) -> Exchange | None:
    """The latest unauthenticated ``operation`` on ``interface`` the run already sent (no query string)."""
    for exchange in reversed(ctx.session.exchanges):
        if any(name.lower() == "authorization" for name in exchange.request_headers) or "?" in exchange.url:
            continue
        if (exchange.request_headers.get(VERSION_HEADER) == "1.0") != (interface.version == "1.0"):
            continue
        if _is(interface, exchange, operation):
            return exchange
    return None


def _is(interface: Interface, exchange: Exchange, operation: Operation) -> bool:
    if interface.jsonrpc:
        if exchange.method != "POST" or exchange.url != interface.url:
            return False
        try:
            envelope = json.loads(exchange.request_body)
        except ValueError:
            return False
        wanted = (
            interface.method("GetTask", "tasks/get")
            if operation == "get"
            else interface.method("SendMessage", "message/send")
        )
        return isinstance(envelope, dict) and envelope.get("method") == wanted
    if operation == "send":
        return exchange.method == "POST" and exchange.url == interface.rest_url("/message:send")
    prefix = interface.rest_url("/tasks/")
    rest = exchange.url[len(prefix) :]
    return (
        exchange.method == "GET"
        and exchange.url.startswith(prefix)
        and bool(rest)
        and not set(rest) & {"/", ":"}
    )


async def replay(
    ctx: ProbeContext,
    interface: Interface,
    operation: Operation,
    *,
    identity: Identity = ANONYMOUS,
    query: dict[str, str] | None = None,
) -> Exchange:
    """``operation`` (GetTask of an unknown id, or SendMessage) with other credentials or a query string."""
    session = ctx.session
    message = {"message": interface.message(PROBE_TEXT)}
    if interface.jsonrpc:
        method = (
            interface.method("GetTask", "tasks/get")
            if operation == "get"
            else interface.method("SendMessage", "message/send")
        )
        envelope = {
            "jsonrpc": "2.0",
            "id": secrets.randbelow(1_000_000),
            "method": method,
            "params": {"id": UNKNOWN_TASK} if operation == "get" else message,
        }
        return await session.request(
            "POST", interface.url, identity=identity, headers=interface.headers, body=envelope, params=query
        )
    if operation == "get":
        url = interface.rest_url(f"/tasks/{urllib.parse.quote(UNKNOWN_TASK, safe='')}")
        return await session.request("GET", url, identity=identity, headers=interface.headers, params=query)
    return await session.request(
        "POST",
        interface.rest_url("/message:send"),
        identity=identity,
        headers=interface.headers,
        body=message,
        content_type=interface.content_type,
        params=query,
    )


def method_namer(interface: Interface) -> Callable[[str, str], str]:
    """Method names as the interface's clients know them (HTTP+JSON: the 1.0 operation names)."""

    def name(v10: str, v03: str) -> str:
        return interface.method(v10, v03) if interface.jsonrpc else v10

    return name


def status_text(exchange: Exchange) -> str:
    """An exchange's answer in brief (``HTTP 401``, ``HTTP 200, error -32001``, ``HTTP 404 NOT_FOUND``)."""
    if exchange.status is None:
        return exchange.error or "no answer"
    document = exchange.json()
    error = document.get("error") if isinstance(document, dict) else None
    if isinstance(error, dict):
        code, status = error.get("code"), error.get("status")
        if isinstance(status, str) and status:
            return f"HTTP {exchange.status} {status}"
        if isinstance(code, int) and code != exchange.status:
            return f"HTTP {exchange.status}, error {code}"
    return f"HTTP {exchange.status}"


__all__ = [
    "UNKNOWN_TASK",
    "Operation",
    "Refusal",
    "Through",
    "anonymous_get_task",
    "anonymous_send",
    "cancel_quietly",
    "credentials_expected",
    "got_through",
    "guarded",
    "method_namer",
    "refused",
    "refuses_somewhere",
    "rendering",
    "replay",
    "status_text",
]
