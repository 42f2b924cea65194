"""The arena's metrics (exported over OTLP when telemetry is configured; no-ops otherwise).

Instruments are created lazily from the global meter provider, so they bind to
the provider :func:`~arena_core.telemetry.configure_telemetry` installed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Counter, Histogram, ObservableGauge, Observation

from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import INSTRUMENTATION_NAME

_GEN_AI_KEYS = (attrs.GEN_AI_OPERATION_NAME, attrs.GEN_AI_PROVIDER_NAME, attrs.GEN_AI_REQUEST_MODEL)


@cache
def _meter() -> metrics.Meter:
    return metrics.get_meter(INSTRUMENTATION_NAME)


@cache
def _matches() -> Counter:
    return _meter().create_counter(attrs.METRIC_MATCHES, unit="{match}", description="Matches by outcome")


@cache
def _successes() -> Counter:
    return _meter().create_counter(
        attrs.METRIC_ATTACK_SUCCESSES, unit="{match}", description="Matches the attacker won"
    )


@cache
def _turn_duration() -> Histogram:
    return _meter().create_histogram(
        attrs.METRIC_TURN_DURATION, unit="s", description="One attacker message and the target's answer"
    )


@cache
def _token_usage() -> Histogram:
    return _meter().create_histogram(
        attrs.METRIC_TOKEN_USAGE, unit="{token}", description="Tokens per model call (GenAI conventions)"
    )


@cache
def _operation_duration() -> Histogram:
    return _meter().create_histogram(
        attrs.METRIC_OPERATION_DURATION, unit="s", description="Duration of a model call (GenAI conventions)"
    )


def record_match(outcome: str, attributes: Mapping[str, Any]) -> None:
    """Count a finished match (and an attack success when the attacker won)."""
    labels = {**attributes, attrs.ARENA_OUTCOME: outcome}
    _matches().add(1, labels)
    if outcome == "attacker_won":
        _successes().add(1, dict(attributes))


def record_turn(duration_s: float, attributes: Mapping[str, Any]) -> None:
    """Record one turn's latency."""
    _turn_duration().record(duration_s, dict(attributes))


def record_token_usage(prompt: int, completion: int, attributes: Mapping[str, Any]) -> None:
    """Record a model call's tokens by type (input, output)."""
    labels = {k: v for k, v in attributes.items() if k in _GEN_AI_KEYS}
    _token_usage().record(prompt, {**labels, attrs.GEN_AI_TOKEN_TYPE: "input"})
    _token_usage().record(completion, {**labels, attrs.GEN_AI_TOKEN_TYPE: "output"})


def record_operation_duration(duration_s: float, attributes: Mapping[str, Any]) -> None:
    """Record a model call's duration."""
    _operation_duration().record(duration_s, {k: v for k, v in attributes.items() if k in _GEN_AI_KEYS})


_queue_depth_readers: list[Callable[[], int | None]] = []
"""One reader per live orchestrator app: the gauge is the process's, the values are the apps'."""


@cache
def _queue_depth_gauge() -> ObservableGauge:
    def callback(options: CallbackOptions) -> Iterable[Observation]:
        values = [value for value in (read() for read in _queue_depth_readers) if value is not None]
        return [Observation(values[-1])] if values else []

    return _meter().create_observable_gauge(
        attrs.METRIC_QUEUE_DEPTH,
        callbacks=[callback],
        unit="{match}",
        description="Matches queued or in play",
    )


@contextlib.contextmanager
def observe_queue_depth(read: Callable[[], int | None]) -> Iterator[None]:
    """Publish the match queue's depth as a gauge while the block runs; ``read`` returns the
    latest known value (None: none yet). With several at once, the latest registered one with a value
    is shown."""
    _queue_depth_gauge()
    _queue_depth_readers.append(read)
    try:
        yield
    finally:
        _queue_depth_readers.remove(read)


__all__ = [
    "observe_queue_depth",
    "record_match",
    "record_operation_duration",
    "record_token_usage",
    "record_turn",
]
