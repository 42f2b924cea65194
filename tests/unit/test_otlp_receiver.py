"""The test OTLP receiver decodes what the real OpenTelemetry SDK exports, over HTTP and gRPC.

Every exporter here is the real OTLP exporter talking to :class:`support.otlp_receiver.OtlpReceiver`
over loopback sockets; no global provider is set.
"""

from __future__ import annotations

import gzip
import socket
from collections.abc import Iterator
from typing import Literal

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from support.otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.timeout(30)

Transport = Literal["http", "grpc"]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def _span_exporter(receiver: OtlpReceiver, transport: Transport, *, gzip_body: bool = False) -> SpanExporter:
    if transport == "http":
        return HttpSpanExporter(
            endpoint=f"{receiver.http_endpoint}/v1/traces",
            timeout=5,
            compression=Compression.Gzip if gzip_body else Compression.NoCompression,
        )
    return GrpcSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5)


def _metric_exporter(receiver: OtlpReceiver, transport: Transport) -> MetricExporter:
    if transport == "http":
        return HttpMetricExporter(endpoint=f"{receiver.http_endpoint}/v1/metrics", timeout=5)
    return GrpcMetricExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5)


def _export_match_trace(exporter: SpanExporter, service: str, *, batch: bool = False) -> dict[str, str]:
    """A linked span in its own trace, then a parent with a child linking to it; their hex ids."""
    provider = TracerProvider(resource=Resource.create({"service.name": service, "deployment.env": "test"}))
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("arena.tests", "1.0")
    try:
        with tracer.start_as_current_span("enqueue") as enqueued:
            pass
        with (
            tracer.start_as_current_span(
                "match",
                kind=SpanKind.SERVER,
                attributes={
                    "arena.match_id": "m-1",
                    "arena.turns": 3,
                    "arena.score": 0.75,
                    "arena.success": True,
                    "arena.tags": ["pair", "crescendo"],
                },
            ) as parent,
            tracer.start_as_current_span(
                "defender.reply",
                kind=SpanKind.CLIENT,
                links=[Link(enqueued.get_span_context(), {"link.reason": "queued"})],
            ) as child,
        ):
            child.set_attribute("arena.turn", 1)
            child.add_event("refused", {"arena.reason": "policy"})
            child.set_status(Status(StatusCode.ERROR, "refused"))
        assert provider.force_flush(5_000)
    finally:
        provider.shutdown()
    return {
        "trace": f"{parent.get_span_context().trace_id:032x}",
        "parent": f"{parent.get_span_context().span_id:016x}",
        "child": f"{child.get_span_context().span_id:016x}",
        "linked_trace": f"{enqueued.get_span_context().trace_id:032x}",
        "linked_span": f"{enqueued.get_span_context().span_id:016x}",
    }


def _by_name(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {span.name: span for span in spans}


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_spans_from_the_sdk_are_decoded(receiver: OtlpReceiver, transport: Transport) -> None:
    ids = _export_match_trace(_span_exporter(receiver, transport), f"orchestrator-{transport}")

    spans = _by_name(receiver.wait_for_spans(lambda got: len(got) >= 3, timeout_s=5))
    parent, child, enqueued = spans["match"], spans["defender.reply"], spans["enqueue"]

    assert parent.trace_id == child.trace_id == ids["trace"]
    assert len(parent.trace_id) == 32 and len(parent.span_id) == 16
    assert parent.span_id == ids["parent"] and parent.parent_span_id is None and parent.is_root
    assert child.span_id == ids["child"] and child.parent_span_id == ids["parent"]
    assert enqueued.trace_id == ids["linked_trace"] != ids["trace"]

    assert parent.attributes == {
        "arena.match_id": "m-1",
        "arena.turns": 3,
        "arena.score": 0.75,
        "arena.success": True,
        "arena.tags": ["pair", "crescendo"],
    }
    assert child.attributes == {"arena.turn": 1}
    assert child.links == [(ids["linked_trace"], ids["linked_span"])]
    assert parent.kind == trace_pb2.Span.SPAN_KIND_SERVER
    assert child.kind == trace_pb2.Span.SPAN_KIND_CLIENT
    assert child.status_code == trace_pb2.Status.STATUS_CODE_ERROR and child.status_message == "refused"
    assert [(name, attributes) for name, _, attributes in child.events] == [
        ("refused", {"arena.reason": "policy"})
    ]
    assert 0 < parent.start_ns <= child.start_ns <= child.end_ns <= parent.end_ns

    for span in (parent, child, enqueued):
        assert span.service_name == f"orchestrator-{transport}"
        assert span.resource["deployment.env"] == "test"
        assert span.scope_name == "arena.tests"
        assert span.transport == transport

    traces = receiver.traces()
    assert set(traces) == {ids["trace"], ids["linked_trace"]}
    assert {span.name for span in traces[ids["trace"]]} == {"match", "defender.reply"}


def test_two_services_over_both_transports_share_one_store(receiver: OtlpReceiver) -> None:
    _export_match_trace(_span_exporter(receiver, "http"), "attacker", batch=True)
    _export_match_trace(_span_exporter(receiver, "grpc"), "defender", batch=True)

    spans = receiver.wait_for_spans(lambda got: len(got) >= 6, timeout_s=5)

    assert {(span.service_name, span.transport) for span in spans} == {
        ("attacker", "http"),
        ("defender", "grpc"),
    }
    assert receiver.service_names() == ["attacker", "defender"]
    assert len(receiver.traces()) == 4
    assert receiver.wait_for_span(lambda span: span.service_name == "defender").name in {
        "enqueue",
        "match",
        "defender.reply",
    }


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_metrics_from_the_sdk_are_decoded(receiver: OtlpReceiver, transport: Transport) -> None:
    reader = PeriodicExportingMetricReader(
        _metric_exporter(receiver, transport), export_interval_millis=60_000
    )
    provider = MeterProvider(
        resource=Resource.create({"service.name": f"model-{transport}"}), metric_readers=[reader]
    )
    try:
        meter = provider.get_meter("arena.tests")
        turns = meter.create_counter("arena.turns", unit="1", description="turns played")
        latency = meter.create_histogram("arena.model.latency", unit="s")
        turns.add(3, {"arena.role": "attacker"})
        turns.add(2, {"arena.role": "defender"})
        latency.record(0.5)
        latency.record(1.5)
        assert provider.force_flush(5_000)

        counter = receiver.wait_for_metric("arena.turns", timeout_s=5)
        histogram = receiver.wait_for_metric("arena.model.latency", timeout_s=5)
    finally:
        provider.shutdown()

    assert counter.kind == "sum" and counter.is_monotonic is True
    assert counter.service_name == f"model-{transport}" and counter.transport == transport
    assert counter.unit == "1" and counter.description == "turns played"
    values = {point["attributes"]["arena.role"]: point["value"] for point in counter.data_points}
    assert values == {"attacker": 3, "defender": 2}
    assert counter.total == 5

    assert histogram.kind == "histogram" and histogram.service_name == f"model-{transport}"
    [point] = histogram.data_points
    assert point["count"] == 2 and point["sum"] == pytest.approx(2.0)
    assert point["min"] == pytest.approx(0.5) and point["max"] == pytest.approx(1.5)
    assert sum(point["bucket_counts"]) == 2 and point["explicit_bounds"]
    assert {metric.name for metric in receiver.metrics()} >= {"arena.turns", "arena.model.latency"}


def test_jaeger_style_api_returns_the_trace(receiver: OtlpReceiver) -> None:
    ids = _export_match_trace(_span_exporter(receiver, "http"), "orchestrator")
    _export_match_trace(_span_exporter(receiver, "grpc"), "someone-else")
    receiver.wait_for_spans(lambda got: len(got) >= 6, timeout_s=5)

    response = httpx.get(
        f"{receiver.http_endpoint}/api/traces", params={"service": "orchestrator"}, timeout=5
    )
    assert response.status_code == 200
    body = response.json()
    assert body == receiver.jaeger_traces("orchestrator")
    traces = {trace["traceID"]: trace for trace in body["data"]}
    assert set(traces) == {ids["trace"], ids["linked_trace"]}

    trace = traces[ids["trace"]]
    assert trace["processes"]["p1"]["serviceName"] == "orchestrator"
    assert {"key": "deployment.env", "type": "string", "value": "test"} in trace["processes"]["p1"]["tags"]
    spans = {span["operationName"]: span for span in trace["spans"]}
    assert set(spans) == {"match", "defender.reply"}
    parent, child = spans["match"], spans["defender.reply"]
    assert parent["traceID"] == ids["trace"] and parent["spanID"] == ids["parent"]
    assert parent["references"] == []
    assert child["references"] == [
        {"refType": "CHILD_OF", "traceID": ids["trace"], "spanID": ids["parent"]},
        {"refType": "FOLLOWS_FROM", "traceID": ids["linked_trace"], "spanID": ids["linked_span"]},
    ]
    assert parent["processID"] == child["processID"] == "p1"
    assert isinstance(parent["startTime"], int) and parent["startTime"] <= child["startTime"]
    assert parent["duration"] >= child["duration"] >= 0
    tags = {tag["key"]: (tag["type"], tag["value"]) for tag in parent["tags"]}
    assert tags["arena.match_id"] == ("string", "m-1")
    assert tags["arena.turns"] == ("int64", 3)
    assert tags["arena.score"] == ("float64", 0.75)
    assert tags["arena.success"] == ("bool", True)
    assert tags["span.kind"] == ("string", "server")
    child_tags = {tag["key"]: tag["value"] for tag in child["tags"]}
    assert child_tags["otel.status_code"] == "ERROR" and child_tags["error"] is True

    single = httpx.get(f"{receiver.http_endpoint}/api/traces/{ids['trace']}", timeout=5)
    assert single.status_code == 200 and single.json()["data"][0]["traceID"] == ids["trace"]
    missing = httpx.get(f"{receiver.http_endpoint}/api/traces/{'0' * 32}", timeout=5)
    assert missing.status_code == 404
    services = httpx.get(f"{receiver.http_endpoint}/api/services", timeout=5).json()
    assert services["data"] == ["orchestrator", "someone-else"]
    nobody = httpx.get(f"{receiver.http_endpoint}/api/traces", params={"service": "nobody"}, timeout=5)
    assert nobody.json()["data"] == []


def _raw_trace_request(service: str) -> bytes:
    span = trace_pb2.Span(
        trace_id=bytes(range(16)),
        span_id=bytes(range(8)),
        name="raw",
        kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=1_000,
        end_time_unix_nano=2_000,
        attributes=[
            common_pb2.KeyValue(key="blob", value=common_pb2.AnyValue(bytes_value=b"\x00\x01")),
            common_pb2.KeyValue(
                key="nested",
                value=common_pb2.AnyValue(
                    kvlist_value=common_pb2.KeyValueList(
                        values=[common_pb2.KeyValue(key="a", value=common_pb2.AnyValue(int_value=1))]
                    )
                ),
            ),
        ],
    )
    request = trace_service_pb2.ExportTraceServiceRequest(
        resource_spans=[
            trace_pb2.ResourceSpans(
                resource=resource_pb2.Resource(
                    attributes=[
                        common_pb2.KeyValue(
                            key="service.name", value=common_pb2.AnyValue(string_value=service)
                        )
                    ]
                ),
                scope_spans=[trace_pb2.ScopeSpans(spans=[span])],
            )
        ]
    )
    return bytes(request.SerializeToString())


def test_gzip_bodies_are_accepted(receiver: OtlpReceiver) -> None:
    ids = _export_match_trace(_span_exporter(receiver, "http", gzip_body=True), "gzipped")
    assert receiver.wait_for_span(lambda span: span.name == "match", timeout_s=5).trace_id == ids["trace"]

    response = httpx.post(
        f"{receiver.http_endpoint}/v1/traces",
        content=gzip.compress(_raw_trace_request("raw-gzip")),
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
        timeout=5,
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-protobuf"
    decoded = trace_service_pb2.ExportTraceServiceResponse()
    decoded.ParseFromString(response.content)
    assert not decoded.HasField("partial_success")

    raw = receiver.wait_for_span(lambda span: span.name == "raw", timeout_s=5)
    assert raw.service_name == "raw-gzip"
    assert raw.trace_id == bytes(range(16)).hex() and raw.span_id == bytes(range(8)).hex()
    assert raw.attributes == {"blob": b"\x00\x01", "nested": {"a": 1}}
    assert (raw.start_ns, raw.end_ns, raw.duration_ns) == (1_000, 2_000, 1_000)


def test_metrics_endpoint_answers_a_metrics_response(receiver: OtlpReceiver) -> None:
    response = httpx.post(
        f"{receiver.http_endpoint}/v1/metrics",
        content=metrics_service_pb2.ExportMetricsServiceRequest().SerializeToString(),
        headers={"Content-Type": "application/x-protobuf"},
        timeout=5,
    )
    assert response.status_code == 200
    metrics_service_pb2.ExportMetricsServiceResponse().ParseFromString(response.content)
    logs = httpx.post(
        f"{receiver.http_endpoint}/v1/logs",
        content=b"",
        headers={"Content-Type": "application/x-protobuf"},
        timeout=5,
    )
    assert logs.status_code == 200
    assert receiver.metrics() == [] and receiver.spans() == []


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", None])
def test_other_content_types_are_refused_with_415(receiver: OtlpReceiver, content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = httpx.post(
        f"{receiver.http_endpoint}/v1/traces", content=_raw_trace_request("x"), headers=headers, timeout=5
    )
    assert response.status_code == 415
    assert receiver.spans() == []


def test_unknown_paths_and_bad_bodies(receiver: OtlpReceiver) -> None:
    headers = {"Content-Type": "application/x-protobuf"}
    assert httpx.post(f"{receiver.http_endpoint}/v1/nothing", content=b"", headers=headers).status_code == 404
    assert httpx.get(f"{receiver.http_endpoint}/v1/traces").status_code == 404
    bad_gzip = {**headers, "Content-Encoding": "gzip"}
    assert (
        httpx.post(f"{receiver.http_endpoint}/v1/traces", content=b"nope", headers=bad_gzip).status_code
        == 400
    )
    assert (
        httpx.post(f"{receiver.http_endpoint}/v1/traces", content=b"\xff", headers=headers).status_code == 400
    )


def test_waits_time_out_and_clear_forgets(receiver: OtlpReceiver) -> None:
    with pytest.raises(TimeoutError, match="have: none"):
        receiver.wait_for_spans(lambda got: bool(got), timeout_s=0.2)
    with pytest.raises(TimeoutError, match=r"arena\.absent"):
        receiver.wait_for_metric("arena.absent", timeout_s=0.2)

    httpx.post(
        f"{receiver.http_endpoint}/v1/traces",
        content=_raw_trace_request("cleared"),
        headers={"Content-Type": "application/x-protobuf"},
        timeout=5,
    )
    assert [span.service_name for span in receiver.spans()] == ["cleared"]
    receiver.clear()
    assert receiver.spans() == [] and receiver.traces() == {} and receiver.jaeger_traces()["data"] == []


def _port(endpoint: str) -> int:
    return int(endpoint.rsplit(":", 1)[1])


def test_stop_frees_both_ports() -> None:
    receiver = OtlpReceiver().start()
    ports = [_port(receiver.http_endpoint), _port(receiver.grpc_endpoint)]
    assert ports[0] != ports[1]
    receiver.stop()
    receiver.stop()  # idempotent
    assert not receiver.running
    with pytest.raises(RuntimeError, match="not started"):
        _ = receiver.http_endpoint
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", port))
