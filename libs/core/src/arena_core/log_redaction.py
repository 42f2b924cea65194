"""Credentials never reach a log line, whoever logs them.

Libraries log what they see: at DEBUG, a2a-sdk's server logs the incoming request's call
context, ``Authorization: Bearer <token>`` included, and an exception chain can quote a
header. :class:`RedactCredentials`, installed on the root handlers by
:func:`~arena_core.service_runner.configure_logging`, rewrites each record's message and
exception text before any handler formats it: a bearer token, and the value of an
``Authorization`` header or field, become ``[redacted]``.
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"

_PATTERNS = (
    # "Bearer <token>" wherever it appears (headers, reprs, error messages); 8 characters at
    # least, so that prose ("the bearer scheme", "Bearer realm=...") stays readable.
    (re.compile(r"(?i)\b(bearer)\s+(?!realm=|error=|scope=)[\x21-\x7e]{8,}"), rf"\1 {REDACTED}"),
    # The value of an Authorization header or field, to the end of its word, in the forms
    # logs show it: "authorization: v", "authorization=v", "'authorization': 'v'",
    # "(b'authorization', b'v')"; a scheme word before it (Basic, Digest...) is taken along.
    (
        re.compile(
            r"""(?i)(\bauthorization['"]?\s*(?:[:=]|,)\s*(?:b?['"])?)"""
            r"""(?:(?:basic|bearer|digest|negotiate|token)\s+)?(?!\[redacted\])[^\s'",}\]\)]+"""
        ),
        rf"\1{REDACTED}",
    ),
)


def redact(text: str) -> str:
    """``text`` with every bearer token and Authorization value replaced by ``[redacted]``."""
    lowered = text.lower()
    if "bearer" not in lowered and "authorization" not in lowered:
        return text
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RedactCredentials(logging.Filter):
    """A handler filter: the record's message and exception text, redacted (never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: leave it to the formatter's report
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install(handlers: list[logging.Handler]) -> None:
    """Add the filter to ``handlers`` (once each)."""
    for handler in handlers:
        if not any(isinstance(f, RedactCredentials) for f in handler.filters):
            handler.addFilter(RedactCredentials())


def install_everywhere() -> None:
    """Add the filter to the handlers of the root logger and of every logger that has its own
    (uvicorn's loggers write through their own handlers, without propagating to the root)."""
    handlers = list(logging.getLogger().handlers)
    for logger in list(logging.Logger.manager.loggerDict.values()):
        if isinstance(logger, logging.Logger):
            handlers.extend(logger.handlers)
    install(handlers)


__all__ = ["REDACTED", "RedactCredentials", "install", "install_everywhere", "redact"]
