"""The arena on a real Redis Cluster: a campaign of real processes, and a failover mid-campaign.

Three masters with a replica each on loopback (``support.redis_cluster``), started for this
module alone since a failover changes the cluster's roles. Orchestrator, attacker and
defender all keep their state in the cluster (``ARENA_REDIS_URL=redis+cluster://...``), the
scripted model gives up at once, so every match really played is ``attacker_won``.

The failover is ``CLUSTER FAILOVER`` on the replica of the master that holds the campaign's
slot, while a match is certainly in flight (its model call held at a gate, as in
test_faults.py): every result acknowledged before it survives unchanged, and the campaign
ends with each match recorded exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

from arena.local_services import LOOPBACK, LocalServices, ServiceProcess
from arena_core.redis_state.keys import RedisKeys
from support.campaign_runs import (
    CampaignProbe,
    campaign_spec,
    finished,
    gated_model,
    service_logs,
    start_service,
    wait_all_ready,
)
from support.processes import clean_env
from support.redis_cluster import CLUSTER_SKIP_REASON, RedisClusterNodes, start_cluster
from support.redis_server import RedisServer
from support.tcp_proxy import RoundRobinProxy

pytestmark = [pytest.mark.system, pytest.mark.timeout(300)]

LATENCY_MS = 50
ORCHESTRATOR_SETTINGS = {
    "ARENA_ORCHESTRATOR_VISIBILITY_TIMEOUT_S": "3",
    "ARENA_ORCHESTRATOR_CONCURRENCY": "3",
    "ARENA_ORCHESTRATOR_RETRY_BACKOFF_S": "0.2",
    "ARENA_ORCHESTRATOR_MATCH_ATTEMPTS": "3",
}


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "rules.json"
    path.write_text(json.dumps([{"pattern": ".", "reply": "I Give Up"}]))
    return path


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisClusterNodes]:
    started = start_cluster(tmp_path / "cluster")
    if started is None:
        pytest.skip(CLUSTER_SKIP_REASON)
    yield started
    started.stop()


@pytest.fixture
def services(tmp_path: Path) -> Iterator[LocalServices]:
    with LocalServices(tmp_path / "logs", env=clean_env()) as started:
        yield started


def _master_of(cluster: RedisClusterNodes, key: str) -> RedisServer:
    """The master serving ``key``'s slot now."""
    slot = key_slot(key.encode())
    with redis.Redis(host=LOOPBACK, port=cluster.nodes[0].port, socket_timeout=5) as client:
        ranges = client.execute_command("CLUSTER", "SLOTS")
    for start, end, master, *_replicas in ranges:
        if int(start) <= slot <= int(end):
            port = int(master[1])
            return next(node for node in cluster.nodes if node.port == port)
    raise AssertionError(f"no master serves slot {slot}")


def _start_arena(
    services: LocalServices, rules: Path, cluster: RedisClusterNodes, namespace: str, gate: RoundRobinProxy
) -> tuple[ServiceProcess, CampaignProbe]:
    shared = {
        "ARENA_REDIS_URL": cluster.url,
        "ARENA_REDIS_NAMESPACE": namespace,
        "ARENA_REDIS_TIMEOUT_S": "2",
    }
    agent_env = clean_env(ARENA_MODEL_BASE_URL=f"{gate.url}/v1", **shared)
    defender = start_service(services, "defender", name="defender", env=agent_env)
    attacker = start_service(services, "attacker", name="attacker", env=agent_env)
    wait_all_ready(services, defender, attacker)
    orchestrator = start_service(
        services,
        "orchestrator",
        name="orchestrator",
        env=clean_env(ARENA_ATTACKER_URL=attacker.url, **shared, **ORCHESTRATOR_SETTINGS),
    )
    services.wait_ready(orchestrator, timeout_s=60)
    probe = CampaignProbe(orchestrator.url, cluster.url, namespace, context=lambda: service_logs(services))
    return defender, probe


def test_a_campaign_survives_a_master_failover_with_each_match_recorded_once(
    services: LocalServices, rules: Path, cluster: RedisClusterNodes, redis_namespace: str
) -> None:
    model, gate = gated_model(services, rules, LATENCY_MS)
    wait_all_ready(services, model)
    gate.start()
    try:
        defender, probe = _start_arena(services, rules, cluster, redis_namespace, gate)
        total = 12
        played = 3
        # A playbook match asks the model once (the defender's answer): the first PLAYED matches
        # are played, then every model call waits at the gate.
        gate.hold(after=played)
        campaign_id = probe.submit(campaign_spec(defender.url, repetitions=total))
        probe.wait(campaign_id, lambda p: p["done"] >= played, what=f"{played} matches played")
        probe.wait_until(lambda: gate.held() > 0, what="a match's model call held at the gate")
        acknowledged = probe.records(campaign_id)
        assert played <= len(acknowledged) < total, acknowledged

        master = _master_of(cluster, RedisKeys(redis_namespace).campaign(campaign_id))
        promoted = cluster.fail_over(master)
        assert _master_of(cluster, RedisKeys(redis_namespace).campaign(campaign_id)).port == promoted.port

        gate.release()
        probe.wait(campaign_id, finished, what="the end of the campaign")
        summaries = probe.assert_each_match_once(campaign_id, total)
        after = probe.records(campaign_id)
    finally:
        gate.stop()

    for match_id, record in acknowledged.items():
        assert after[match_id] == record
    outcomes = {summary["outcome"] for summary in summaries.values()}
    assert outcomes == {"attacker_won"}, (summaries, service_logs(services))
