"""An OTLP/HTTP receiver standing in for Jaeger, run as its own process.

``python bench/otlp_sink.py PORT`` accepts ``POST /v1/traces``, ``/v1/metrics`` and ``/v1/logs``
(protobuf), decodes trace requests to count spans, and answers ``GET /count`` with
``{"spans": N, "requests": M}``. It keeps no spans, so its memory stays flat however long a
benchmark runs; decoding every request keeps it honest about the exporter's work being real.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

_counts = {"spans": 0, "requests": 0}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (stdlib signature)
        return

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        _counts["requests"] += 1
        if self.path == "/v1/traces":
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            _counts["spans"] += sum(
                len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans
            )
        self._reply(200, b"", "application/x-protobuf")

    def do_GET(self) -> None:
        self._reply(200, json.dumps(_counts).encode(), "application/json")


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
