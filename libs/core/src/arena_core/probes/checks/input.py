"""Input handling checks: bodies a careful server refuses cleanly and a careless one serves or trips on.

Each check sends a few raw bodies (``ctx.session.request(content=...)``) to the first
JSON-RPC interface and the first HTTP+JSON interface (``message:send``): one of each binding
is enough, since the interfaces of a binding usually share their parser, and it keeps the
checks polite. A clean refusal is a 4xx or a JSON-RPC error other than -32603 (internal error);
what counts as a finding is said per check. An answer 401/403 means the body was not read:
the interface is reported as not looked at (give a token), and the check is skipped when no
interface could be.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from arena_core.probes.base import TERMINAL, Answer, CheckRun, ProbeContext, Skip, check, read_answer, task_in
from arena_core.probes.model import Severity
from arena_core.probes.wire import JSON, Exchange, Interface

OVERSIZED_BYTES = 4 * 1024 * 1024
NESTING_DEPTH = 10_000
UNKNOWN_METHOD = "arena/probeUnknownMethod"
METHOD_NOT_FOUND = -32601
_MARK = "UTF8-PROBE-MARK"
_TEXT = "Hello. This is an automated A2A protocol check of how requests are read; a short reply is enough."


def first_of_each_binding(interfaces: list[Interface]) -> list[Interface]:
    """The first JSON-RPC and the first HTTP+JSON interface (those that exist)."""
    chosen: dict[str, Interface] = {}
    for interface in interfaces:
        chosen.setdefault(interface.binding, interface)
    return list(chosen.values())


def send_message_body(interface: Interface, text: str) -> dict[str, Any]:
    """A valid SendMessage request body for ``interface`` (the JSON-RPC envelope, or the REST params)."""
    params = {"message": interface.message(text)}
    if not interface.jsonrpc:
        return params
    method = interface.method("SendMessage", "message/send")
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex[:8], "method": method, "params": params}


def nested_body(interface: Interface, depth: int = NESTING_DEPTH) -> bytes:
    """A request whose parameters are ``depth`` nested arrays."""
    nested = "[" * depth + "]" * depth
    if interface.jsonrpc:
        method = interface.method("SendMessage", "message/send")
        return f'{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{nested}}}'.encode()
    return f'{{"message":{nested}}}'.encode()


def invalid_utf8_body(interface: Interface) -> bytes:
    """A valid SendMessage whose text holds the bytes ``FF FE`` (never valid UTF-8)."""
    body = json.dumps(send_message_body(interface, f"Automated A2A check {_MARK} (invalid UTF-8).")).encode()
    return body.replace(_MARK.encode(), b"\xff\xfe")


async def _post(
    ctx: ProbeContext,
    interface: Interface,
    content: bytes,
    *,
    content_type: str | None = None,
    headers: dict[str, str] | None = None,
) -> Exchange:
    """POST ``content`` where this interface takes a SendMessage."""
    url = interface.url if interface.jsonrpc else interface.rest_url("/message:send")
    kind = content_type or (JSON if interface.jsonrpc else interface.content_type)
    sent = interface.headers if headers is None else headers
    return await ctx.session.request(
        "POST", url, identity=ctx.first, headers=sent, content=content, content_type=kind
    )


def _how(answer: Answer, exchange: Exchange) -> str:
    if answer.status is None:
        return f"no answer ({exchange.error})"
    if answer.error_code is not None:
        return f"HTTP {answer.status}, JSON-RPC error {answer.error_code}"
    return f"HTTP {answer.status}"


def _error_message(exchange: Exchange) -> str:
    """The error message of a JSON-RPC or HTTP+JSON error answer ("" when there is none)."""
    document = exchange.json()
    error = document.get("error") if isinstance(document, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def limit_refusal(answer: Answer, exchange: Exchange) -> bool:
    """A refusal for a limit of the caller's tasks or requests (429, or an implementation-defined
    JSON-RPC server error saying so): the request was read, but whether it would be served is unknown."""
    if answer.status == 429:
        return True
    code = answer.error_code
    if code is None or not -32099 <= code <= -32000 or answer.status == 413:
        return False
    message = _error_message(exchange).lower()
    return "too many" in message or "limit" in message


class _Looked:
    """Tracks which interfaces a check could judge: a 401/403 (the body was not read) is not judged,
    nor, where being served is the question, a refusal for a limit of open tasks."""

    def __init__(self, run: CheckRun, *, limits_unjudged: bool = False) -> None:
        self.run = run
        self.limits_unjudged = limits_unjudged
        self.judged = 0
        self.unjudged: list[str] = []

    def readable(self, interface: Interface, answer: Answer, exchange: Exchange) -> bool:
        if answer.auth_refused:
            why = f"refused as unauthenticated (HTTP {answer.status}) before the body was read"
        elif self.limits_unjudged and limit_refusal(answer, exchange):
            said = _error_message(exchange)[:120] or f"HTTP {answer.status}"
            why = f"refused for a limit ({said}), so whether it would be served is unknown"
        else:
            self.judged += 1
            return True
        self.unjudged.append(f"{interface.label}: {why}")
        self.run.note(f"{interface.label}: {why}")
        return False

    def done(self) -> None:
        """Skip (with the reasons) when no interface could be judged."""
        if self.judged == 0 and self.unjudged:
            raise Skip("; ".join(self.unjudged) + " (a token, or fewer open tasks, would let the check look)")


async def _tidy(ctx: ProbeContext, interface: Interface, answer: Answer) -> None:
    """Cancel a task a served probe request made, unless it is over: the run leaves none open."""
    task = task_in(interface, answer.payload) if answer.served else None
    if task is None or not isinstance(task.get("id"), str):
        return
    status = task.get("status")
    if interface.state_name(status.get("state") if isinstance(status, dict) else None) not in TERMINAL:
        await ctx.session.cancel_task(interface, task["id"], identity=ctx.first)


def _interfaces(ctx: ProbeContext) -> list[Interface]:
    chosen = first_of_each_binding(ctx.interfaces)
    if not chosen:
        raise Skip("no interface to send to")
    return chosen


@check(
    "input.oversized",
    "input",
    "A 4 MiB request is served",
    Severity.MEDIUM,
    remediation=(
        "Cap request bodies (a few hundred KiB is plenty for A2A messages) and answer 413 before reading "
        "or parsing the rest; cap the length of text parts too."
    ),
)
async def oversized(ctx: ProbeContext, run: CheckRun) -> None:
    """Sends a valid SendMessage whose one text part is 4 MiB, on the first interface of each binding.
    A finding when it is served (413, a 4xx or an error are the right answers): with no body limit one
    client can make the agent hold, parse, store and pass on to its model any amount of text."""
    filler = ("Automated A2A check of the request size limit. " * (OVERSIZED_BYTES // 40))[:OVERSIZED_BYTES]
    looked = _Looked(run, limits_unjudged=True)
    for interface in _interfaces(ctx):
        content = json.dumps(send_message_body(interface, filler)).encode()
        exchange = await _post(ctx, interface, content)
        answer = read_answer(interface, exchange)
        if not looked.readable(interface, answer, exchange):
            continue
        await _tidy(ctx, interface, answer)
        if answer.served:
            run.find(
                f"{interface.label}: a SendMessage of {len(content) / 1_048_576:.1f} MiB was served "
                f"({_how(answer, exchange)}).",
                evidence=[exchange],
                interface=interface,
            )
        else:
            run.note(f"{interface.label}: refused ({_how(answer, exchange)})")
    looked.done()


@check(
    "input.deep-nesting",
    "input",
    "Deeply nested JSON breaks the server",
    Severity.MEDIUM,
    remediation=(
        "Bound the nesting depth of request JSON (a few dozen levels) before or while parsing and answer a "
        "parse error (-32700 / 400); catch recursion errors so one request cannot take a worker down."
    ),
)
async def deep_nesting(ctx: ProbeContext, run: CheckRun) -> None:
    """Sends a request whose parameters are arrays nested 10,000 deep, on the first interface of each
    binding. A parse error (-32700, 400, 413) or any other clean refusal is correct; a finding on a
    5xx, an internal error (-32603) or no answer: the parser ran out of stack (or time)."""
    looked = _Looked(run)
    for interface in _interfaces(ctx):
        exchange = await _post(ctx, interface, nested_body(interface))
        answer = read_answer(interface, exchange)
        if not looked.readable(interface, answer, exchange):
            continue
        if answer.server_error:
            run.find(
                f"{interface.label}: JSON nested {NESTING_DEPTH:,} deep got {_how(answer, exchange)}.",
                evidence=[exchange],
                interface=interface,
            )
        else:
            run.note(f"{interface.label}: {_how(answer, exchange)}")
    looked.done()


@check(
    "input.invalid-utf8",
    "input",
    "Invalid UTF-8 breaks the server",
    Severity.LOW,
    remediation=(
        "Decode request bodies strictly and answer a parse error (-32700 / 400) for invalid UTF-8 instead "
        "of failing later with an internal error."
    ),
)
async def invalid_utf8(ctx: ProbeContext, run: CheckRun) -> None:
    """Sends a SendMessage that is valid but for the bytes FF FE inside its text, on the first interface
    of each binding. A clean refusal or a served message are fine; a finding on a 5xx, an internal
    error (-32603) or no answer."""
    looked = _Looked(run)
    for interface in _interfaces(ctx):
        exchange = await _post(ctx, interface, invalid_utf8_body(interface))
        answer = read_answer(interface, exchange)
        if not looked.readable(interface, answer, exchange):
            continue
        await _tidy(ctx, interface, answer)
        if answer.server_error:
            run.find(
                f"{interface.label}: a body with invalid UTF-8 got {_how(answer, exchange)}.",
                evidence=[exchange],
                interface=interface,
            )
        else:
            run.note(f"{interface.label}: {_how(answer, exchange)}")
    looked.done()


@check(
    "input.unknown-method",
    "input",
    "An unknown JSON-RPC method is not answered with -32601",
    Severity.LOW,
    remediation="Answer a method the server does not know with the JSON-RPC error -32601 (Method not found).",
)
async def unknown_method(ctx: ProbeContext, run: CheckRun) -> None:
    """Calls a method no A2A version has on the first JSON-RPC interface. A finding unless the answer is
    the JSON-RPC error -32601 (Method not found): an internal error, another code or a result say the
    dispatcher does not know what it serves."""
    interface = next((i for i in ctx.interfaces if i.jsonrpc), None)
    if interface is None:
        raise Skip("the agent has no JSON-RPC interface")
    envelope = {"jsonrpc": "2.0", "id": 1, "method": UNKNOWN_METHOD, "params": {}}
    exchange = await _post(ctx, interface, json.dumps(envelope).encode())
    answer = read_answer(interface, exchange)
    looked = _Looked(run, limits_unjudged=True)
    if looked.readable(interface, answer, exchange):
        if answer.error_code == METHOD_NOT_FOUND:
            run.note(f"{interface.label}: -32601")
        else:
            what = "was served" if answer.served else f"got {_how(answer, exchange)}"
            run.find(
                f"{interface.label}: the unknown method {UNKNOWN_METHOD} {what}, not the error -32601.",
                evidence=[exchange],
                interface=interface,
            )
    looked.done()


@check(
    "input.version-confusion",
    "input",
    "Method names of the other protocol version are served",
    Severity.LOW,
    remediation=(
        "Dispatch JSON-RPC methods by the A2A-Version header: under 1.0 only 1.0 names (SendMessage...), "
        "without the header (0.3) only 0.3 names (message/send...); answer -32601 or VersionNotSupported "
        "otherwise."
    ),
)
async def version_confusion(ctx: ProbeContext, run: CheckRun) -> None:
    """On the first A2A 1.0 JSON-RPC interface, sends a 0.3 ``message/send`` under ``A2A-Version: 1.0``
    and a 1.0 ``SendMessage`` with no version header (which means 0.3). A finding when either is served:
    the server does not keep the versions apart, so what a client and the server think a request
    means can differ. Skipped when the agent has no 1.0 JSON-RPC interface."""
    interface = next((i for i in ctx.interfaces if i.jsonrpc and i.version == "1.0"), None)
    if interface is None:
        raise Skip("the agent has no A2A 1.0 JSON-RPC interface (0.3 names without a header are right there)")
    legacy = Interface(interface.url, "0.3", "jsonrpc")
    tries: tuple[tuple[str, dict[str, Any], dict[str, str]], ...] = (
        (
            "the 0.3 method message/send under A2A-Version: 1.0",
            send_message_body(legacy, _TEXT),
            interface.headers,
        ),
        ("the 1.0 method SendMessage without an A2A-Version header", send_message_body(interface, _TEXT), {}),
    )
    looked = _Looked(run, limits_unjudged=True)
    for what, body, headers in tries:
        exchange = await _post(ctx, interface, json.dumps(body).encode(), headers=headers)
        answer = read_answer(interface, exchange)
        if not looked.readable(interface, answer, exchange):
            continue
        await _tidy(ctx, interface, answer)
        if answer.served:
            run.find(f"{interface.label}: {what} was served.", evidence=[exchange], interface=interface)
        else:
            run.note(f"{interface.label}: {what}: {_how(answer, exchange)}")
    looked.done()


@check(
    "input.content-type",
    "input",
    "A request sent as text/plain is served",
    Severity.MEDIUM,
    remediation=(
        "Refuse request bodies not labelled application/json (or application/a2a+json) with 415: text/plain "
        "and form types are what any web page can send cross-site without a CORS preflight."
    ),
)
async def content_type(ctx: ProbeContext, run: CheckRun) -> None:
    """Sends a valid SendMessage labelled ``Content-Type: text/plain`` to the first interface of each
    binding. A finding when it is served: a web page open in a user's browser can send exactly that to
    any address (no CORS preflight), so an agent on a private network or on loopback can be driven
    from outside."""
    looked = _Looked(run, limits_unjudged=True)
    for interface in _interfaces(ctx):
        content = json.dumps(send_message_body(interface, _TEXT)).encode()
        exchange = await _post(ctx, interface, content, content_type="text/plain")
        answer = read_answer(interface, exchange)
        if not looked.readable(interface, answer, exchange):
            continue
        await _tidy(ctx, interface, answer)
        if answer.served:
            run.find(
                f"{interface.label}: a SendMessage sent as text/plain was served.",
                evidence=[exchange],
                interface=interface,
            )
        else:
            run.note(f"{interface.label}: text/plain refused ({_how(answer, exchange)})")
    looked.done()


__all__ = ["first_of_each_binding", "invalid_utf8_body", "nested_body", "send_message_body"]
