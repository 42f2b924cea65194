"""Tool-call parts: what a defender did, carried in its A2A task.

A defender that acts may show its actions to the client: the arena's ``support-desk``
defenders do when ``ARENA_DEFENDER_TOOL_CALL_PARTS`` is on (off by default, as in most
agents, which keep their tool calls to themselves). Each turn that called tools adds one
artifact named :data:`TOOL_CALLS_ARTIFACT`, declared with the A2A extension
:data:`TOOL_CALLS_EXTENSION` (listed in the card's ``capabilities.extensions`` too), holding one
DataPart per call: a :class:`~arena_core.support_desk.ToolCallRecord` as JSON (tool, call id,
arguments, status, result or error).

The attacker reads these artifacts apart from the reply's text (:func:`records_in_artifact`):
they are evidence of actions for the action judges, not something the defender said.
Without them, the same records come from the trace's ``execute_tool`` spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from a2a.types.a2a_pb2 import Artifact, Part
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value
from pydantic import ValidationError

from arena_core.errors import TargetProtocolError
from arena_core.support_desk import MAX_RECORDS_PER_TURN, ToolCallRecord

TOOL_CALLS_EXTENSION: Final = "urn:a2a-arena:ext:tool-calls:v1"
"""The URI of the tool-calls extension (card, artifact ``extensions``)."""
TOOL_CALLS_ARTIFACT: Final = "tool-calls"
MAX_RECORDS_PER_ARTIFACT: Final = 100


def artifacts_of(records: Sequence[ToolCallRecord]) -> list[list[ToolCallRecord]]:
    """``records`` in artifacts of at most :data:`MAX_RECORDS_PER_ARTIFACT` each, in order."""
    step = MAX_RECORDS_PER_ARTIFACT
    return [list(records[start : start + step]) for start in range(0, len(records), step)]


def tool_call_parts(records: Sequence[ToolCallRecord]) -> list[Part]:
    """One DataPart per record."""
    return [
        Part(data=ParseDict(record.model_dump(mode="json"), Value()), media_type="application/json")
        for record in records
    ]


def is_tool_calls_artifact(artifact: Artifact) -> bool:
    """Whether ``artifact`` is declared with the tool-calls extension."""
    return TOOL_CALLS_EXTENSION in artifact.extensions


def records_in_artifact(artifact: Artifact) -> list[ToolCallRecord]:
    """The records of a tool-calls artifact.

    Raises:
        TargetProtocolError: a part is not a record (the defender declared the extension and
            broke it; evidence that does not read is never read as "no action").
    """
    records: list[ToolCallRecord] = []
    for position, part in enumerate(artifact.parts, start=1):
        if position > MAX_RECORDS_PER_ARTIFACT:
            raise TargetProtocolError(
                f"the defender's tool-calls artifact holds more than {MAX_RECORDS_PER_ARTIFACT} records"
            )
        if part.WhichOneof("content") != "data":
            raise TargetProtocolError(f"part {position} of the defender's tool-calls artifact is not data")
        try:
            records.append(ToolCallRecord.model_validate(MessageToDict(part.data)))
        except ValidationError as exc:
            raise TargetProtocolError(
                f"part {position} of the defender's tool-calls artifact is not a tool-call record "
                f"({exc.error_count()} problem(s), first: {exc.errors()[0]['msg']})"
            ) from exc
    return records


def record_dicts(records: Iterable[ToolCallRecord]) -> list[dict[str, Any]]:
    """Records as JSON objects (for transcripts and results)."""
    return [record.model_dump(mode="json", exclude_none=True) for record in records]


__all__ = [
    "MAX_RECORDS_PER_ARTIFACT",
    "MAX_RECORDS_PER_TURN",
    "TOOL_CALLS_ARTIFACT",
    "TOOL_CALLS_EXTENSION",
    "artifacts_of",
    "is_tool_calls_artifact",
    "record_dicts",
    "records_in_artifact",
    "tool_call_parts",
]
