"""Error leak checks: stack traces, server file paths and internal addresses in the target's answers.

They run last and read every response of the run (``ctx.session.exchanges``: bodies, stream
events, the error of a request that got no answer), after three error-provoking requests of
their own on the first interface of each binding (GetTask of an unknown id, a SendMessage
with invalid params, malformed JSON), sent once per run. A JSON body is read as the strings
it holds (so escapes do not hide a path); a long text is read in part, its first
:data:`HEAD_CHARS` and last :data:`TAIL_CHARS` (a trace is often at the end of an error page).

Each leak is reported once per kind (a Python traceback, a server file path, a private IPv4
address...) with the first response that held it as evidence and up to five of the values
seen. The target's own host and the hosts of the interfaces its card declares are not
internal addresses, nor is loopback. Every pattern is linear: no nested quantifiers, every
repetition bounded, so a megabyte of adversarial text is read in milliseconds.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from arena_core.origin import Origin
from arena_core.probes.base import CheckRun, ProbeContext, check
from arena_core.probes.checks.input import first_of_each_binding
from arena_core.probes.model import Severity
from arena_core.probes.wire import JSON, Exchange, Interface, ProbeSession

HEAD_CHARS = 196_608
TAIL_CHARS = 65_536
MAX_STRINGS = 20_000
"""The most strings of one JSON body read (a body is at most 1 MiB anyway)."""
SNIPPET_CHARS = 160
SHOWN_VALUES = 5
MAX_MATCHES = 20
"""The most matches of one pattern taken from one text (one is enough to report; the rest are examples)."""


@dataclass(frozen=True, slots=True)
class Leak:
    """Something a response should not hold: its kind, the value, and the text around it."""

    kind: str
    value: str
    snippet: str


# -- the patterns ------------------------------------------------------------------------------
# Each starts with a literal where it can (the engine then skips ahead to it) and is tried
# only when a cheap substring test says it may match. "at (?<!\wat )" is "\bat " spelled
# literal-first.

_TRACES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("Python traceback", "Traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("Python traceback", 'File "', re.compile(r'File "[^"\n]{1,300}", line \d{1,7}, in [\w<>.]{1,100}')),
    (
        "Java stack trace",
        "at ",
        re.compile(
            r"at (?<!\wat )[\w$.<>/]{1,300}\("
            r"(?:[\w$-]{1,200}\.(?:java|kt|scala|groovy):\d{1,7}|Native Method)\)"
        ),
    ),
    (
        "Node.js stack trace",
        "at ",
        re.compile(
            r"at (?<!\wat )(?:async |new )?[\w$.<>\[\]]{1,150} \("
            r"(?:[^()\s]{0,300}\.[cm]?[jt]sx?|node:[^()\s]{1,200}):\d{1,7}:\d{1,7}\)"
        ),
    ),
    (
        "Node.js stack trace",
        "at ",
        re.compile(r"at (?<!\wat )(?:file://)?/[^()\s]{0,300}\.[cm]?[jt]sx?:\d{1,7}:\d{1,7}"),
    ),
    (
        "Go goroutine dump",
        "goroutine ",
        re.compile(r"goroutine (?<!\wgoroutine )\d{1,10} \[[a-z ,]{1,40}\]:"),
    ),
)

_POSIX_ROOTS = ("/home/", "/usr/", "/srv/", "/app/", "/opt/", "/var/", "/root/", "/Users/")
_POSIX_PATH = re.compile(
    r"/(?<![\w/.:~%@-]/)(?:home|usr|srv|app|opt|var|root|Users)/[\w.@+-][\w.@+/-]{0,250}"
)
_WINDOWS_PATH = re.compile(
    r":\\(?<=[A-Za-z]:\\)(?<![\w\\/][A-Za-z]:\\)[\w$ .()~-]{1,100}\\[\w$.()~\\-]{0,200}"
)
"""Matched from the colon on: the drive letter before it is added back."""
_FILE_URL = re.compile(r"file:///[^\s\"'<>()]{1,250}")

_PRIVATE_V4 = re.compile(
    r"1(?<![\w.]1)(?:0\.\d{1,3}|72\.(?:1[6-9]|2\d|3[01])|92\.168)\.\d{1,3}\.\d{1,3}(?!\w|\.\d)"
)
_PRIVATE_V6 = re.compile(r"f(?<![\w:]f)[cd][0-9a-f]{2}:[0-9a-f:]{1,36}(?![\w:])")
"""Read in the lower-cased text."""
_SERVICE_URL = re.compile(
    r"(?<![\w+.-])(?:rediss?|postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|amqps?|memcached|kafka|nats"
    r"|jdbc:[a-z0-9]{1,20})://[^\s\"'<>\\]{1,200}",
    re.IGNORECASE,
)
_INTERNAL_SUFFIX = re.compile(r"\.(?:internal|cluster\.local)(?![\w-]|\.\w)", re.IGNORECASE)
"""A host name's internal suffix; the name before it is read backwards (at most :data:`_MAX_HOST`)."""
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
_MAX_HOST = 253
_ULA = ipaddress.ip_network("fc00::/7")


def _first(matches: Iterator[re.Match[str]]) -> Iterator[re.Match[str]]:
    """At most :data:`MAX_MATCHES` of a pattern's matches in one text."""
    return itertools.islice(matches, MAX_MATCHES)


def _snippet(text: str, start: int, end: int) -> str:
    before = max(0, start - SNIPPET_CHARS // 2)
    shown = text[before : end + SNIPPET_CHARS // 2]
    return " ".join(shown.split())[: SNIPPET_CHARS * 2]


def stack_traces(text: str) -> list[Leak]:
    """Stack traces in ``text``: Python, Java (and other JVM), Node.js, Go."""
    found: list[Leak] = []
    for kind, anchor, pattern in _TRACES:
        if anchor not in text:
            continue
        for match in _first(pattern.finditer(text)):
            found.append(Leak(kind, match.group(0)[:200], _snippet(text, match.start(), match.end())))
    return found


def file_paths(text: str) -> list[Leak]:
    """Absolute file paths of a server in ``text`` (``/home/``, ``/usr/``... , ``C:\\...``, ``file:///``)."""
    found: list[Leak] = []
    if any(root in text for root in _POSIX_ROOTS):
        for match in _first(_POSIX_PATH.finditer(text)):
            value = match.group(0).rstrip(" .,;:")
            found.append(Leak("server file path", value, _snippet(text, match.start(), match.end())))
    if ":\\" in text:
        for match in _first(_WINDOWS_PATH.finditer(text)):
            value = text[match.start() - 1 : match.end()].rstrip(" .,;:")
            found.append(Leak("Windows file path", value, _snippet(text, match.start() - 1, match.end())))
    if "file:///" in text:
        for match in _first(_FILE_URL.finditer(text)):
            value = match.group(0).rstrip(" .,;:")
            found.append(Leak("file URL", value, _snippet(text, match.start(), match.end())))
    return found


def internal_addresses(text: str, own_hosts: Collection[str] = ()) -> list[Leak]:
    """Private addresses (10/8, 172.16/12, 192.168/16, fc00::/7), internal service URLs and internal
    host names (``.internal``, ``.cluster.local``) in ``text``; hosts in ``own_hosts`` are not
    reported, nor is loopback. An address inside a service URL is reported once, as the URL."""
    own = {host.lower().strip("[]") for host in own_hosts}
    found: list[Leak] = []
    urls: list[tuple[int, int]] = []

    def in_url(position: int) -> bool:
        return any(start <= position < end for start, end in urls)

    if "://" in text:
        for match in _first(_SERVICE_URL.finditer(text)):
            urls.append(match.span())
            found.append(Leak("internal service URL", match.group(0), _snippet(text, *match.span())))
    if any(prefix in text for prefix in ("10.", "172.", "192.168.")):
        for match in _first(_PRIVATE_V4.finditer(text)):
            try:
                address = ipaddress.IPv4Address(match.group(0))
            except ValueError:  # an octet over 255, a leading zero: a version number, not an address
                continue
            if address.is_private and not in_url(match.start()) and str(address) not in own:
                found.append(Leak("private IPv4 address", str(address), _snippet(text, *match.span())))
    lowered = text.lower()
    if "fc" in lowered or "fd" in lowered:
        for match in _first(_PRIVATE_V6.finditer(lowered)):
            v6 = _ipv6(match.group(0))
            if v6 is None or v6 not in _ULA or in_url(match.start()):
                continue
            if str(v6) not in own and match.group(0) not in own:
                found.append(Leak("private IPv6 address", str(v6), _snippet(lowered, *match.span())))
    if ".internal" in lowered or ".cluster.local" in lowered:
        for match in _first(_INTERNAL_SUFFIX.finditer(text)):
            start = _name_start(text, match.start())
            host = text[start : match.end()].lower()
            if start < match.start() and host[0].isalnum() and not in_url(start) and host not in own:
                found.append(Leak("internal host name", host, _snippet(text, start, match.end())))
    return found


def _name_start(text: str, end: int) -> int:
    """Where the host name ending at ``end`` starts (reading back over name characters, bounded)."""
    start = end
    while start > 0 and end - start < _MAX_HOST and text[start - 1] in _HOST_CHARS:
        start -= 1
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return end  # part of a longer word: not a host name
    return start


def _ipv6(text: str) -> ipaddress.IPv6Address | None:
    for candidate in (text, text.rstrip(":")):
        try:
            return ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
    return None


# -- what is read ------------------------------------------------------------------------------


def bounded(text: str) -> str:
    """``text``, or its first :data:`HEAD_CHARS` and last :data:`TAIL_CHARS` when longer."""
    if len(text) <= HEAD_CHARS + TAIL_CHARS:
        return text
    return f"{text[:HEAD_CHARS]}\n{text[-TAIL_CHARS:]}"


def json_strings(document: Any) -> str:
    """Every string (keys too) in a JSON document, one per line, at most :data:`MAX_STRINGS`."""
    strings: list[str] = []
    pending: list[Any] = [document]
    while pending and len(strings) < MAX_STRINGS:
        item = pending.pop()
        if isinstance(item, str):
            strings.append(item)
        elif isinstance(item, dict):
            strings.extend(key for key in item if isinstance(key, str))
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            pending.extend(reversed(item))
    return "\n".join(strings)


def texts_of(exchange: Exchange) -> Iterator[str]:
    """What the target said in ``exchange``: its body (JSON as its strings), stream events, or the error."""
    if exchange.body:
        yield _readable(exchange.body)
    for event in exchange.events or []:
        yield _readable(event)
    if exchange.error:
        yield bounded(exchange.error)


def _readable(text: str) -> str:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        document = None
    return bounded(json_strings(document) if isinstance(document, (dict, list)) else text)


def own_hosts(ctx: ProbeContext) -> set[str]:
    """The target's host and every host its card declares an interface on."""
    hosts = {ctx.session.origin.host}
    for url in [ctx.surface.card_url, *(declared[0] for declared in ctx.surface.declared)]:
        origin = Origin.of_web(url)
        if origin is not None:
            hosts.add(origin.host)
    return {host.lower().strip("[]") for host in hosts}


# -- provoking errors --------------------------------------------------------------------------

_PROVOKED: WeakKeyDictionary[ProbeSession, bool] = WeakKeyDictionary()


async def _provoke(ctx: ProbeContext) -> None:
    """Three error-provoking requests per binding, once per run."""
    if _PROVOKED.get(ctx.session):
        return
    _PROVOKED[ctx.session] = True
    for interface in first_of_each_binding(ctx.interfaces):
        await ctx.session.get_task(interface, f"probe-unknown-{uuid.uuid4().hex}", identity=ctx.first)
        if interface.jsonrpc:
            method = interface.method("SendMessage", "message/send")
            await ctx.session.rpc(
                interface, method, {"message": "not-a-message", "probe": [1]}, identity=ctx.first
            )
            malformed = (
                b'{"jsonrpc": "2.0", "id": 1, "method": "' + method.encode() + b'", "params": {"message": {'
            )
            await _post(ctx, interface, malformed)
        else:
            await _post(ctx, interface, json.dumps({"message": "not-a-message", "probe": [1]}).encode())
            await _post(ctx, interface, b'{"message": {"parts": [{"text": "unterminated')


async def _post(ctx: ProbeContext, interface: Interface, content: bytes) -> Exchange:
    url = interface.url if interface.jsonrpc else interface.rest_url("/message:send")
    kind = JSON if interface.jsonrpc else interface.content_type
    return await ctx.session.request(
        "POST", url, identity=ctx.first, headers=interface.headers, content=content, content_type=kind
    )


# -- the checks --------------------------------------------------------------------------------


@dataclass
class _Seen:
    """One kind of leak across the run."""

    first: Leak
    exchanges: list[Exchange] = field(default_factory=list)
    values: list[str] = field(default_factory=list)


async def _report(ctx: ProbeContext, run: CheckRun, find: Callable[[str], list[Leak]], what: str) -> None:
    await _provoke(ctx)
    exchanges = list(ctx.session.exchanges)
    seen: dict[str, _Seen] = {}
    for exchange in exchanges:
        for text in texts_of(exchange):
            for leak in find(text):
                same = seen.setdefault(leak.kind, _Seen(leak))
                if not same.exchanges or same.exchanges[-1] is not exchange:
                    same.exchanges.append(exchange)
                if leak.value not in same.values:
                    same.values.append(leak.value)
    for kind, leaks in seen.items():
        shown = ", ".join(repr(value) for value in leaks.values[:SHOWN_VALUES])
        more = f" and {len(leaks.values) - SHOWN_VALUES} more" if len(leaks.values) > SHOWN_VALUES else ""
        first = leaks.exchanges[0]
        run.find(
            f"{len(leaks.exchanges)} response(s) hold {_article(kind)} {kind}: {shown}{more}. First in the "
            f"answer to {first.method} {first.url}: ...{leaks.first.snippet}...",
            evidence=leaks.exchanges[:3],
        )
    if not seen:
        run.note(f"no {what} in {len(exchanges)} responses")


def _article(kind: str) -> str:
    return "an" if kind[0].lower() in "aeiou" else "a"


@check(
    "leaks.stack-trace",
    "leaks",
    "A response holds a stack trace",
    Severity.MEDIUM,
    remediation=(
        "Answer errors with a fixed message and an error code; log the trace on the server, never send it "
        "(turn off debug modes and framework error pages in production)."
    ),
)
async def stack_trace(ctx: ProbeContext, run: CheckRun) -> None:
    """Reads every response of the run, and the answers to three error-provoking requests per binding,
    for a stack trace: Python ("Traceback (most recent call last)", ``File "...", line N``), Java
    (``at x.y(File.java:12)``), Node.js (``at fn (file.js:1:2)``) or Go (``goroutine 1 [running]:``).
    A trace tells an attacker the code, its libraries and where it breaks."""
    await _report(ctx, run, stack_traces, "stack trace")


@check(
    "leaks.file-path",
    "leaks",
    "A response holds a server file path",
    Severity.LOW,
    remediation=(
        "Keep file system paths out of answers: report errors by code and a fixed message, not by exception."
    ),
)
async def file_path(ctx: ProbeContext, run: CheckRun) -> None:
    """Reads every response of the run (and the error-provoking requests' answers) for absolute file
    paths of the server: ``/home/``, ``/usr/``, ``/srv/``, ``/app/``, ``/opt/``, ``/var/``, ``/root/``,
    ``/Users/``, ``C:\\...`` or a ``file:///`` URL. A path in a URL of the target is not one."""
    await _report(ctx, run, file_paths, "server file path")


@check(
    "leaks.internal-address",
    "leaks",
    "A response holds an internal address",
    Severity.LOW,
    remediation=(
        "Keep internal addresses and connection strings out of answers (error texts of database and cache "
        "clients carry them); report errors by code and fixed message."
    ),
)
async def internal_address(ctx: ProbeContext, run: CheckRun) -> None:
    """Reads every response of the run (and the error-provoking requests' answers) for private addresses
    (10/8, 172.16/12, 192.168/16, fc00::/7), internal service URLs (``redis://``, ``postgres://``...)
    and internal host names (``.internal``, ``.svc.cluster.local``). The target's own host, the hosts
    its card declares interfaces on, and loopback are not reported."""
    hosts = own_hosts(ctx)
    await _report(ctx, run, lambda text: internal_addresses(text, hosts), "internal address")


__all__ = ["Leak", "bounded", "file_paths", "internal_addresses", "json_strings", "stack_traces", "texts_of"]
