"""No credential reaches a log line: bearer tokens and Authorization values are redacted."""

from __future__ import annotations

import io
import logging

import pytest

from arena_core.log_redaction import RedactCredentials, install, install_everywhere, redact

TOKEN = "tok-0123456789abcdef+/="


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: Bearer {TOKEN}",
        f"headers={{'authorization': 'Bearer {TOKEN}', 'x': '1'}}",
        f"Headers({{'host': 'a', 'authorization': '{TOKEN}'}})",
        f"[(b'authorization', b'Bearer {TOKEN}')]",
        f"authorization={TOKEN} next",
        f"AUTHORIZATION: Basic {TOKEN}",
        f"sent bearer {TOKEN}.",
        f'{{"Authorization": "Bearer {TOKEN}"}}',
        f"[(b'authorization', b'Basic {TOKEN}')]",
        f"Bearer {TOKEN}'\"()",  # a target token may hold any visible character
    ],
)
def test_credentials_are_redacted(text: str) -> None:
    cleaned = redact(text)
    assert TOKEN not in cleaned and "[redacted]" in cleaned, cleaned


@pytest.mark.parametrize(
    "text",
    [
        "nothing to see",
        "the bearer scheme is declared",
        'Bearer realm="a2a-arena"',
        "authorization failed: 401",
        "",
    ],
)
def test_other_text_is_kept(text: str) -> None:
    assert redact(text) == text


def test_only_the_value_goes_not_the_rest_of_the_line() -> None:
    text = f"Authorization=Bearer {TOKEN} for target http://t\nnext line"
    assert redact(text) == "Authorization=[redacted] [redacted] for target http://t\nnext line"
    assert redact(f"authorization: {TOKEN} then more") == "authorization: [redacted] then more"


def test_the_handlers_of_other_loggers_get_the_filter_too() -> None:
    own = logging.getLogger("test_log_redaction.own_handlers")
    handler = logging.StreamHandler(io.StringIO())
    own.addHandler(handler)
    try:
        install_everywhere()
        assert any(isinstance(f, RedactCredentials) for f in handler.filters)
    finally:
        own.removeHandler(handler)


def test_plain_text_without_a_credential_is_untouched() -> None:
    assert redact("a match about bears and authors") == "a match about bears and authors"


def _logger_with_filter() -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    install([handler])
    install([handler])  # once per handler
    assert sum(isinstance(f, RedactCredentials) for f in handler.filters) == 1
    logger = logging.getLogger("test_log_redaction")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def test_the_filter_redacts_messages_arguments_and_exceptions() -> None:
    logger, stream = _logger_with_filter()
    logger.debug("request headers: %s", {"authorization": f"Bearer {TOKEN}"})
    try:
        try:
            raise ValueError(f"upstream said Authorization: Bearer {TOKEN}")
        except ValueError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError:
        logger.exception("failed")
    logger.info("stack", stack_info=True, extra={"note": "x"})
    logger.info("broken %s %s", "only one")  # a bad format string is left to logging's report
    out = stream.getvalue()
    assert TOKEN not in out
    assert "request headers" in out and "[redacted]" in out and "RuntimeError: wrapped" in out
