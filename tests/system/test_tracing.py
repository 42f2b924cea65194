"""One trace per match across every service, exported over real OTLP to a real receiver.

Orchestrator, attacker, defender and model run as separate processes pointed at
an OTLP receiver standing in for the collector/Jaeger: two of them export over
OTLP/HTTP protobuf, two over OTLP/gRPC. The match travels through a real Redis
Stream, so the campaign's trace context crosses the queue too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arena.local_services import LocalServices
from support.campaign_runs import wait_for_campaign
from support.otlp_receiver import OtlpReceiver, ReceivedSpan
from support.processes import clean_env
from support.redis_server import RedisServer

pytestmark = pytest.mark.system

SERVICES = ("arena-orchestrator", "arena-attacker", "arena-defender", "arena-model")


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _otel(receiver: OtlpReceiver, protocol: str) -> dict[str, str]:
    endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
    }


def _complete(received: list[ReceivedSpan], trace_id: str) -> bool:
    trace = [s for s in received if s.trace_id == trace_id]
    names = [s.name for s in trace]
    ids = {s.span_id for s in trace}
    return (
        # Every span's parent is in: the services export in their own batches, so a defender's
        # span can arrive before the attacker's turn it descends from (which once failed the
        # ancestry assertions below in CI).
        all(s.parent_span_id is None or s.parent_span_id in ids for s in trace)
        and {s.service_name for s in trace} >= set(SERVICES)
        and {"arena.match", "invoke_agent arena-attacker", "arena.turn", "invoke_agent arena-defender"}
        <= set(names)
        and any(n.startswith("chat ") for n in names)
        and any(s.service_name == "arena-model" for s in trace)
        and any(s.name == "arena.campaign" for s in received)
    )


def _ancestors(span: ReceivedSpan, by_id: dict[str, ReceivedSpan]) -> list[ReceivedSpan]:
    chain = []
    current = span
    while current.parent_span_id is not None and current.parent_span_id in by_id:
        current = by_id[current.parent_span_id]
        chain.append(current)
    return chain


def test_a_match_is_one_trace_from_the_orchestrator_to_the_model(
    receiver: OtlpReceiver, redis_server: RedisServer, redis_namespace: str, tmp_path: Path
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"pattern": ".", "reply": "Fine. I Give Up"}]))
    with LocalServices(tmp_path / "logs", env=clean_env()) as services:
        model = services.start(
            "model",
            extra_args=["--engine", "scripted", "--scripted-rules", str(rules)],
            env=_otel(receiver, "grpc"),
        )
        services.wait_ready(model, timeout_s=60)
        model_env = {"ARENA_MODEL_BASE_URL": f"{model.url}/v1"}
        defender = services.start("defender", env={**model_env, **_otel(receiver, "grpc")})
        attacker = services.start("attacker", env={**model_env, **_otel(receiver, "http/protobuf")})
        services.wait_ready(defender, timeout_s=60)
        services.wait_ready(attacker, timeout_s=60)
        orchestrator = services.start(
            "orchestrator",
            env={
                "ARENA_REDIS_URL": redis_server.url,
                "ARENA_REDIS_NAMESPACE": redis_namespace,
                "ARENA_ATTACKER_URL": attacker.url,
                "ARENA_JAEGER_URL": "http://jaeger.example:16686",
                **_otel(receiver, "http/protobuf"),
            },
        )
        services.wait_ready(orchestrator, timeout_s=60)
        spec = {
            "name": "traced",
            "attackers": [{"strategy": "playbook"}],
            "defenders": [{"name": "target", "url": defender.url}],
            "max_turns": 2,
        }
        created = httpx.post(f"{orchestrator.url}/v1/campaigns", json=spec, timeout=10).json()
        with httpx.Client(timeout=10) as client:
            wait_for_campaign(client, f"{orchestrator.url}/v1/campaigns/{created['id']}", timeout_s=90)
        matches = httpx.get(f"{orchestrator.url}/v1/campaigns/{created['id']}/matches").json()["matches"]
        [summary] = matches
        record = httpx.get(f"{orchestrator.url}/v1/matches/{summary['match_id']}").json()

        trace_id = record["summary"]["trace_id"]
        assert trace_id and len(trace_id) == 32
        # The attacker reported the same trace: the orchestrator's match span is its root.
        assert record["result"]["trace_id"] == trace_id
        assert record["trace_url"] == f"http://jaeger.example:16686/trace/{trace_id}"
        assert record["result"]["outcome"] == "attacker_won"

        # Each service exports in its own batches: wait until every span the assertions read is in.
        spans = receiver.wait_for_spans(lambda received: _complete(received, trace_id), timeout_s=30)
        # Metrics too, while the services still run (each exports every 500 ms).
        queue_depth = receiver.wait_for_metric("arena.queue.depth", timeout_s=15)
        token_usage = receiver.wait_for_metric("gen_ai.client.token.usage", timeout_s=15)
        matches_metric = receiver.wait_for_metric("arena.matches", timeout_s=15)
    trace = [s for s in spans if s.trace_id == trace_id]
    by_id = {s.span_id: s for s in trace}
    by_name: dict[str, list[ReceivedSpan]] = {}
    for span in trace:
        by_name.setdefault(span.name, []).append(span)

    # The root: the orchestrator's match span, linked to the campaign's span (its own trace).
    [root] = by_name["arena.match"]
    assert root.service_name == "arena-orchestrator" and root.is_root
    assert root.attributes["arena.match.id"] == summary["match_id"]
    assert root.attributes["arena.campaign.id"] == created["id"]
    assert root.attributes["arena.outcome"] == "attacker_won"
    campaign_spans = [s for s in receiver.spans() if s.name == "arena.campaign"]
    assert [(s.trace_id, s.span_id) for s in campaign_spans] == root.links
    assert campaign_spans[0].trace_id != trace_id

    # orchestrator -> attacker: the attacker's match span descends from the match root.
    [attacker_span] = by_name["invoke_agent arena-attacker"]
    assert attacker_span.service_name == "arena-attacker"
    assert root in _ancestors(attacker_span, by_id)
    assert attacker_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attacker_span.attributes["arena.strategy"] == "playbook"
    assert attacker_span.attributes["arena.outcome"] == "attacker_won"

    # attacker -> defender: each defender turn descends from one of the attacker's turns.
    turns = by_name["arena.turn"]
    assert turns and all(attacker_span in _ancestors(t, by_id) for t in turns)
    defender_spans = by_name["invoke_agent arena-defender"]
    assert defender_spans
    for span in defender_spans:
        assert span.service_name == "arena-defender"
        assert any(t in _ancestors(span, by_id) for t in turns)
        assert span.attributes["gen_ai.agent.name"] == "arena-defender"

    # defender -> model: a GenAI chat span, and the model server's own span below it.
    chats = [s for s in trace if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert chats and all(s.service_name == "arena-defender" for s in chats)
    for chat in chats:
        assert any(d in _ancestors(chat, by_id) for d in defender_spans)
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert "gen_ai.input.messages" not in chat.attributes  # content capture is opt-in
    model_spans = [s for s in trace if s.service_name == "arena-model"]
    assert model_spans and all(any(c in _ancestors(m, by_id) for c in chats) for m in model_spans)

    # Both transports were used, and no span of the match sits in another trace.
    assert {s.transport for s in trace} == {"http", "grpc"}
    assert queue_depth.service_name == "arena-orchestrator"
    assert token_usage.service_name == "arena-defender"
    assert matches_metric.service_name == "arena-attacker"
