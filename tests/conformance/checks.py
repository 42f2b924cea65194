"""Checks of the data model shared by several requirements (field names, enums, parts, timestamps)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

from conformance.wire import Wire

# Maps whose keys are the client's or the extension's, not the protocol's field names.
FREE_FORM = frozenset({"metadata", "data", "params", "header"})
NAMED_MAPS = frozenset({"securitySchemes"})
"""Maps keyed by names the agent chose; their values are protocol objects."""
REQUIREMENT_LISTS = frozenset({"security", "securityRequirements"})
"""Lists of maps keyed by scheme names."""

_CAMEL = re.compile(r"^[a-z][A-Za-z0-9]*$")
UTC_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$")
MAJOR_MINOR = re.compile(r"^\d+\.\d+$")


def non_camel_keys(document: Any, path: str = "$") -> Iterator[str]:
    """Paths of the keys of ``document`` that are not camelCase (1.0 5.5), free-form maps excepted."""
    if isinstance(document, dict):
        for key, value in document.items():
            here = f"{path}.{key}"
            if key == "@type":
                continue
            if not _CAMEL.match(str(key)):
                yield here
            if key in FREE_FORM:
                continue
            if key in NAMED_MAPS and isinstance(value, dict):
                for name, item in value.items():
                    yield from non_camel_keys(item, f"{here}.{name}")
            elif key in REQUIREMENT_LISTS:
                continue
            else:
                yield from non_camel_keys(value, here)
    elif isinstance(document, list):
        for index, item in enumerate(document):
            yield from non_camel_keys(item, f"{path}[{index}]")


def messages_in(task: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The messages a task carries: its status message and its history."""
    status = task.get("status")
    if isinstance(status, dict) and isinstance(status.get("message"), dict):
        yield "status.message", status["message"]
    for index, message in enumerate(task.get("history") or []):
        if isinstance(message, dict):
            yield f"history[{index}]", message


def part_problems(wire: Wire, where: str, parts: Any) -> Iterator[str]:
    """What is wrong with a list of parts on ``wire`` (1.0 4.1.6; 0.3 6.5; 1.0 5.7: non-empty)."""
    if not isinstance(parts, list) or not parts:
        yield f"{where}: parts must be a non-empty list"
        return
    for index, part in enumerate(parts):
        here = f"{where}[{index}]"
        if not isinstance(part, dict):
            yield f"{here}: not an object"
            continue
        if wire.version == "0.3" and wire.jsonrpc:
            kind = part.get("kind")
            if kind not in {"text", "file", "data"}:
                yield f"{here}: a 0.3 part needs kind text, file or data, got {kind!r}"
            elif kind not in part:
                yield f"{here}: a {kind} part needs its {kind} member"
            continue
        members = ("text", "raw", "url", "data") if wire.version == "1.0" else ("text", "file", "data")
        present = [member for member in members if member in part]
        if len(present) != 1:
            yield f"{here}: a part must hold exactly one of {members}, holds {present}"
        if wire.version == "1.0" and "kind" in part:
            yield f"{here}: 1.0 parts carry no kind discriminator (1.0 A.2.1)"


def message_problems(
    wire: Wire, where: str, message: dict[str, Any], role: Literal["user", "agent"] | None = None
) -> Iterator[str]:
    """What is wrong with a message (1.0 4.1.4/4.1.5; 0.3 6.4)."""
    if not isinstance(message.get("messageId"), str) or not message["messageId"]:
        yield f"{where}.messageId: required"
    expected_roles = {wire.role("user"), wire.role("agent")}
    if message.get("role") not in expected_roles:
        yield f"{where}.role: {message.get('role')!r} is not one of {sorted(expected_roles)}"
    elif role is not None and message.get("role") != wire.role(role):
        yield f"{where}.role: expected {wire.role(role)!r}, got {message.get('role')!r}"
    if wire.version == "0.3" and wire.jsonrpc and message.get("kind") != "message":
        yield f"{where}.kind: a 0.3 message says kind 'message', got {message.get('kind')!r}"
    if wire.version == "1.0" and "kind" in message:
        yield f"{where}.kind: 1.0 messages carry no kind discriminator (1.0 A.2.1)"
    yield from part_problems(wire, f"{where}.{wire.message_parts_key}", message.get(wire.message_parts_key))


def timestamp_problem(wire: Wire, value: Any) -> str | None:
    """1.0 5.6.1: ISO 8601 in UTC with a ``Z``; 0.3 6.2: an ISO 8601 date-time."""
    if not isinstance(value, str):
        return f"timestamp {value!r} is not a string"
    if wire.version == "1.0":
        return None if UTC_TIMESTAMP.match(value) else f"timestamp {value!r} is not ISO 8601 UTC ending in Z"
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"timestamp {value!r} is not ISO 8601"
    return None


__all__ = [
    "MAJOR_MINOR",
    "UTC_TIMESTAMP",
    "message_problems",
    "messages_in",
    "non_camel_keys",
    "part_problems",
    "timestamp_problem",
]
