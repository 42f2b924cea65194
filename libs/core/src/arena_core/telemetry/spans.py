"""Small helpers shared by the code that makes spans."""

from __future__ import annotations

import os
from urllib.parse import quote, urlsplit, urlunsplit

from opentelemetry import trace

INSTRUMENTATION_NAME = "a2a-arena"


def tracer() -> trace.Tracer:
    """The arena's tracer (a no-op one until telemetry is configured)."""
    return trace.get_tracer(INSTRUMENTATION_NAME)


def current_trace_id() -> str | None:
    """The current span's trace id as 32 hex digits, or None when nothing is traced."""
    context = trace.get_current_span().get_span_context()
    # An unsampled trace is never exported: a link to it would lead nowhere.
    if not context.is_valid or not context.trace_flags.sampled:
        return None
    return trace.format_trace_id(context.trace_id)


def jaeger_trace_url(jaeger_url: str | None, trace_id: str | None) -> str | None:
    """The Jaeger UI page of a trace: ``{jaeger_url}/trace/{trace_id}``.

    None when either is missing or ``jaeger_url`` is not an http(s) URL (a link must lead somewhere).
    """
    if not trace_id or not jaeger_url:
        return None
    base = jaeger_url.strip().rstrip("/")
    if urlsplit(base).scheme not in ("http", "https"):
        return None
    return f"{base}/trace/{quote(trace_id, safe='')}"


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment, for span attributes (they may carry tokens)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def capture_message_content() -> bool:
    """True when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` puts content on spans:
    ``true`` (the older instrumentations' form) or ``SPAN_ONLY`` / ``SPAN_AND_EVENT`` (the
    current GenAI utilities' values; ``EVENT_ONLY`` and ``NO_CONTENT`` keep it off spans).
    Message text and tool arguments then go into GenAI spans. Off by default (prompts,
    replies and tool arguments can be sensitive)."""
    return os.environ.get(CAPTURE_CONTENT_VARIABLE, "").strip().lower() in _CONTENT_ON_SPANS


_CONTENT_ON_SPANS = frozenset({"true", "span_only", "span_and_event"})


CAPTURE_CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


__all__ = [
    "CAPTURE_CONTENT_VARIABLE",
    "INSTRUMENTATION_NAME",
    "capture_message_content",
    "current_trace_id",
    "jaeger_trace_url",
    "tracer",
]
