"""OpenTelemetry for the arena: set-up from OTEL_* variables, attribute names, span helpers."""

from arena_core.telemetry.setup import (
    TelemetryState,
    configure_telemetry,
    instrument_asgi,
    shutdown_telemetry,
    telemetry_enabled,
)
from arena_core.telemetry.spans import current_trace_id, tracer

__all__ = [
    "TelemetryState",
    "configure_telemetry",
    "current_trace_id",
    "instrument_asgi",
    "shutdown_telemetry",
    "telemetry_enabled",
    "tracer",
]
