"""The push, input and leak checks against the vulnerable agent: each finds its flaw, and only that.

Four agent processes, each probed once (push, input and leaks) through a transport that
records every exchange:

* ``clean``: every flag off, A2A 1.0 and 0.3 on both bindings: no finding from any check;
* ``everything``: every flag of these checks on (the webhook is called without its token):
  every check finds, on each binding it looks at;
* ``v03``: a 0.3-only agent that accepts loopback webhooks but never calls them, answers
  unknown methods -32603, trips on deep JSON and names a backend address;
* ``rest``: an HTTP+JSON-only agent with tokens that calls the webhook with its token, takes
  any body size and returns tracebacks.

So each check has a true positive (its flag on) and a true negative (its flag off, and where
it matters on an agent vulnerable otherwise), and the 0.3-only and HTTP+JSON-only agents show
the checks adapting (skipping what they cannot look at) without breaking.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from arena_core.probes.base import ProbeOptions
from arena_core.probes.model import CheckResult, ProbeReport
from arena_core.probes.runner import run_probes
from support.vulnerable_agent import running_vulnerable_agent

pytestmark = pytest.mark.system

TOKEN = "rest-caller-token-0123456789abcdef"
OPTIONS = ProbeOptions(only=frozenset({"push", "input", "leaks"}), wait_s=1.0, rate_per_s=200)


@dataclass(frozen=True)
class Target:
    flags: tuple[str, ...]
    mode: str = "all"
    token: str | None = None


TARGETS = {
    "clean": Target(()),
    "everything": Target(
        (
            "push-ssrf",
            "push-no-token",
            "no-body-limit",
            "deep-json-crash",
            "utf8-crash",
            "unknown-method-500",
            "lenient-methods",
            "any-content-type",
            "leak-trace",
            "leak-path",
            "leak-address",
        )
    ),
    "v03": Target(
        ("push-accept-private", "unknown-method-500", "deep-json-crash", "leak-address"), "v03-only"
    ),
    "rest": Target(("push-ssrf", "no-body-limit", "leak-trace"), "rest-only", TOKEN),
}

FOUND: dict[str, tuple[str, ...]] = {
    "push.private-webhook": ("everything", "v03", "rest"),
    "push.ssrf": ("everything", "rest"),
    "push.webhook-unauthenticated": ("everything",),
    "input.oversized": ("everything", "rest"),
    "input.deep-nesting": ("everything", "v03"),
    "input.invalid-utf8": ("everything",),
    "input.unknown-method": ("everything", "v03"),
    "input.version-confusion": ("everything",),
    "input.content-type": ("everything",),
    "leaks.stack-trace": ("everything", "rest"),
    "leaks.file-path": ("everything",),
    "leaks.internal-address": ("everything", "v03"),
}
"""Where each check must find something (its flag on)."""

NOT_FOUND: dict[str, dict[str, str]] = {
    "push.private-webhook": {"clean": "passed"},
    "push.ssrf": {"clean": "passed", "v03": "passed"},
    "push.webhook-unauthenticated": {"clean": "skipped", "v03": "skipped", "rest": "passed"},
    "input.oversized": {"clean": "passed", "v03": "passed"},
    "input.deep-nesting": {"clean": "passed", "rest": "passed"},
    "input.invalid-utf8": {"clean": "passed", "v03": "passed", "rest": "passed"},
    "input.unknown-method": {"clean": "passed", "rest": "skipped"},
    "input.version-confusion": {"clean": "passed", "v03": "skipped", "rest": "skipped"},
    "input.content-type": {"clean": "passed", "v03": "passed", "rest": "passed"},
    "leaks.stack-trace": {"clean": "passed", "v03": "passed"},
    "leaks.file-path": {"clean": "passed", "v03": "passed", "rest": "passed"},
    "leaks.internal-address": {"clean": "passed", "rest": "passed"},
}
"""Where each check must find nothing (its flag off), and the status it must end in."""

BOTH_BINDINGS = {
    "push.private-webhook",
    "push.ssrf",
    "push.webhook-unauthenticated",
    "input.oversized",
    "input.deep-nesting",
    "input.invalid-utf8",
    "input.content-type",
}
"""Checks that look at one interface of each binding: on ``everything`` they find on both."""


@dataclass
class Recorded:
    """One exchange as the wire saw it."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes
    status: int
    answer: bytes


@dataclass
class RecordingTransport(httpx.AsyncBaseTransport):
    """Plain HTTP to the agent, every exchange kept (the checks here read no streams)."""

    inner: httpx.AsyncHTTPTransport = field(default_factory=httpx.AsyncHTTPTransport)
    exchanges: list[Recorded] = field(default_factory=list)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        response = await self.inner.handle_async_request(request)
        answer = await response.aread()
        await response.aclose()
        self.exchanges.append(
            Recorded(
                request.method, str(request.url), dict(request.headers), body, response.status_code, answer
            )
        )
        return httpx.Response(response.status_code, headers=response.headers, content=answer, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True)
class Probed:
    report: ProbeReport
    exchanges: list[Recorded]

    def result(self, check_id: str) -> CheckResult:
        (result,) = [r for r in self.report.results if r.check_id == check_id]
        return result


def _probe(url: str, target: Target) -> Probed:
    transport = RecordingTransport()
    report = asyncio.run(run_probes(url, OPTIONS, token=target.token, transport=transport))
    return Probed(report, transport.exchanges)


@pytest.fixture(scope="module")
def probed() -> Iterator[dict[str, Probed]]:
    """Every target probed once (agents started one after the other, stopped at the end)."""
    with ExitStack() as agents:
        reports = {}
        for name, target in TARGETS.items():
            tokens = {"alice": target.token} if target.token else None
            url = agents.enter_context(
                running_vulnerable_agent(target.flags, tokens=tokens, mode=target.mode, max_open_tasks=100)
            )
            reports[name] = _probe(url, target)
        yield reports


@pytest.mark.parametrize("check_id", sorted(FOUND))
def test_each_check_finds_its_flaw(probed: dict[str, Probed], check_id: str) -> None:
    for name in FOUND[check_id]:
        result = probed[name].result(check_id)
        assert result.status == "failed", (name, result)
        assert result.findings and all(f.check_id == check_id and f.evidence for f in result.findings)
        if name == "everything" and check_id in BOTH_BINDINGS:
            bindings = {
                "JSONRPC" if "JSONRPC" in (f.interface or "") else "HTTP+JSON" for f in result.findings
            }
            assert bindings == {"JSONRPC", "HTTP+JSON"}, result.findings


@pytest.mark.parametrize("check_id", sorted(NOT_FOUND))
def test_each_check_finds_nothing_without_its_flaw(probed: dict[str, Probed], check_id: str) -> None:
    for name, status in NOT_FOUND[check_id].items():
        result = probed[name].result(check_id)
        assert result.status == status, (name, result)
        assert not result.findings
        assert result.reason, (name, result)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_no_check_breaks_and_every_config_is_deleted(probed: dict[str, Probed], name: str) -> None:
    report = probed[name].report
    assert not report.errored(), report.errored()
    assert report.stopped is None
    assert len(report.results) == len(FOUND)
    created, deleted = _push_configs(probed[name].exchanges)
    assert sorted(deleted) == sorted(created)
    assert bool(created) == (name != "clean")


def test_the_findings_say_what_was_seen(probed: dict[str, Probed]) -> None:
    everything = probed["everything"]
    (unauthenticated, *_) = everything.result("push.webhook-unauthenticated").findings
    assert "without the config's token" in unauthenticated.detail
    assert "POST http://127.0.0.1:" in unauthenticated.evidence[0].request
    ssrf = everything.result("push.ssrf").findings[0]
    assert "follow-up message" in ssrf.detail
    assert len(ssrf.evidence) == 3  # the config, the follow-up, the delivery
    # The backend address is named once, inside its URL.
    (address,) = everything.result("leaks.internal-address").findings
    assert "hold an internal service URL: 'redis://10.20.30.40:6379'" in address.detail
    (path,) = everything.result("leaks.file-path").findings
    assert "'/srv/agent/handlers.py'" in path.detail
    # The rest agent's caller token never shows, though every request carried it.
    rest = probed["rest"].report.model_dump_json()
    assert TOKEN not in rest
    assert TOKEN[:12] not in rest


def _push_configs(exchanges: list[Recorded]) -> tuple[list[str], list[str]]:
    """(task id of each push config the agent accepted, of each it deleted), read off the wire."""
    created: list[str] = []
    deleted: list[str] = []
    for exchange in exchanges:
        answer = _json(exchange.answer)
        ok = 200 <= exchange.status < 300 and not (isinstance(answer, dict) and "error" in answer)
        if not ok:
            continue
        request = _json(exchange.body)
        envelope: dict[str, Any] = request if isinstance(request, dict) else {}
        method = envelope.get("method")
        params: dict[str, Any] = envelope.get("params") or {}
        if method in ("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"):
            created.append(params["taskId"])
        elif method == "DeleteTaskPushNotificationConfig":
            deleted.append(params["taskId"])
        elif method == "tasks/pushNotificationConfig/delete":
            deleted.append(params["id"])
        elif "/pushNotificationConfigs" in exchange.url:
            task_id = exchange.url.split("/tasks/")[1].split("/")[0]
            if exchange.method == "POST":
                created.append(task_id)
            elif exchange.method == "DELETE":
                deleted.append(task_id)
    return created, deleted


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
