"""Graceful shutdown with real processes: SIGTERM loses no match, counts none twice, fails none.

Real orchestrator, attacker, defender and scripted model processes on loopback and a real
redis-server, like tests/system/test_faults.py. The scripted model gives up at once ("I Give
Up"), so a match that is really played is ``attacker_won`` in one turn; its latency makes each
match last seconds, longer than a short grace. A test signals a process only after observing
work in flight (a match in the campaign's ``running`` hash under that orchestrator's name, a
``working`` task on that attacker).

1. An orchestrator with a 1 s grace, SIGTERMed with matches in flight, exits 0 within seconds
   and hands those matches back; a second orchestrator plays them at once (the visibility
   timeout is 10 minutes, so nothing here is a reclaim) and their cut-short try is not charged.
2. With a long grace, the matches in flight finish and are recorded by the stopping process
   itself; meanwhile /readyz answers 503 "shutting down" and the API still answers. Matches it
   had not started go to the next orchestrator.
3. An attacker with a 1 s grace, SIGTERMed mid-match, exits 0; the match it was playing is cut,
   tried again (on the other attacker) and recorded once.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.local_services import LOOPBACK, LocalServices, ServiceProcess, free_port
from support.campaign_runs import CampaignProbe, campaign_spec, finished, start_service
from support.processes import clean_env
from support.redis_server import RedisServer
from support.tcp_proxy import RoundRobinProxy

pytestmark = [pytest.mark.system, pytest.mark.timeout(240)]

V10 = {"A2A-Version": "1.0"}
ATTEMPTS = 3
SHORT_GRACE_S = 1.0
EXIT_SLACK_S = 10.0
"""A stopped process must be gone within its grace plus this (handing back, cancelling, exiting)."""
ORCHESTRATOR_SETTINGS = {
    # Ten minutes: a match another orchestrator plays during a test was handed back, not reclaimed.
    "ARENA_ORCHESTRATOR_VISIBILITY_TIMEOUT_S": "600",
    "ARENA_ORCHESTRATOR_RETRY_BACKOFF_S": "0.2",
    "ARENA_ORCHESTRATOR_MATCH_ATTEMPTS": str(ATTEMPTS),
    "ARENA_REDIS_TIMEOUT_S": "2",
}


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scripted rules: as a defender, give up at once."""
    path = tmp_path_factory.mktemp("rules") / "rules.json"
    path.write_text(json.dumps([{"pattern": ".", "reply": "I Give Up"}]))
    return path


@pytest.fixture
def services(tmp_path: Path) -> Iterator[LocalServices]:
    with LocalServices(tmp_path / "logs", env=clean_env()) as started:
        yield started


def _agents(services: LocalServices, rules: Path, latency_ms: int) -> tuple[ServiceProcess, ServiceProcess]:
    """The scripted model (answering after ``latency_ms``), a defender using it, and an attacker."""
    args = ["--engine", "scripted", "--scripted-rules", str(rules), "--latency-ms", str(latency_ms)]
    model = start_service(services, "model", name="model", env=clean_env(), extra_args=args)
    services.wait_ready(model, timeout_s=60)
    agent_env = clean_env(ARENA_MODEL_BASE_URL=f"{model.url}/v1")
    defender = start_service(services, "defender", name="defender", env=agent_env)
    attacker = start_service(services, "attacker", name="attacker", env=agent_env)
    for service in (defender, attacker):
        services.wait_ready(service, timeout_s=60)
    return defender, attacker


def _orchestrator(
    services: LocalServices,
    name: str,
    redis_server: RedisServer,
    namespace: str,
    attacker_url: str,
    **env: str,
) -> tuple[ServiceProcess, CampaignProbe]:
    settings = {
        "ARENA_REDIS_URL": redis_server.url,
        "ARENA_REDIS_NAMESPACE": namespace,
        "ARENA_ATTACKER_URL": attacker_url,
        **ORCHESTRATOR_SETTINGS,
        **env,
    }
    orchestrator = start_service(services, "orchestrator", name=name, env=clean_env(**settings))
    services.wait_ready(orchestrator, timeout_s=60)
    return orchestrator, CampaignProbe(orchestrator.url, redis_server.url, namespace)


def _worker_of(service: ServiceProcess) -> re.Pattern[str]:
    """The orchestrator's worker names in the consumer group and in records: host-<pid>-suffix."""
    return re.compile(rf"-{service.process.pid}-[0-9a-f]+$")


def _playing(probe: CampaignProbe, campaign_id: str, service: ServiceProcess) -> set[str]:
    """Match ids ``service`` (an orchestrator) is playing now."""
    mine = _worker_of(service)
    return {
        match_id
        for match_id, info in probe.running(campaign_id).items()
        if mine.search(str(info.get("worker", "")))
    }


def _terminate(service: ServiceProcess, *, within_s: float) -> float:
    """SIGTERM ``service``; assert it exits 0 within ``within_s``; return how long it took."""
    started = time.monotonic()
    os.kill(service.process.pid, signal.SIGTERM)
    code = service.process.wait(timeout=within_s + 30)  # a hang fails below with the log, not here
    took = time.monotonic() - started
    assert code == 0, f"{service.name} exited with {code}:\n{service.log_tail(40)}"
    assert took <= within_s, f"{service.name} took {took:.1f} s to stop:\n{service.log_tail(40)}"
    return took


def _logs(services: LocalServices) -> str:
    return "\n".join(f"--- {s.name}\n{s.log_tail(40)}" for s in services.services)


def _attempts_and_outcomes(summaries: dict[int, dict[str, Any]]) -> set[tuple[str | None, int]]:
    return {(s["outcome"], s["attempts"]) for s in summaries.values()}


def test_sigterm_hands_matches_in_flight_to_another_orchestrator(
    services: LocalServices, rules: Path, redis_server: RedisServer, redis_namespace: str
) -> None:
    defender, attacker = _agents(services, rules, latency_ms=4000)
    short = {"ARENA_SHUTDOWN_GRACE_S": str(SHORT_GRACE_S), "ARENA_ORCHESTRATOR_CONCURRENCY": "2"}
    stopping, probe = _orchestrator(
        services, "orchestrator-a", redis_server, redis_namespace, attacker.url, **short
    )
    survivor, survivor_probe = _orchestrator(
        services, "orchestrator-b", redis_server, redis_namespace, attacker.url, **short
    )
    total = 8
    campaign_id = probe.submit(campaign_spec(defender.url, repetitions=total, concurrency=4))

    held: set[str] = set()

    def a_plays() -> bool:
        held.update(_playing(probe, campaign_id, stopping))
        return bool(held)

    probe.wait_until(a_plays, what="orchestrator A playing a match")
    # Each match takes ~4 s: what A plays now is still in flight when its 1 s grace ends.
    _terminate(stopping, within_s=SHORT_GRACE_S + EXIT_SLACK_S)
    log = stopping.log_path.read_text()
    assert re.search(r"handed [1-9]\d* match\(es\) back to the queue", log), log

    survivor_probe.wait(campaign_id, finished, what="the end of the campaign", timeout_s=120)
    summaries = survivor_probe.assert_each_match_once(campaign_id, total)
    # Nothing failed and nothing was charged: every match won at its first counted try.
    assert _attempts_and_outcomes(summaries) == {("attacker_won", 1)}, (summaries, _logs(services))
    records = survivor_probe.records(campaign_id)
    for match_id in held:
        worker = records[match_id]["worker"]
        assert not _worker_of(stopping).search(worker), (match_id, worker)
        assert _worker_of(survivor).search(worker), (match_id, worker)


def test_sigterm_with_enough_grace_finishes_matches_in_flight_first(
    services: LocalServices, rules: Path, redis_server: RedisServer, redis_namespace: str
) -> None:
    defender, attacker = _agents(services, rules, latency_ms=2500)
    grace_s = 60.0
    settings = {"ARENA_SHUTDOWN_GRACE_S": str(grace_s), "ARENA_ORCHESTRATOR_CONCURRENCY": "2"}
    stopping, probe = _orchestrator(
        services, "orchestrator-a", redis_server, redis_namespace, attacker.url, **settings
    )
    total = 6
    campaign_id = probe.submit(campaign_spec(defender.url, repetitions=total, concurrency=2))

    held: set[str] = set()

    def a_plays_two() -> bool:
        held.update(_playing(probe, campaign_id, stopping))
        return len(held) >= 2

    probe.wait_until(a_plays_two, what="orchestrator A playing two matches")
    started = time.monotonic()
    os.kill(stopping.process.pid, signal.SIGTERM)

    # Not ready at once, while the API keeps answering during the drain.
    def not_ready() -> bool:
        try:
            response = httpx.get(f"{stopping.url}/readyz", timeout=5)
        except httpx.HTTPError:
            return False
        return response.status_code == 503 and response.text == "shutting down"

    probe.wait_until(not_ready, timeout_s=10, what="/readyz answering 503 'shutting down'")
    assert httpx.get(f"{stopping.url}/healthz", timeout=5).status_code == 200
    assert probe.progress(campaign_id)["total"] == total

    code = stopping.process.wait(timeout=grace_s + EXIT_SLACK_S)
    took = time.monotonic() - started
    assert code == 0, stopping.log_tail(40)
    # It left when its matches were done, not when the grace ran out.
    assert took < grace_s / 2, f"took {took:.1f} s:\n{stopping.log_tail(40)}"

    records = probe.records(campaign_id)
    for match_id in held:
        assert match_id in records, f"{match_id}, in flight at SIGTERM, was not recorded before exit"
        summary = records[match_id]["summary"]
        assert _worker_of(stopping).search(records[match_id]["worker"]), records[match_id]["worker"]
        assert (summary["outcome"], summary["attempts"]) == ("attacker_won", 1), summary
    assert len(records) < total, "every match was played before exit: nothing left to hand over"

    _, next_probe = _orchestrator(services, "orchestrator-b", redis_server, redis_namespace, attacker.url)
    next_probe.wait(campaign_id, finished, what="the end of the campaign", timeout_s=120)
    summaries = next_probe.assert_each_match_once(campaign_id, total)
    assert _attempts_and_outcomes(summaries) == {("attacker_won", 1)}, (summaries, _logs(services))


def _working_matches(attacker: ServiceProcess) -> set[str]:
    """Match ids of the attacker's tasks in ``working`` state (its own memory)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "ListTasks",
        "params": {"status": "TASK_STATE_WORKING", "historyLength": 1},
    }
    try:
        reply = httpx.post(attacker.url, json=body, headers=V10, timeout=5).json()
    except httpx.HTTPError:
        return set()
    found: set[str] = set()
    for task in reply.get("result", {}).get("tasks", []):
        for message in task.get("history", []):
            for part in message.get("parts", []):
                match_id = (part.get("data") or {}).get("match_id")
                if match_id:
                    found.add(match_id)
    return found


def test_sigterm_of_an_attacker_mid_match_is_retried_and_recorded_once(
    services: LocalServices, rules: Path, redis_server: RedisServer, redis_namespace: str
) -> None:
    ports = [free_port(), free_port()]
    with RoundRobinProxy([(LOOPBACK, port) for port in ports]) as proxy:
        model_args = ["--engine", "scripted", "--scripted-rules", str(rules), "--latency-ms", "3000"]
        model = start_service(services, "model", name="model", env=clean_env(), extra_args=model_args)
        services.wait_ready(model, timeout_s=60)
        agent_env = clean_env(ARENA_MODEL_BASE_URL=f"{model.url}/v1")
        defender = start_service(services, "defender", name="defender", env=agent_env)
        attackers = [
            start_service(
                services,
                "attacker",
                name=f"attacker-{n}",
                env={**agent_env, "ARENA_SHUTDOWN_GRACE_S": str(SHORT_GRACE_S)},
                port=port,
                public_url=proxy.url,
            )
            for n, port in enumerate(ports)
        ]
        for service in (defender, *attackers):
            services.wait_ready(service, timeout_s=60)
        orchestrator, probe = _orchestrator(
            services,
            "orchestrator",
            redis_server,
            redis_namespace,
            proxy.url,
            ARENA_ORCHESTRATOR_CONCURRENCY="3",
        )
        total = 6
        campaign_id = probe.submit(campaign_spec(defender.url, repetitions=total, concurrency=3))

        held: set[str] = set()

        def attacker_0_plays() -> bool:
            held.update(_working_matches(attackers[0]))
            return bool(held)

        probe.wait_until(attacker_0_plays, what="attacker 0 playing a match")
        # The defender's turn takes 3 s: the match outlasts the attacker's 1 s grace and is cut.
        _terminate(attackers[0], within_s=SHORT_GRACE_S + EXIT_SLACK_S)
        probe.wait(campaign_id, finished, what="the end of the campaign", timeout_s=120)
        summaries = probe.assert_each_match_once(campaign_id, total)

    by_id = {s["match_id"]: s for s in summaries.values()}
    assert {s["outcome"] for s in summaries.values()} == {"attacker_won"}, _logs(services)
    # The cut match was tried again (the proxy sends new connections to attacker 1 only) and
    # recorded once; the cut try counts, as any infrastructure failure does.
    assert all(by_id[match_id]["attempts"] >= 2 for match_id in held), (held, by_id)
    assert all(s["attempts"] <= ATTEMPTS for s in summaries.values()), summaries
    # The orchestrator saw a retryable infrastructure failure for each cut try.
    failures = re.findall(
        r"match (\S+): (\w+) \(.*\); try \d+ of \d+ failed", orchestrator.log_path.read_text()
    )
    assert {match_id for match_id, _ in failures} >= held, failures
    assert {kind for _, kind in failures} <= {"target_unreachable", "target_protocol_error"}, failures
