"""Find the match request in a message to the attacker: a DataPart, JSON text, or a sentence.

:func:`read_match_request` takes, in order: the first DataPart (a ``MatchRequest``); else
the message's text parts, joined, as JSON when the text starts with ``{`` or ``[``; else the
text as a sentence (:func:`~arena_attacker.plain_text_request.parse_plain_text_request`).
A message whose object is ``{"probe": {...}}`` asks for the ``probe`` skill instead
(:func:`read_probe_request`, a :class:`~arena_core.probes.request.ProbeRequest`).

Two kinds of failure, for two kinds of client. A structured request (DataPart or JSON) that
is not valid raises :class:`~arena_core.errors.InvalidInputError` naming every problem: its
sender is a program, and its task fails. A message with nothing to read, or a sentence that
cannot be read one way only, raises
:class:`~arena_attacker.plain_text_request.UnclearRequestError`: its sender is probably a
person or a generic agent, and the attacker asks for input (:func:`is_structured` tells the
two apart for later checks too).
"""

from __future__ import annotations

import json
from typing import Any

from a2a.types.a2a_pb2 import Message
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError

from arena_attacker._validation import validation_problems
from arena_attacker.plain_text_request import UnclearRequestError, parse_plain_text_request
from arena_core.errors import InvalidInputError
from arena_core.match_models import MatchRequest
from arena_core.probes.request import ProbeRequest

MAX_REQUEST_CHARS = 64_000
"""The longest text a request may be (DataParts are bounded by the message limits)."""


def is_structured(message: Message) -> bool:
    """True when ``message`` carries a DataPart, or text that is JSON by its first character."""
    if any(part.HasField("data") for part in message.parts):
        return True
    return _text(message).lstrip().startswith(("{", "["))


def read_probe_request(message: Message) -> ProbeRequest | None:
    """The probe request in ``message``: a DataPart (or JSON text) ``{"probe": {...}}``; None if none.

    Raises InvalidInputError naming every problem when the ``probe`` object is not valid.
    """
    payload = _structured_payload(message)
    if not isinstance(payload, dict) or set(payload) != {"probe"}:
        return None
    if not isinstance(payload["probe"], dict):
        raise InvalidInputError('the probe request must be a JSON object: {"probe": {"target": URL, ...}}')
    try:
        return ProbeRequest.model_validate(payload["probe"])
    except ValidationError as exc:
        raise InvalidInputError(f"invalid probe request: {validation_problems(exc)}") from exc


def _structured_payload(message: Message) -> Any:
    """The first DataPart's object, else the text parsed as JSON when it looks like JSON; else None."""
    for part in message.parts:
        if part.HasField("data"):
            return MessageToDict(part.data)
    text = _text(message)
    if not text.lstrip().startswith("{") or len(text) > MAX_REQUEST_CHARS:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def read_match_request(message: Message) -> MatchRequest:
    """The match request in ``message`` (see the module doc for the forms and the errors)."""
    payload: Any = None
    for part in message.parts:
        if part.HasField("data"):
            payload = MessageToDict(part.data)
            break
    if payload is None:
        text = _text(message)
        if len(text) > MAX_REQUEST_CHARS:
            raise InvalidInputError(f"the match request is longer than {MAX_REQUEST_CHARS} characters")
        if not text.strip():
            raise UnclearRequestError("the message holds no text and no DataPart")
        if not is_structured(message):
            return parse_plain_text_request(text)
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                "expected a DataPart (or JSON text) with the match request; "
                f"the text part is not JSON ({exc.msg} at char {exc.pos})"
            ) from exc
    if not isinstance(payload, dict):
        raise InvalidInputError("the match request must be a JSON object")
    try:
        return MatchRequest.model_validate(payload)
    except ValidationError as exc:
        raise InvalidInputError(f"invalid match request: {validation_problems(exc)}") from exc


def _text(message: Message) -> str:
    return "\n".join(part.text for part in message.parts if part.HasField("text") and part.text.strip())


__all__ = [
    "MAX_REQUEST_CHARS",
    "UnclearRequestError",
    "is_structured",
    "read_match_request",
    "read_probe_request",
]
