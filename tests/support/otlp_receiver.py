"""A real OTLP receiver for tests: OTLP/HTTP and OTLP/gRPC on loopback ports.

No Jaeger or collector binary is needed. :class:`OtlpReceiver` listens on two
free 127.0.0.1 ports in background threads:

* OTLP/HTTP (``http_endpoint``): ``POST /v1/traces``, ``/v1/metrics`` and
  ``/v1/logs`` (accepted and ignored) with ``application/x-protobuf`` bodies,
  optionally ``Content-Encoding: gzip``/``deflate``; any other content type is
  answered 415, any other path 404. The same port serves a read-back API in
  the shape of Jaeger's query service: ``GET /api/traces?service=NAME``,
  ``GET /api/traces/{traceID}`` and ``GET /api/services``.
* OTLP/gRPC (``grpc_endpoint``): the collector ``TraceService``,
  ``MetricsService`` and ``LogsService`` (logs ignored), insecure.

Every exported span becomes a :class:`ReceivedSpan` and every metric a
:class:`ReceivedMetric`; tests query them with :meth:`OtlpReceiver.spans`,
:meth:`OtlpReceiver.traces`, :meth:`OtlpReceiver.wait_for_spans` and friends.

It also runs as a program, in place of Jaeger in a container
(tests/system/test_compose_engine.py): ``python otlp_receiver.py --host 0.0.0.0
--http-port 4318 --grpc-port 4317`` serves until SIGTERM. As a program it needs only
grpcio, protobuf and opentelemetry-proto (every arena image holds them), not the test tree.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import signal
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

import grpc
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

__all__ = ["OtlpReceiver", "ReceivedMetric", "ReceivedSpan", "decode_any_value"]

PROTOBUF_CONTENT_TYPE = "application/x-protobuf"
SPAN_KIND_NAMES: dict[int, str] = {
    trace_pb2.Span.SPAN_KIND_INTERNAL: "internal",
    trace_pb2.Span.SPAN_KIND_SERVER: "server",
    trace_pb2.Span.SPAN_KIND_CLIENT: "client",
    trace_pb2.Span.SPAN_KIND_PRODUCER: "producer",
    trace_pb2.Span.SPAN_KIND_CONSUMER: "consumer",
}
STATUS_CODE_NAMES: dict[int, str] = {
    trace_pb2.Status.STATUS_CODE_OK: "OK",
    trace_pb2.Status.STATUS_CODE_ERROR: "ERROR",
}
_BIND_ATTEMPTS = 5
LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that was free a moment ago (bound right after).

    ``arena.local_services.free_port``'s twin: as a program in an image, the receiver has no CLI.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- decoded records


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as the receiver decoded it.

    ``kind`` is the OTLP ``SpanKind`` number (``opentelemetry.proto.trace.v1.trace_pb2.Span.SPAN_KIND_*``:
    1 internal, 2 server, 3 client, 4 producer, 5 consumer); ``status_code`` the OTLP ``Status.StatusCode``
    number (0 unset, 1 ok, 2 error). ``transport`` is ``"http"`` or ``"grpc"``.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    service_name: str
    attributes: dict[str, Any]
    links: list[tuple[str, str]]
    status_code: int
    start_ns: int
    end_ns: int
    resource: dict[str, Any]
    status_message: str = ""
    scope_name: str = ""
    events: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # (name, time_ns, attributes)
    transport: str = ""

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def is_root(self) -> bool:
        return self.parent_span_id is None


@dataclass(frozen=True)
class ReceivedMetric:
    """One metric from one export.

    ``kind`` is ``"sum"``, ``"gauge"``, ``"histogram"`` (also ``"exponential_histogram"`` or
    ``"summary"``). Each data point is a dict with ``attributes``, ``start_ns``, ``time_ns`` and
    ``value`` (sum, gauge) or ``count``/``sum``/``bucket_counts``/``explicit_bounds``/``min``/``max``
    (histogram). A periodic reader exports every metric again each interval, so the same name
    appears once per export; the newest is last.
    """

    name: str
    service_name: str
    kind: str
    data_points: list[dict[str, Any]]
    unit: str = ""
    description: str = ""
    scope_name: str = ""
    is_monotonic: bool | None = None
    aggregation_temporality: int | None = None
    resource: dict[str, Any] = field(default_factory=dict)
    transport: str = ""

    @property
    def total(self) -> float:
        """The sum of ``value`` (sum, gauge) or ``count`` (histograms) over all data points."""
        key = "value" if self.kind in {"sum", "gauge"} else "count"
        return sum(point.get(key) or 0 for point in self.data_points)


# --------------------------------------------------------------------------- protobuf decoding


def decode_any_value(value: common_pb2.AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value (arrays -> list, kvlists -> dict)."""
    which = value.WhichOneof("value")
    if which == "string_value":
        return value.string_value
    if which == "bool_value":
        return value.bool_value
    if which == "int_value":
        return value.int_value
    if which == "double_value":
        return value.double_value
    if which == "array_value":
        return [decode_any_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _decode_attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return bytes(value.bytes_value)
    return None


def _decode_attributes(pairs: Iterable[common_pb2.KeyValue]) -> dict[str, Any]:
    return {pair.key: decode_any_value(pair.value) for pair in pairs}


def _hex(raw: bytes) -> str:
    return raw.hex()


def _decode_spans(request: trace_service_pb2.ExportTraceServiceRequest, transport: str) -> list[ReceivedSpan]:
    decoded: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _decode_attributes(resource_spans.resource.attributes)
        service_name = str(resource.get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                decoded.append(
                    ReceivedSpan(
                        trace_id=_hex(span.trace_id),
                        span_id=_hex(span.span_id),
                        parent_span_id=_hex(span.parent_span_id) if span.parent_span_id else None,
                        name=span.name,
                        kind=int(span.kind),
                        service_name=service_name,
                        attributes=_decode_attributes(span.attributes),
                        links=[(_hex(link.trace_id), _hex(link.span_id)) for link in span.links],
                        status_code=int(span.status.code),
                        start_ns=int(span.start_time_unix_nano),
                        end_ns=int(span.end_time_unix_nano),
                        resource=dict(resource),
                        status_message=span.status.message,
                        scope_name=scope_spans.scope.name,
                        events=[
                            (event.name, int(event.time_unix_nano), _decode_attributes(event.attributes))
                            for event in span.events
                        ],
                        transport=transport,
                    )
                )
    return decoded


def _number_point(point: metrics_pb2.NumberDataPoint) -> dict[str, Any]:
    which = point.WhichOneof("value")
    value: float | int | None = None
    if which == "as_int":
        value = point.as_int
    elif which == "as_double":
        value = point.as_double
    return {
        "attributes": _decode_attributes(point.attributes),
        "start_ns": int(point.start_time_unix_nano),
        "time_ns": int(point.time_unix_nano),
        "value": value,
    }


def _histogram_point(point: metrics_pb2.HistogramDataPoint) -> dict[str, Any]:
    return {
        "attributes": _decode_attributes(point.attributes),
        "start_ns": int(point.start_time_unix_nano),
        "time_ns": int(point.time_unix_nano),
        "count": int(point.count),
        "sum": point.sum if point.HasField("sum") else None,
        "bucket_counts": [int(count) for count in point.bucket_counts],
        "explicit_bounds": list(point.explicit_bounds),
        "min": point.min if point.HasField("min") else None,
        "max": point.max if point.HasField("max") else None,
    }


def _exponential_point(point: metrics_pb2.ExponentialHistogramDataPoint) -> dict[str, Any]:
    return {
        "attributes": _decode_attributes(point.attributes),
        "start_ns": int(point.start_time_unix_nano),
        "time_ns": int(point.time_unix_nano),
        "count": int(point.count),
        "sum": point.sum if point.HasField("sum") else None,
        "scale": int(point.scale),
        "zero_count": int(point.zero_count),
        "min": point.min if point.HasField("min") else None,
        "max": point.max if point.HasField("max") else None,
    }


def _summary_point(point: metrics_pb2.SummaryDataPoint) -> dict[str, Any]:
    return {
        "attributes": _decode_attributes(point.attributes),
        "start_ns": int(point.start_time_unix_nano),
        "time_ns": int(point.time_unix_nano),
        "count": int(point.count),
        "sum": point.sum,
        "quantiles": [(q.quantile, q.value) for q in point.quantile_values],
    }


def _decode_metrics(
    request: metrics_service_pb2.ExportMetricsServiceRequest, transport: str
) -> list[ReceivedMetric]:
    decoded: list[ReceivedMetric] = []
    for resource_metrics in request.resource_metrics:
        resource = _decode_attributes(resource_metrics.resource.attributes)
        service_name = str(resource.get("service.name", ""))
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data") or ""
                points: list[dict[str, Any]] = []
                is_monotonic: bool | None = None
                temporality: int | None = None
                if kind == "sum":
                    points = [_number_point(p) for p in metric.sum.data_points]
                    is_monotonic = metric.sum.is_monotonic
                    temporality = int(metric.sum.aggregation_temporality)
                elif kind == "gauge":
                    points = [_number_point(p) for p in metric.gauge.data_points]
                elif kind == "histogram":
                    points = [_histogram_point(p) for p in metric.histogram.data_points]
                    temporality = int(metric.histogram.aggregation_temporality)
                elif kind == "exponential_histogram":
                    points = [_exponential_point(p) for p in metric.exponential_histogram.data_points]
                    temporality = int(metric.exponential_histogram.aggregation_temporality)
                elif kind == "summary":
                    points = [_summary_point(p) for p in metric.summary.data_points]
                decoded.append(
                    ReceivedMetric(
                        name=metric.name,
                        service_name=service_name,
                        kind=kind,
                        data_points=points,
                        unit=metric.unit,
                        description=metric.description,
                        scope_name=scope_metrics.scope.name,
                        is_monotonic=is_monotonic,
                        aggregation_temporality=temporality,
                        resource=dict(resource),
                        transport=transport,
                    )
                )
    return decoded


# --------------------------------------------------------------------------- Jaeger-shaped rendering


def _jaeger_tag(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        return {"key": key, "type": "int64", "value": value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": value}
    if isinstance(value, bytes):
        return {"key": key, "type": "binary", "value": base64.b64encode(value).decode("ascii")}
    if isinstance(value, str):
        return {"key": key, "type": "string", "value": value}
    # Arrays and kvlists: Jaeger's OTLP translator stores them as JSON strings.
    return {"key": key, "type": "string", "value": json.dumps(value, default=str)}


def _jaeger_span_tags(span: ReceivedSpan) -> list[dict[str, Any]]:
    tags = [_jaeger_tag(key, value) for key, value in span.attributes.items()]
    if span.scope_name:
        tags.append(_jaeger_tag("otel.scope.name", span.scope_name))
    if span.kind in SPAN_KIND_NAMES and span.kind != trace_pb2.Span.SPAN_KIND_INTERNAL:
        tags.append(_jaeger_tag("span.kind", SPAN_KIND_NAMES[span.kind]))
    if span.status_code in STATUS_CODE_NAMES:
        tags.append(_jaeger_tag("otel.status_code", STATUS_CODE_NAMES[span.status_code]))
    if span.status_code == trace_pb2.Status.STATUS_CODE_ERROR:
        tags.append(_jaeger_tag("error", True))
    if span.status_message:
        tags.append(_jaeger_tag("otel.status_description", span.status_message))
    return tags


def _jaeger_trace(trace_id: str, spans: Sequence[ReceivedSpan]) -> dict[str, Any]:
    processes: dict[str, dict[str, Any]] = {}
    process_ids: dict[str, str] = {}
    rendered: list[dict[str, Any]] = []
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        process_key = json.dumps(span.resource, sort_keys=True, default=str)
        if process_key not in process_ids:
            process_id = f"p{len(process_ids) + 1}"
            process_ids[process_key] = process_id
            processes[process_id] = {
                "serviceName": span.service_name,
                "tags": [_jaeger_tag(k, v) for k, v in span.resource.items() if k != "service.name"],
            }
        references: list[dict[str, str]] = []
        if span.parent_span_id is not None:
            references.append(
                {"refType": "CHILD_OF", "traceID": span.trace_id, "spanID": span.parent_span_id}
            )
        references.extend(
            {"refType": "FOLLOWS_FROM", "traceID": link_trace, "spanID": link_span}
            for link_trace, link_span in span.links
        )
        rendered.append(
            {
                "traceID": span.trace_id,
                "spanID": span.span_id,
                "operationName": span.name,
                "references": references,
                "startTime": span.start_ns // 1000,
                "duration": max(span.duration_ns, 0) // 1000,
                "tags": _jaeger_span_tags(span),
                "logs": [
                    {
                        "timestamp": time_ns // 1000,
                        "fields": [_jaeger_tag("event", name)]
                        + [_jaeger_tag(k, v) for k, v in attributes.items()],
                    }
                    for name, time_ns, attributes in span.events
                ],
                "processID": process_ids[process_key],
                "warnings": None,
            }
        )
    return {"traceID": trace_id, "spans": rendered, "processes": processes, "warnings": None}


# --------------------------------------------------------------------------- the receiver


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = False  # stop() joins every handler thread
    block_on_close = True
    allow_reuse_address = False

    def __init__(self, address: tuple[str, int], receiver: OtlpReceiver) -> None:
        self.receiver = receiver
        super().__init__(address, _OtlpHttpHandler)


class _OtlpHttpHandler(BaseHTTPRequestHandler):
    server: _HttpServer
    protocol_version = "HTTP/1.0"  # one request per connection: handler threads end promptly
    timeout = 5.0  # a silent client cannot hold stop() for long
    server_version = "OtlpReceiver/1"

    _EXPORTS: ClassVar[dict[str, str]] = {
        "/v1/traces": "traces",
        "/v1/metrics": "metrics",
        "/v1/logs": "logs",
    }

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        """Quiet: the test output stays clean."""

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _reply_json(self, status: int, payload: Any) -> None:
        self._reply(status, json.dumps(payload).encode("utf-8"), "application/json")

    def _reply_text(self, status: int, text: str) -> None:
        self._reply(status, text.encode("utf-8"), "text/plain; charset=utf-8")

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        signal = self._EXPORTS.get(path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        if signal is None:
            self._reply_text(HTTPStatus.NOT_FOUND, f"no OTLP endpoint at {path}")
            return
        media_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if media_type != PROTOBUF_CONTENT_TYPE:
            self._reply_text(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"unsupported content type {media_type!r}; send protobuf"
            )
            return
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        try:
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            elif encoding != "identity":
                self._reply_text(
                    HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"unsupported content encoding {encoding!r}"
                )
                return
        except (OSError, EOFError, zlib.error) as exc:
            self._reply_text(HTTPStatus.BAD_REQUEST, f"cannot decompress body: {exc}")
            return
        try:
            response = self.server.receiver._ingest(signal, body, "http")
        except DecodeError as exc:
            self._reply_text(HTTPStatus.BAD_REQUEST, f"bad protobuf body: {exc}")
            return
        self._reply(HTTPStatus.OK, response, PROTOBUF_CONTENT_TYPE)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        receiver = self.server.receiver
        if parts.path == "/api/traces":
            self._reply_json(
                HTTPStatus.OK, receiver.jaeger_traces(query.get("service"), query.get("operation"))
            )
        elif parts.path.startswith("/api/traces/"):
            trace_id = parts.path.removeprefix("/api/traces/").lower()
            payload = receiver.jaeger_trace(trace_id)
            if payload["data"]:
                self._reply_json(HTTPStatus.OK, payload)
            else:
                self._reply_json(
                    HTTPStatus.NOT_FOUND,
                    {"data": None, "errors": [{"code": 404, "msg": "trace not found"}]},
                )
        elif parts.path == "/api/services":
            services = receiver.service_names()
            self._reply_json(
                HTTPStatus.OK,
                {"data": services, "total": len(services), "limit": 0, "offset": 0, "errors": None},
            )
        elif parts.path == "/healthz":
            self._reply_text(HTTPStatus.OK, "ok")
        else:
            self._reply_text(HTTPStatus.NOT_FOUND, f"nothing at {parts.path}")


class _TraceServicer(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(  # noqa: N802 (generated gRPC name)
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self._receiver._store_spans(_decode_spans(request, "grpc"))
        return trace_service_pb2.ExportTraceServiceResponse()


class _MetricsServicer(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(  # noqa: N802 (generated gRPC name)
        self, request: metrics_service_pb2.ExportMetricsServiceRequest, context: grpc.ServicerContext
    ) -> metrics_service_pb2.ExportMetricsServiceResponse:
        self._receiver._store_metrics(_decode_metrics(request, "grpc"))
        return metrics_service_pb2.ExportMetricsServiceResponse()


class _LogsServicer(logs_service_pb2_grpc.LogsServiceServicer):
    def Export(  # noqa: N802 (generated gRPC name)
        self, request: logs_service_pb2.ExportLogsServiceRequest, context: grpc.ServicerContext
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        return logs_service_pb2.ExportLogsServiceResponse()


class OtlpReceiver:
    """OTLP/HTTP + OTLP/gRPC receiver on loopback; use as a context manager or start()/stop().

    Thread-safe: exporters deliver on server threads while the test thread queries.
    """

    def __init__(
        self,
        host: str = LOOPBACK,
        *,
        http_port: int | None = None,
        grpc_port: int | None = None,
        serve_grpc: bool = True,
    ) -> None:
        """Free ports unless ``http_port``/``grpc_port`` are given (e.g. Jaeger's 4318/4317)."""
        self.host = host
        self._want_http_port = http_port
        self._want_grpc_port = grpc_port
        self._serve_grpc = serve_grpc
        self._cond = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self._metrics: list[ReceivedMetric] = []
        self._http_server: _HttpServer | None = None
        self._http_thread: threading.Thread | None = None
        self._grpc_server: grpc.Server | None = None
        self._grpc_executor: futures.ThreadPoolExecutor | None = None
        self._http_port: int | None = None
        self._grpc_port: int | None = None

    # ----------------------------------------------------------------- lifecycle

    @property
    def running(self) -> bool:
        return self._http_server is not None

    @property
    def http_endpoint(self) -> str:
        """Base URL of the OTLP/HTTP port; exporters want ``f"{http_endpoint}/v1/traces"``."""
        if self._http_port is None:
            raise RuntimeError("OtlpReceiver is not started")
        return f"http://{self.host}:{self._http_port}"

    @property
    def grpc_endpoint(self) -> str:
        """URL of the OTLP/gRPC port (plain text: exporters need ``insecure=True``)."""
        if self._grpc_port is None:
            raise RuntimeError("OtlpReceiver is not started")
        return f"http://{self.host}:{self._grpc_port}"

    def start(self) -> OtlpReceiver:
        if self.running:
            raise RuntimeError("OtlpReceiver is already started")
        try:
            self._start_http()
            if self._serve_grpc:
                self._start_grpc()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_http(self) -> None:
        last_error: OSError | None = None
        for _ in range(1 if self._want_http_port else _BIND_ATTEMPTS):
            port = self._want_http_port or free_port(self.host)
            try:
                server = _HttpServer((self.host, port), self)
            except OSError as exc:  # the port was taken between probe and bind
                last_error = exc
                continue
            self._http_server = server
            self._http_port = port
            self._http_thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="otlp-http", daemon=True
            )
            self._http_thread.start()
            return
        raise RuntimeError(f"could not bind an OTLP/HTTP port on {self.host}") from last_error

    def _start_grpc(self) -> None:
        last_error: Exception | None = None
        for _ in range(1 if self._want_grpc_port else _BIND_ATTEMPTS):
            port = self._want_grpc_port or free_port(self.host)
            executor = futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="otlp-grpc")
            # SO_REUSEPORT off: a second server must not silently share the port.
            server = grpc.server(executor, options=[("grpc.so_reuseport", 0)])
            trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceServicer(self), server)
            metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_MetricsServicer(self), server)
            logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsServicer(), server)
            try:
                bound = server.add_insecure_port(f"{self.host}:{port}")
            except RuntimeError as exc:  # grpc raises when the bind fails
                last_error = exc
                bound = 0
            if bound != port:
                server.stop(None).wait()
                executor.shutdown(wait=True)
                continue
            server.start()
            self._grpc_server = server
            self._grpc_executor = executor
            self._grpc_port = port
            return
        raise RuntimeError(f"could not bind an OTLP/gRPC port on {self.host}") from last_error

    def stop(self, grace_s: float = 1.0) -> None:
        """Stop both servers, free their ports and join their threads. Safe to call twice."""
        grpc_server, self._grpc_server = self._grpc_server, None
        if grpc_server is not None:
            grpc_server.stop(grace_s).wait()
        executor, self._grpc_executor = self._grpc_executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        http_server, self._http_server = self._http_server, None
        if http_server is not None:
            http_server.shutdown()
            http_server.server_close()  # closes the listening socket and joins handler threads
        http_thread, self._http_thread = self._http_thread, None
        if http_thread is not None:
            http_thread.join(timeout=10)
        self._http_port = None
        self._grpc_port = None

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # ----------------------------------------------------------------- ingestion

    def _ingest(self, signal: str, body: bytes, transport: str) -> bytes:
        """Decode one OTLP/HTTP body; the serialized response protobuf."""
        if signal == "traces":
            trace_request = trace_service_pb2.ExportTraceServiceRequest()
            trace_request.ParseFromString(body)
            self._store_spans(_decode_spans(trace_request, transport))
            return bytes(trace_service_pb2.ExportTraceServiceResponse().SerializeToString())
        if signal == "metrics":
            metrics_request = metrics_service_pb2.ExportMetricsServiceRequest()
            metrics_request.ParseFromString(body)
            self._store_metrics(_decode_metrics(metrics_request, transport))
            return bytes(metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString())
        logs_request = logs_service_pb2.ExportLogsServiceRequest()
        logs_request.ParseFromString(body)  # validated, then ignored
        return bytes(logs_service_pb2.ExportLogsServiceResponse().SerializeToString())

    def _store_spans(self, spans: Sequence[ReceivedSpan]) -> None:
        with self._cond:
            self._spans.extend(spans)
            self._cond.notify_all()

    def _store_metrics(self, metrics: Sequence[ReceivedMetric]) -> None:
        with self._cond:
            self._metrics.extend(metrics)
            self._cond.notify_all()

    # ----------------------------------------------------------------- queries

    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, in arrival order."""
        with self._cond:
            return list(self._spans)

    def traces(self) -> dict[str, list[ReceivedSpan]]:
        """Spans grouped by trace id (traces in order of first arrival, spans in arrival order)."""
        grouped: dict[str, list[ReceivedSpan]] = {}
        for span in self.spans():
            grouped.setdefault(span.trace_id, []).append(span)
        return grouped

    def service_names(self) -> list[str]:
        """Sorted names of every service that sent a span."""
        return sorted({span.service_name for span in self.spans()})

    def metrics(self) -> list[ReceivedMetric]:
        """Every metric received so far, one entry per metric per export, in arrival order."""
        with self._cond:
            return list(self._metrics)

    def clear(self) -> None:
        """Forget everything received so far."""
        with self._cond:
            self._spans.clear()
            self._metrics.clear()

    def _wait(self, check: Callable[[], Any], timeout_s: float) -> Any:
        """Re-run ``check`` under the lock each time data arrives until it is truthy or time is up."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while True:
                result = check()
                if result:
                    return result
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                # Bounded wait: a notify is never missed, and the deadline is re-checked regularly.
                self._cond.wait(timeout=min(remaining, 0.1))

    def wait_for_spans(
        self, predicate: Callable[[list[ReceivedSpan]], bool], timeout_s: float = 5.0
    ) -> list[ReceivedSpan]:
        """Wait until ``predicate(all spans so far)`` is true; those spans. TimeoutError otherwise.

        Example: ``receiver.wait_for_spans(lambda spans: {"match"} <= {s.name for s in spans})``.
        """

        def check() -> list[ReceivedSpan] | None:
            snapshot = list(self._spans)
            return snapshot if predicate(snapshot) else None

        result: list[ReceivedSpan] | None = self._wait(check, timeout_s)
        if result is None:
            raise TimeoutError(f"spans not received within {timeout_s}s; have: {self._span_summary()}")
        return result

    def wait_for_span(
        self, predicate: Callable[[ReceivedSpan], bool], timeout_s: float = 5.0
    ) -> ReceivedSpan:
        """Wait for the first single span matching ``predicate``; TimeoutError otherwise."""

        def check() -> ReceivedSpan | None:
            return next((span for span in self._spans if predicate(span)), None)

        result: ReceivedSpan | None = self._wait(check, timeout_s)
        if result is None:
            raise TimeoutError(f"no matching span within {timeout_s}s; have: {self._span_summary()}")
        return result

    def wait_for_metric(
        self,
        name: str,
        timeout_s: float = 5.0,
        predicate: Callable[[ReceivedMetric], bool] | None = None,
    ) -> ReceivedMetric:
        """The newest metric called ``name`` (and matching ``predicate``); TimeoutError otherwise."""

        def check() -> ReceivedMetric | None:
            for metric in reversed(self._metrics):
                if metric.name == name and (predicate is None or predicate(metric)):
                    return metric
            return None

        result: ReceivedMetric | None = self._wait(check, timeout_s)
        if result is None:
            with self._cond:
                names = sorted({metric.name for metric in self._metrics})
            raise TimeoutError(f"metric {name!r} not received within {timeout_s}s; have: {names}")
        return result

    def _span_summary(self) -> str:
        with self._cond:
            described = [f"{span.service_name}:{span.name}" for span in self._spans]
        return ", ".join(described) or "none"

    # ----------------------------------------------------------------- Jaeger-shaped read-back

    def jaeger_traces(self, service: str | None = None, operation: str | None = None) -> dict[str, Any]:
        """Stored spans shaped like Jaeger's ``GET /api/traces`` response.

        A trace is included when one of its spans comes from ``service`` (and is named ``operation``,
        if given); like Jaeger, the whole trace is returned, spans of other services included.
        Links become ``FOLLOWS_FROM`` references, span kind and status become tags as Jaeger does.
        """
        data = []
        for trace_id, spans in self.traces().items():
            if service is not None or operation is not None:
                wanted = any(
                    (service is None or span.service_name == service)
                    and (operation is None or span.name == operation)
                    for span in spans
                )
                if not wanted:
                    continue
            data.append(_jaeger_trace(trace_id, spans))
        return {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}

    def jaeger_trace(self, trace_id: str) -> dict[str, Any]:
        """One trace shaped like Jaeger's ``GET /api/traces/{traceID}`` (``data`` empty when unknown)."""
        spans = self.traces().get(trace_id.lower())
        data = [_jaeger_trace(trace_id.lower(), spans)] if spans else []
        return {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}


def main(argv: Sequence[str] | None = None) -> None:
    """Serve OTLP and the read-back API on fixed ports until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(description="OTLP receiver with a Jaeger-shaped read-back API")
    parser.add_argument("--host", default=LOOPBACK)
    parser.add_argument("--http-port", type=int, default=4318)
    parser.add_argument("--grpc-port", type=int, default=4317, help="0: no OTLP/gRPC")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    receiver = OtlpReceiver(
        args.host, http_port=args.http_port, grpc_port=args.grpc_port or None, serve_grpc=args.grpc_port != 0
    )
    with receiver:
        print(f"otlp-receiver: OTLP/HTTP and the read-back API on {receiver.http_endpoint}", flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
