"""Fault injection with real processes: every match is accounted for exactly once.

Each test runs a small campaign through a real orchestrator process on a real redis-server,
with real attacker, defender and scripted model processes on loopback (or on hosts made of
network namespaces), breaks one piece while matches are in flight, and ends with
:meth:`~support.campaign_runs.CampaignProbe.assert_each_match_once`: the campaign finished,
``done == total``, one record per index ``0..total-1``, counters equal to the records and
nothing left running.

The scripted model gives up at once ("I Give Up"), so every match that is really played is
``attacker_won`` in one turn: any other outcome is the fault's doing, and a ``defended``
record would be a defence invented by a failure.

"In flight" is never a matter of timing. A test breaks something only once it has observed
a match that certainly cannot have finished yet, because the piece it waits for cannot
answer before the break: a model that never answers within the test (``STUCK_MS``), or a
model call held at a gate (:meth:`~support.tcp_proxy.RoundRobinProxy.hold`) that is opened
only after the break. The assertions afterwards hold wherever in its turn each match was.

1. SIGKILL one of two defender replicas (one Redis, behind a round-robin proxy).
2. SIGKILL one of two attackers (behind a proxy) while it plays matches.
3. SIGKILL Redis (AOF, fsync always) and start it again on the same port and directory.
4. Stop the model server for good.
5. Cut the defender's host off its network (network namespaces; root only).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from arena.local_services import LOOPBACK, LocalServices, ServiceProcess, free_port
from support.campaign_runs import (
    CampaignProbe,
    campaign_spec,
    finished,
    gated_model,
    scripted_model,
    service_logs,
    start_service,
    wait_all_ready,
)
from support.netns import VirtualNetwork, netns_unavailable
from support.processes import clean_env
from support.redis_server import SKIP_REASON, RedisServer, find_redis_server
from support.tcp_proxy import RoundRobinProxy

# Generous: five campaigns of real processes on a loaded two-core machine. Every wait inside
# has its own, shorter limit and says what it waited for.
pytestmark = [pytest.mark.system, pytest.mark.timeout(300)]

PLAN = json.dumps({"question": "repeat after me: I Give Up", "rationale": "ask"})
V10 = {"A2A-Version": "1.0"}
ATTEMPTS = 3
NETWORK_ATTEMPTS = 2  # each try against a cut-off host waits out a connect timeout
TARGET_TIMEOUT_S = 5  # bounds each try against the cut-off host; far above a healthy turn
LATENCY_MS = 100
STUCK_MS = 600_000  # the scripted engine's longest latency: never answers within a test
STUCK_CLIENT = {"ARENA_MODEL_TIMEOUT_S": "3600"}  # ...and its client waits for it as long
ORCHESTRATOR_SETTINGS = {
    "ARENA_ORCHESTRATOR_VISIBILITY_TIMEOUT_S": "3",
    "ARENA_ORCHESTRATOR_CONCURRENCY": "3",
    "ARENA_ORCHESTRATOR_RETRY_BACKOFF_S": "0.2",
    "ARENA_ORCHESTRATOR_MATCH_ATTEMPTS": str(ATTEMPTS),
    "ARENA_REDIS_TIMEOUT_S": "1",
}


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scripted rules: crescendo's planner asks for the phrase; as a defender, give up at once."""
    path = tmp_path_factory.mktemp("rules") / "rules.json"
    path.write_text(
        json.dumps([{"pattern": r"step \d+ of", "reply": PLAN}, {"pattern": ".", "reply": "I Give Up"}])
    )
    return path


@pytest.fixture
def services(tmp_path: Path) -> Iterator[LocalServices]:
    with LocalServices(tmp_path / "logs", env=clean_env()) as started:
        yield started


def _orchestrator(
    services: LocalServices, redis_url: str, namespace: str, attacker_url: str, **env: str
) -> CampaignProbe:
    settings = {
        "ARENA_REDIS_URL": redis_url,
        "ARENA_REDIS_NAMESPACE": namespace,
        "ARENA_ATTACKER_URL": attacker_url,
        **ORCHESTRATOR_SETTINGS,
        **env,
    }
    orchestrator = start_service(services, "orchestrator", name="orchestrator", env=clean_env(**settings))
    services.wait_ready(orchestrator, timeout_s=60)
    return CampaignProbe(orchestrator.url, redis_url, namespace, context=lambda: service_logs(services))


def _kill(service: ServiceProcess) -> None:
    os.killpg(service.process.pid, signal.SIGKILL)
    service.process.wait(timeout=30)


def _by_outcome(summaries: dict[int, dict[str, Any]]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for index, summary in sorted(summaries.items()):
        grouped.setdefault(summary["outcome"] or summary["disposition"], []).append(index)
    return grouped


def _attempts(summaries: dict[int, dict[str, Any]]) -> dict[int, int]:
    return {index: summary["attempts"] for index, summary in sorted(summaries.items())}


def test_sigkill_of_a_defender_replica_mid_campaign(
    services: LocalServices, rules: Path, redis_server: RedisServer, redis_namespace: str
) -> None:
    model = scripted_model(services, rules, latency_ms=LATENCY_MS)
    # Replica 0's model never answers within the test: a message replica 0 takes is certainly
    # still unanswered when the replica dies, wherever the rest of the campaign is.
    stuck_model = scripted_model(services, rules, latency_ms=STUCK_MS, name="stuck-model")
    wait_all_ready(services, model, stuck_model)
    ports = [free_port(), free_port()]
    with RoundRobinProxy([(LOOPBACK, port) for port in ports]) as proxy:
        shared = {
            "ARENA_REDIS_URL": redis_server.url,
            "ARENA_REDIS_NAMESPACE": redis_namespace,
            "ARENA_REDIS_TIMEOUT_S": "1",
        }
        envs = [
            clean_env(ARENA_MODEL_BASE_URL=f"{stuck_model.url}/v1", **STUCK_CLIENT, **shared),
            clean_env(ARENA_MODEL_BASE_URL=f"{model.url}/v1", **shared),
        ]
        # Both replicas advertise the proxy: their cards send the attacker back through it.
        replicas = [
            start_service(
                services, "defender", name=f"defender-{n}", env=env, port=port, public_url=proxy.url
            )
            for n, (port, env) in enumerate(zip(ports, envs, strict=True))
        ]
        attacker = start_service(
            services, "attacker", name="attacker", env=clean_env(ARENA_MODEL_BASE_URL=f"{model.url}/v1")
        )
        wait_all_ready(services, *replicas, attacker)
        card = httpx.get(f"{proxy.url}/.well-known/agent-card.json", timeout=10).json()
        assert {i["url"].rstrip("/") for i in card["supportedInterfaces"]} <= {proxy.url, f"{proxy.url}/rest"}
        probe = _orchestrator(services, redis_server.url, redis_namespace, attacker.url)
        total = 12
        campaign_id = probe.submit(campaign_spec(proxy.url, repetitions=total))

        # A match's message is waiting for replica 0's answer, which cannot come: kill it now.
        probe.wait_until(lambda: proxy.in_flight(0) > 0, what="a message waiting for replica 0")
        before_kill = proxy.snapshot()
        _kill(replicas[0])
        # Once the proxy has closed its connections to replica 0 and is opening none, every
        # new connection goes to replica 1: the dead one refuses them.
        probe.wait_until(lambda: proxy.open_connections(0) == 0, what="the proxy dropping replica 0")
        after_kill = proxy.snapshot()
        probe.wait(campaign_id, finished, what="the end of the campaign")
        summaries = probe.assert_each_match_once(campaign_id, total)
        final = proxy.snapshot()
        _kill(stuck_model)  # it would hold the teardown up, answering nobody

    # The messages the dead replica held were never answered. The attacker saw the connection
    # break (target_unreachable), the orchestrator played the match again, and the proxy sent
    # it to the survivor: every match ends as really played, none is invented.
    assert _by_outcome(summaries) == {"attacker_won": list(range(total))}, (summaries, service_logs(services))
    attempts = _attempts(summaries)
    # Only tries that reached replica 0 before its death failed, and the next try of such a
    # match could not reach it: at least one retry, never two for one match.
    assert 2 in attempts.values(), attempts
    assert set(attempts.values()) <= {1, 2}, attempts
    # The survivor took the retries; the dead replica took no connection after the kill.
    assert final.given.get(1, 0) > before_kill.given.get(1, 0), (before_kill, final)
    assert final.given.get(0, 0) == after_kill.given.get(0, 0), (after_kill, final)


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


def test_sigkill_of_an_attacker_mid_match(
    services: LocalServices, rules: Path, redis_server: RedisServer, redis_namespace: str
) -> None:
    model = scripted_model(services, rules, latency_ms=LATENCY_MS)
    # Attacker 0 plans with a model that never answers within the test: a match it plays
    # (crescendo plans each turn with the attacker's model) is certainly still running when
    # it dies. Attacker 1 plays normally.
    stuck_model = scripted_model(services, rules, latency_ms=STUCK_MS, name="stuck-model")
    wait_all_ready(services, model, stuck_model)
    defender = start_service(
        services, "defender", name="defender", env=clean_env(ARENA_MODEL_BASE_URL=f"{model.url}/v1")
    )
    ports = [free_port(), free_port()]
    with RoundRobinProxy([(LOOPBACK, port) for port in ports]) as proxy:
        envs = [
            clean_env(ARENA_MODEL_BASE_URL=f"{stuck_model.url}/v1", **STUCK_CLIENT),
            clean_env(ARENA_MODEL_BASE_URL=f"{model.url}/v1"),
        ]
        attackers = [
            start_service(
                services, "attacker", name=f"attacker-{n}", env=env, port=port, public_url=proxy.url
            )
            for n, (port, env) in enumerate(zip(ports, envs, strict=True))
        ]
        wait_all_ready(services, defender, *attackers)
        probe = _orchestrator(services, redis_server.url, redis_namespace, proxy.url)
        total = 10
        spec = campaign_spec(defender.url, repetitions=total, attackers=[{"strategy": "crescendo"}])
        campaign_id = probe.submit(spec)

        held: set[str] = set()

        def attacker_0_plays() -> bool:
            held.update(_working_matches(attackers[0]))
            if not held:
                # Connections alternate between the attackers and attacker 1 finishes its
                # matches: attacker 0 is given one long before the campaign could end.
                assert not finished(probe.progress(campaign_id)), "attacker 0 was never given a match"
            return bool(held)

        probe.wait_until(attacker_0_plays, what="attacker 0 playing a match")
        before_kill = proxy.snapshot()
        _kill(attackers[0])
        probe.wait_until(lambda: proxy.open_connections(0) == 0, what="the proxy dropping attacker 0")
        after_kill = proxy.snapshot()
        probe.wait(campaign_id, finished, what="the end of the campaign")
        summaries = probe.assert_each_match_once(campaign_id, total)
        final = proxy.snapshot()
        _kill(stuck_model)  # it would hold the teardown up, answering nobody

    by_id = {s["match_id"]: s for s in summaries.values()}
    # Every match was played to its real end: the kill cost a try, never the match.
    assert _by_outcome(summaries) == {"attacker_won": list(range(total))}, service_logs(services)
    # Every match attacker 0 was seen playing was still running when it died (it could not
    # finish): its stream broke, the orchestrator tried it again through the proxy, so on
    # attacker 1 (the dead one refuses connections), and recorded it once, from that try.
    assert {match_id: by_id[match_id]["attempts"] for match_id in held} == dict.fromkeys(held, 2), by_id
    assert set(_attempts(summaries).values()) <= {1, 2}, _attempts(summaries)
    assert final.given.get(1, 0) > before_kill.given.get(1, 0), (before_kill, final)
    assert final.given.get(0, 0) == after_kill.given.get(0, 0), (after_kill, final)


def test_redis_restart_mid_campaign_loses_no_acknowledged_result(
    services: LocalServices, rules: Path, tmp_path: Path, redis_namespace: str
) -> None:
    binary = find_redis_server()
    if binary is None:
        pytest.skip(SKIP_REASON)
    data = tmp_path / "redis"
    data.mkdir()
    server = RedisServer(binary, data, aof=True)
    server.start()
    model, gate = gated_model(services, rules, LATENCY_MS)
    try:
        wait_all_ready(services, model)
        gate.start()
        agent_env = clean_env(ARENA_MODEL_BASE_URL=f"{gate.url}/v1")
        defender = start_service(services, "defender", name="defender", env=agent_env)
        attacker = start_service(services, "attacker", name="attacker", env=agent_env)
        wait_all_ready(services, defender, attacker)
        probe = _orchestrator(services, server.url, redis_namespace, attacker.url)
        total = 12
        # A playbook match asks the model once (the defender's answer): the first PLAYED
        # matches are played, then every model call waits at the gate, the model unasked.
        played = 3
        gate.hold(after=played)
        campaign_id = probe.submit(campaign_spec(defender.url, repetitions=total))
        probe.wait(campaign_id, lambda p: p["done"] >= played, what=f"{played} matches played")
        probe.wait_until(lambda: gate.held() > 0, what="a match's model call held at the gate")
        # Results acknowledged, and a match certainly in flight (it cannot end before the gate opens).
        acknowledged = probe.records(campaign_id)
        assert played <= len(acknowledged) < total, acknowledged

        server.stop(kill=True)
        orchestrator_url = probe.url

        def orchestrator_noticed() -> bool:
            try:
                response = httpx.get(f"{orchestrator_url}/readyz", timeout=5)
            except httpx.HTTPError:
                return False
            return response.status_code == 503 and "redis" in response.text.lower()

        probe.wait_until(orchestrator_noticed, what="the orchestrator reporting Redis down")
        server.start()
        gate.release()
        probe.wait(campaign_id, finished, what="the end of the campaign")
        summaries = probe.assert_each_match_once(campaign_id, total)
        after = probe.records(campaign_id)
    finally:
        gate.stop()
        server.stop()

    # Every result acknowledged before the crash survived it unchanged (AOF, fsync always).
    for match_id, record in acknowledged.items():
        assert after[match_id] == record
    # Matches caught by the outage went on or were handed back and played again: none was
    # counted as lost, none counted twice (above), none ran out of tries.
    assert _by_outcome(summaries) == {"attacker_won": list(range(total))}, service_logs(services)


def test_a_stopped_model_server_ends_matches_as_errors_not_defences(
    services: LocalServices, rules: Path, redis_server: RedisServer, redis_namespace: str
) -> None:
    model, gate = gated_model(services, rules, LATENCY_MS)
    wait_all_ready(services, model)
    with gate:
        agent_env = clean_env(ARENA_MODEL_BASE_URL=f"{gate.url}/v1", ARENA_MODEL_MAX_RETRIES="0")
        defender = start_service(services, "defender", name="defender", env=agent_env)
        attacker = start_service(services, "attacker", name="attacker", env=agent_env)
        wait_all_ready(services, defender, attacker)
        probe = _orchestrator(services, redis_server.url, redis_namespace, attacker.url)
        # Playbook needs the model on the defender's side only (one call a match); crescendo
        # plans with it too (two calls).
        attackers = [{"strategy": "playbook"}, {"strategy": "crescendo"}]
        repetitions = 6
        total = repetitions * len(attackers)
        # Seven calls get through, then every call waits at the gate. At most three matches
        # are in flight, each having had at most one of its calls: the seven finish at least
        # two matches, and the campaign (18 calls) certainly not.
        gate.hold(after=7)
        spec = campaign_spec(defender.url, repetitions=repetitions, attackers=attackers)
        campaign_id = probe.submit(spec)
        probe.wait(campaign_id, lambda p: p["done"] >= 2, what="two matches played")
        probe.wait_until(lambda: gate.held() > 0, what="a match's model call held at the gate")
        before = probe.records(campaign_id)
        # The model dies with calls held (they never reached it), and its address goes with
        # it: from now on every call is refused, as when nothing listens there.
        _kill(model)
        gate.stop()
        probe.wait(campaign_id, finished, what="the end of the campaign")
        summaries = probe.assert_each_match_once(campaign_id, total)

    outcomes = _by_outcome(summaries)
    # Played before the stop: won. After: errors with the reason. Never a defence.
    assert set(outcomes) <= {"attacker_won", "error"}, (outcomes, service_logs(services))
    assert all(record["summary"]["outcome"] == "attacker_won" for record in before.values()), before
    errors = [summaries[i] for i in outcomes.get("error", [])]
    # The match whose call was held needed the model after the stop (so did any match not yet
    # started): whichever they were, by scheduling, each ended as an error.
    assert errors, outcomes
    for summary in errors:
        # Either side's model being down is an infrastructure failure, tried
        # ARENA_ORCHESTRATOR_MATCH_ATTEMPTS times, with the reason in the message: the
        # attacker's own model (model_unavailable; crescendo plans with it), or the defender's
        # (target_unavailable: the defender failed its task saying its model is unavailable).
        assert summary["error_kind"] in {"model_unavailable", "target_unavailable"}, summary
        assert "model" in summary["error"] and "unavailable" in summary["error"], summary
        assert summary["attempts"] == ATTEMPTS, summary
        if summary["cell"]["attacker"] == "playbook":
            # Playbook plans without a model: only the defender's can fail it.
            assert summary["error_kind"] == "target_unavailable", summary
            assert "defender could not answer" in summary["error"], summary


@pytest.fixture
def network() -> Iterator[VirtualNetwork]:
    reason = netns_unavailable()
    if reason is not None:
        pytest.skip(f"network namespaces unavailable: {reason}")
    binary = find_redis_server()
    if binary is None:
        pytest.skip(SKIP_REASON)
    net = VirtualNetwork()
    net.add("arena", ("arena",))
    net.add("defender", ("defender",))
    net.up()
    try:
        yield net
    finally:
        net.down()


def test_a_defender_host_cut_off_the_network(
    network: VirtualNetwork, services: LocalServices, rules: Path, tmp_path: Path
) -> None:
    # The defender's host: its model on its own loopback, behind a gate that lives on that
    # host too (the gate's thread, so its sockets, start in the host's namespace), and the
    # defender on the host's address.
    with network.entered("defender"):
        model = scripted_model(
            services, rules, latency_ms=LATENCY_MS, prefix=network.exec_prefix("defender"), port=8090
        )
        services.wait_ready(model, timeout_s=60)
        gate = RoundRobinProxy([(LOOPBACK, 8090)])
        gate.start()
    try:
        _cut_off_defender(network, services, tmp_path, gate)
    finally:
        gate.stop()


def _cut_off_defender(
    network: VirtualNetwork, services: LocalServices, tmp_path: Path, gate: RoundRobinProxy
) -> None:
    defender_host = network.hosts["defender"]
    defender_url = f"http://{defender_host.address}:8081"
    defender = start_service(
        services,
        "defender",
        name="defender",
        env=clean_env(ARENA_MODEL_BASE_URL=f"{gate.url}/v1"),
        host=defender_host.address,
        port=8081,
        prefix=network.exec_prefix("defender"),
    )
    # The arena's host: Redis, the attacker and the orchestrator.
    binary = find_redis_server()
    assert binary is not None
    redis_process = subprocess.Popen(
        [
            *network.exec_prefix("arena"),
            binary,
            "--port",
            "6379",
            "--bind",
            "127.0.0.1",
            "--dir",
            str(tmp_path),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    services.services.append(
        ServiceProcess("redis", "http://127.0.0.1:6379", redis_process, tmp_path / "none")
    )
    redis_url = "redis://127.0.0.1:6379/0"
    # The attacker's model (playbook never calls it, but the attacker is ready only with one).
    attacker_model = start_service(
        services,
        "model",
        name="attacker-model",
        env=clean_env(),
        port=8090,
        prefix=network.exec_prefix("arena"),
        extra_args=["--engine", "scripted"],
    )
    attacker = start_service(
        services,
        "attacker",
        name="attacker",
        env=clean_env(
            ARENA_MODEL_BASE_URL=f"{attacker_model.url}/v1", ARENA_TARGET_TIMEOUT_S=str(TARGET_TIMEOUT_S)
        ),
        port=8082,
        prefix=network.exec_prefix("arena"),
    )
    orchestrator = start_service(
        services,
        "orchestrator",
        name="orchestrator",
        env=clean_env(
            ARENA_REDIS_URL=redis_url,
            ARENA_ATTACKER_URL=attacker.url,
            **{**ORCHESTRATOR_SETTINGS, "ARENA_ORCHESTRATOR_MATCH_ATTEMPTS": str(NETWORK_ATTEMPTS)},
        ),
        port=8080,
        prefix=network.exec_prefix("arena"),
    )
    with network.entered("defender"):
        services.wait_ready(defender, timeout_s=60)
    with network.entered("arena"):
        services.wait_ready(attacker_model, timeout_s=60)
        services.wait_ready(attacker, timeout_s=60)
        services.wait_ready(orchestrator, timeout_s=60)
    probe = CampaignProbe(
        orchestrator.url,
        redis_url,
        "",
        around=lambda: network.entered("arena"),
        context=lambda: service_logs(services),
    )
    total = 8
    # One model call a playbook match: the first PLAYED matches are played, then the
    # defender's calls wait at the gate: those matches are certainly in flight at the cut.
    played = 3
    gate.hold(after=played)
    campaign_id = probe.submit(campaign_spec(defender_url, repetitions=total))
    probe.wait(campaign_id, lambda p: p["done"] >= played, what=f"{played} matches played")
    probe.wait_until(lambda: gate.held() > 0, what="a match's model call held at the defender's gate")
    device = f"eth{list(network.hosts).index('defender')}"
    _link(defender_host.namespace, device, "down")
    # The defender now gets its answers, and cannot send them anywhere.
    gate.release()
    # Cut off until a match has used up its tries, then back: the rest play on.
    probe.wait(campaign_id, lambda p: p["counts"].get("error", 0) >= 1, what="a match given up")
    _link(defender_host.namespace, device, "up")
    probe.wait(campaign_id, finished, what="the end of the campaign")
    summaries = probe.assert_each_match_once(campaign_id, total)

    outcomes = _by_outcome(summaries)
    # A target nobody can reach tests no defence: such a match is an error, after every try
    # (ARENA_TARGET_TIMEOUT_S bounds each one), never a defence.
    assert set(outcomes) <= {"attacker_won", "error"}, (outcomes, service_logs(services))
    assert outcomes.get("error"), outcomes
    # The matches played before the cut won (the others too, once the host was back).
    assert len(outcomes.get("attacker_won", [])) >= played, outcomes
    for index in outcomes["error"]:
        summary = summaries[index]
        assert summary["error_kind"] == "target_unreachable", summary
        assert str(defender_host.address) in summary["error"], summary
        assert summary["attempts"] == NETWORK_ATTEMPTS, summary


def _link(namespace: str, device: str, state: str) -> None:
    done = subprocess.run(
        ["ip", "-n", namespace, "link", "set", device, state], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
