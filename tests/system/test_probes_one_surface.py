"""Every check against an agent with one protocol version or one binding only: each adapts or says why not.

The issue's third acceptance point, as one run of the whole catalogue per surface: a sound
agent (no flag on, two named callers) that speaks only A2A 0.3, only HTTP+JSON or only
JSON-RPC. No check breaks, none finds anything on a sound agent, and a check that could
not look says so in its reason.
"""

from __future__ import annotations

import asyncio

import pytest

from arena_core.probes.base import ProbeOptions
from arena_core.probes.runner import catalogue, run_probes
from support.vulnerable_agent import running_vulnerable_agent

pytestmark = pytest.mark.system

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef0"
OPTIONS = ProbeOptions(
    wait_s=1.5, stream_grace_s=0.5, rate_per_s=200, max_requests=2_000, concurrent_tasks=10
)
EXPIRY_S = 0.5
"""A parked task expires well within the probe's wait."""
MAX_OPEN_TASKS = 7
"""Room for the probe's own tasks, fewer than it opens at once: the concurrency limit is seen."""


@pytest.mark.parametrize(
    ("mode", "version", "binding"),
    [("v03-only", "0.3", None), ("rest-only", None, "http+json"), ("jsonrpc-only", None, "jsonrpc")],
)
def test_the_whole_catalogue_adapts_to_one_surface(
    mode: str, version: str | None, binding: str | None
) -> None:
    with running_vulnerable_agent(
        (), tokens={"alice": ALICE, "bob": BOB}, mode=mode, expiry_s=EXPIRY_S, max_open_tasks=MAX_OPEN_TASKS
    ) as url:
        report = asyncio.run(run_probes(url, OPTIONS, token=ALICE, second_token=BOB))
    assert report.interfaces
    if version is not None:
        assert {interface.protocol_version for interface in report.interfaces} == {version}
    if binding is not None:
        assert {interface.binding for interface in report.interfaces} == {binding}
    assert report.stopped is None
    assert [result.check_id for result in report.results] == [definition.id for definition in catalogue()]
    assert not report.errored(), [(result.check_id, result.reason) for result in report.errored()]
    assert not report.findings, report.findings
    for result in report.results:
        assert result.status in {"passed", "skipped"}, result
        if result.status == "skipped":
            assert result.reason, result
