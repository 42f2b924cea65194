"""Client spans record a URL without its user info, query or fragment (docs/security.md).

A target's URL may carry a token anywhere (``?token=...``); the httpx instrumentation redacts only
a few signature parameters itself. configure_telemetry runs in a child process (it sets the global
tracer provider and instruments httpx for good) against a real loopback server; the child adds an
in-memory exporter to the provider configure_telemetry installed and prints what it recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from support.http_stub import serve_handler

SECRET = "secret-7f3a9c"
PASSWORD = "hunter2-9d1e"

PROBE = """
import asyncio, json, os, sys
import httpx
from arena_core.telemetry import configure_telemetry
from opentelemetry import trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

assert configure_telemetry("attacker").enabled
exporter = InMemorySpanExporter()
trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(exporter))
url = sys.argv[1]
with httpx.Client() as client:
    assert client.get(url).status_code == 200

async def main():
    async with httpx.AsyncClient() as client:
        assert (await client.get(url)).status_code == 200

asyncio.run(main())
spans = [
    {"name": s.name, "kind": s.kind.name, "attributes": dict(s.attributes or {}),
     "events": [[e.name, dict(e.attributes or {})] for e in s.events]}
    for s in exporter.get_finished_spans()
]
print(json.dumps(spans, default=str), flush=True)
os._exit(0)  # skip the exit-time export to an endpoint where nothing listens
"""


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def loopback_port() -> Iterator[int]:
    with serve_handler(_Ok) as port:
        yield port


@pytest.mark.parametrize("semconv", ["", "http/dup", "http"], ids=["old", "dup", "stable"])
def test_client_spans_carry_no_query_userinfo_or_fragment(loopback_port: int, semconv: str) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env = {
        **clean,
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_BSP_SCHEDULE_DELAY": "60000",
    }
    if semconv:
        env["OTEL_SEMCONV_STABILITY_OPT_IN"] = semconv
    url = f"http://user:{PASSWORD}@127.0.0.1:{loopback_port}/path?token={SECRET}&x=1#frag-{SECRET}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    spans = json.loads(done.stdout)
    clients = [s for s in spans if s["kind"] == "CLIENT"]
    assert len(clients) == 2, spans  # one sync, one async request

    expected = f"http://127.0.0.1:{loopback_port}/path"
    names = {"": ["http.url"], "http/dup": ["http.url", "url.full"], "http": ["url.full"]}[semconv]
    for span in clients:
        for name in names:
            assert span["attributes"][name] == expected, span
        assert not {"http.url", "url.full"} - set(names) & set(span["attributes"]), span
    for span in spans:
        shown = json.dumps(span)
        assert SECRET not in shown and PASSWORD not in shown and "token=" not in shown, span
