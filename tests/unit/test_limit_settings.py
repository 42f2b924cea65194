"""The size-limit settings: defaults, bounds, and the BodySizeLimit middleware's edge cases."""

from __future__ import annotations

import os

import pytest
from starlette.types import Message, Receive, Scope, Send

from arena_core.errors import ConfigError
from arena_core.http_limits import BodySizeLimit, RequestLimits
from arena_core.settings import load_settings


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A monkeypatch over an environment with no ARENA_* variable left from the shell."""
    for name in list(os.environ):
        if name.startswith("ARENA_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_defaults(env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert (settings.max_request_bytes, settings.max_message_parts, settings.max_message_text_bytes) == (
        1_000_000,
        16,
        32_000,
    )
    assert RequestLimits.from_settings(settings) == RequestLimits()


def test_read_from_the_environment(env: pytest.MonkeyPatch) -> None:
    env.setenv("ARENA_MAX_REQUEST_BYTES", "2048")
    env.setenv("ARENA_MAX_MESSAGE_PARTS", "4")
    env.setenv("ARENA_MAX_MESSAGE_TEXT_BYTES", "5000")
    limits = RequestLimits.from_settings(load_settings())
    assert limits == RequestLimits(max_request_bytes=2048, max_message_parts=4, max_message_text_bytes=5000)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ARENA_MAX_REQUEST_BYTES", "1023"),
        ("ARENA_MAX_REQUEST_BYTES", "100000001"),
        ("ARENA_MAX_REQUEST_BYTES", "big"),
        ("ARENA_MAX_MESSAGE_PARTS", "0"),
        ("ARENA_MAX_MESSAGE_PARTS", "1001"),
        ("ARENA_MAX_MESSAGE_TEXT_BYTES", "999"),
        ("ARENA_MAX_MESSAGE_TEXT_BYTES", "10000001"),
    ],
)
def test_out_of_bounds_values_are_a_settings_error_naming_the_variable(
    env: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    env.setenv(variable, value)
    with pytest.raises(ConfigError, match=variable):
        load_settings()


def test_bounds_are_inclusive(env: pytest.MonkeyPatch) -> None:
    low = load_settings(max_request_bytes=1_024, max_message_parts=1, max_message_text_bytes=1_000)
    high = load_settings(
        max_request_bytes=100_000_000, max_message_parts=1_000, max_message_text_bytes=10_000_000
    )
    assert low.max_request_bytes == 1_024 and high.max_request_bytes == 100_000_000


async def _never_called(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("the app must not run")


@pytest.mark.asyncio
async def test_a_client_gone_before_its_body_ends_gets_no_answer_and_no_error() -> None:
    inbox: list[Message] = [
        {"type": "http.request", "body": b"x" * 10, "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return inbox.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    await BodySizeLimit(_never_called, max_bytes=1024)(scope, receive, send)
    assert sent == [] and inbox == []


@pytest.mark.asyncio
async def test_a_declared_size_over_the_limit_is_refused_before_reading() -> None:
    async def receive() -> Message:
        raise AssertionError("the body must not be read")

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "http", "method": "PUT", "path": "/x", "headers": [(b"content-length", b"1025")]}
    await BodySizeLimit(_never_called, max_bytes=1024)(scope, receive, send)
    assert sent[0]["status"] == 413
    assert b"the request body is 1025 bytes; the limit is 1024 bytes" in sent[1]["body"]
