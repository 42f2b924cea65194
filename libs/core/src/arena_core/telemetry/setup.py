"""Turning OpenTelemetry on for one process, from the standard ``OTEL_*`` variables only.

Call :func:`configure_telemetry` once at a service's entry point, before the
service (and the agent libraries it imports) is loaded. With no OTLP endpoint
configured nothing is exported and nothing fails: the API's no-op providers
stay in place. With one, spans and metrics go to it over OTLP/HTTP protobuf
(the default) or OTLP/gRPC (``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``). The service
name defaults to ``arena-<service>``; ``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_TRACES_SAMPLER`` are honoured by the SDK.
Outgoing httpx requests are traced (their URL recorded without user info, query
or fragment) and carry W3C ``traceparent``; servers get the ASGI middleware from
:func:`instrument_asgi`. a2a-sdk's own internal spans stay off unless
``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=true``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from starlette.types import ASGIApp

from arena_core.telemetry.spans import capture_message_content, safe_url

logger = logging.getLogger(__name__)

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_UNTRACED_PATHS = "healthz,readyz"


@dataclass(frozen=True, slots=True)
class TelemetryState:
    """What :func:`configure_telemetry` did."""

    enabled: bool
    service_name: str
    protocol: str | None = None


_state: TelemetryState | None = None


def telemetry_enabled() -> bool:
    """True when this process exports telemetry."""
    return _state is not None and _state.enabled


def _wanted(environ: Mapping[str, str]) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES)


def _metrics_wanted(environ: Mapping[str, str]) -> bool:
    # Metrics go where traces go unless told otherwise; a traces-only endpoint (e.g. Jaeger's)
    # would reject them on every export.
    if environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "none":
        return False
    return any(
        environ.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    )


class _WithoutUnaskedContent(SpanProcessor):
    """Drops spans of libraries that record message text unconditionally (any-agent's), unless
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asked for content (``true``, ``SPAN_ONLY``
    or ``SPAN_AND_EVENT``)."""

    _SCOPES = ("any_agent",)

    def __init__(self, inner: SpanProcessor) -> None:
        self._inner = inner

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._inner.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        scope = span.instrumentation_scope.name if span.instrumentation_scope else ""
        if scope in self._SCOPES and not capture_message_content():
            return
        self._inner.on_end(span)

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


_URL_ATTRIBUTES = ("url.full", "http.url")  # the stable and the old semconv name of a client URL


def _scrub_url(span: trace.Span, _request: Any) -> None:
    """httpx request hook: the client span's URL without user info, query or fragment.

    The instrumentation redacts only a few well-known signature parameters; a target's URL can
    carry a token in any of them (``?token=...``), and docs/security.md promises none in spans.
    """
    attributes = getattr(span, "attributes", None)  # an SDK span; a non-recording one has none
    if not attributes or not span.is_recording():
        return
    for key in _URL_ATTRIBUTES:
        value = attributes.get(key)
        if isinstance(value, str):
            span.set_attribute(key, safe_url(value))


async def _scrub_url_async(span: trace.Span, request: Any) -> None:
    _scrub_url(span, request)


def _protocol(environ: Mapping[str, str]) -> str:
    value = (
        environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    )
    return "grpc" if value.strip().lower() == "grpc" else "http/protobuf"


def _exporters(protocol: str) -> tuple[SpanExporter, MetricExporter]:
    # The exporters read their endpoint, headers, timeout and TLS settings from OTEL_* themselves.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        return GrpcSpans(), GrpcMetrics()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetrics
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

    return HttpSpans(), HttpMetrics()


def configure_telemetry(service: str, *, environ: Mapping[str, str] | None = None) -> TelemetryState:
    """Set up tracing and metrics for this process (once; later calls return the first result).

    ``service`` is the arena service (``defender``, ``attacker``, ``orchestrator``,
    ``model``, ``cli``); the default service name is ``arena-<service>``.
    """
    global _state
    if _state is not None:
        return _state
    env = os.environ if environ is None else environ
    # a2a-sdk reads this when it is imported: its many internal spans are noise by default.
    os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")
    name = env.get("OTEL_SERVICE_NAME") or f"arena-{service}"
    if not _wanted(env):
        _state = TelemetryState(enabled=False, service_name=name)
        return _state
    protocol = _protocol(env)
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: name}
    resource = Resource.create(attributes)
    span_exporter, metric_exporter = _exporters(protocol)
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(_WithoutUnaskedContent(BatchSpanProcessor(span_exporter)))
    trace.set_tracer_provider(tracer_provider)
    if _metrics_wanted(env):
        meter_provider = MeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(metric_exporter)]
        )
        metrics.set_meter_provider(meter_provider)

    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor

    HTTPXClientInstrumentor().instrument(request_hook=_scrub_url, async_request_hook=_scrub_url_async)
    _state = TelemetryState(enabled=True, service_name=name, protocol=protocol)
    logger.info("telemetry: exporting traces and metrics as %s over OTLP (%s)", name, protocol)
    return _state


def instrument_asgi(app: ASGIApp) -> ASGIApp:
    """``app`` behind the OpenTelemetry ASGI middleware when telemetry is on (else unchanged).

    Incoming ``traceparent`` headers continue the caller's trace; health probes are not traced.
    The middleware's own per-message spans (``http send``/``http receive``: one per ASGI
    message, so one per streamed event) are left out: they say nothing the server span does
    not, and exporting them was a measurable part of a turn's CPU (docs/performance.md).
    """
    if not telemetry_enabled():
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(app, excluded_urls=_UNTRACED_PATHS, exclude_spans=["receive", "send"])


def shutdown_telemetry() -> None:
    """Flush and stop the exporters (also done at interpreter exit by the SDK)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.shutdown()
    meter_provider = metrics.get_meter_provider()
    if isinstance(meter_provider, MeterProvider):
        meter_provider.shutdown()


__all__ = [
    "TelemetryState",
    "configure_telemetry",
    "instrument_asgi",
    "shutdown_telemetry",
    "telemetry_enabled",
]
