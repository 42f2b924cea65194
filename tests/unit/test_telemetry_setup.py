"""Telemetry is configured only through OTEL_* variables; without an endpoint nothing is exported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from arena_core.telemetry.setup import _protocol, _wanted

PROBE = """
import json, sys
from arena_core.telemetry import configure_telemetry, telemetry_enabled
from opentelemetry import trace
state = configure_telemetry("defender")
with trace.get_tracer("probe").start_as_current_span("s") as span:
    recording = span.is_recording()
print(json.dumps({"enabled": telemetry_enabled(), "name": state.service_name,
                  "protocol": state.protocol, "recording": recording}))
"""


def _probe(env: dict[str, str], *, quiet: bool = True) -> dict[str, object]:
    import json
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    if quiet:
        assert done.stderr.strip() == "", done.stderr  # no warning, no error
    return dict(json.loads(done.stdout))


def test_without_an_endpoint_nothing_is_set_up_and_nothing_fails() -> None:
    assert _probe({}) == {"enabled": False, "name": "arena-defender", "protocol": None, "recording": False}


def test_an_endpoint_turns_tracing_on_with_the_standard_variables() -> None:
    # Nothing listens there: the exporter logs its failures at exit; the process still ends well.
    found = _probe(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_SERVICE_NAME": "blue-team",
            "OTEL_BSP_SCHEDULE_DELAY": "60000",
        },
        quiet=False,
    )
    assert found == {"enabled": True, "name": "blue-team", "protocol": "grpc", "recording": True}


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
    ],
)
def test_when_telemetry_is_wanted(env: dict[str, str], wanted: bool) -> None:
    assert _wanted(env) is wanted


@pytest.mark.parametrize(
    ("env", "protocol"),
    [
        ({}, "http/protobuf"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "grpc"),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, "http/protobuf"),
        (
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
            "grpc",
        ),
    ],
)
def test_the_protocol_comes_from_the_standard_variables(env: dict[str, str], protocol: str) -> None:
    assert _protocol(env) == protocol
