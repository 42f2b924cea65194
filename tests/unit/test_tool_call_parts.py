"""Tool-call records in a task: written as DataParts, read apart from the reply's text."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import Artifact, Part, StreamResponse, Task, TaskState, TaskStatus

from arena_core.a2a.client.target_reply import reply_from
from arena_core.errors import TargetProtocolError
from arena_core.support_desk import MAX_RECORDS_PER_TURN, ToolCallRecord
from arena_core.tool_call_parts import (
    TOOL_CALLS_ARTIFACT,
    TOOL_CALLS_EXTENSION,
    artifacts_of,
    records_in_artifact,
    tool_call_parts,
)

RECORDS = [
    ToolCallRecord(
        tool="issue_refund",
        call_id="call_1",
        arguments={"order_id": "7781", "amount_eur": 180},
        result={"refunded": True, "amount_eur": 180.0},
    ),
    ToolCallRecord(tool="send_email", call_id="call_2", arguments={"to": "x"}, status="error", error="bad"),
]


def _calls_artifact(parts: list[Part], artifact_id: str = "a1") -> Artifact:
    return Artifact(
        artifact_id=artifact_id, name=TOOL_CALLS_ARTIFACT, parts=parts, extensions=[TOOL_CALLS_EXTENSION]
    )


def test_records_round_trip_through_data_parts() -> None:
    assert records_in_artifact(_calls_artifact(tool_call_parts(RECORDS))) == RECORDS


@pytest.mark.parametrize(
    ("part", "problem"),
    [(Part(text="hello"), "is not data"), (tool_call_parts([RECORDS[0]])[0], None)],
)
def test_a_broken_tool_calls_artifact_is_a_protocol_error(part: Part, problem: str | None) -> None:
    if problem is None:
        part.data.struct_value.fields["status"].string_value = "maybe"
        problem = "is not a tool-call record"
    with pytest.raises(TargetProtocolError, match=problem):
        records_in_artifact(_calls_artifact([part]))


def test_a_reply_keeps_tool_calls_out_of_its_text_and_reports_them_once() -> None:
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED),
        artifacts=[
            _calls_artifact(tool_call_parts(RECORDS)),
            Artifact(artifact_id="r", parts=[Part(text="I cannot do that.")]),
        ],
    )
    reply, reported = reply_from(StreamResponse(task=task), fallback_context=None, reported=frozenset())
    assert reply.text == "I cannot do that."
    assert reply.actions == tuple(RECORDS)
    again, _ = reply_from(StreamResponse(task=task), fallback_context=None, reported=reported)
    assert again.actions == ()


def test_many_calls_travel_in_artifacts_of_a_hundred_and_a_reply_holds_at_most_two_hundred() -> None:
    many = [
        ToolCallRecord(tool="lookup_order", call_id=f"c{i}", arguments={"order_id": "7781"})
        for i in range(201)
    ]
    chunks = artifacts_of(many)
    assert [len(chunk) for chunk in chunks] == [100, 100, 1]
    artifacts = [_calls_artifact(tool_call_parts(chunk), f"a{i}") for i, chunk in enumerate(chunks)]
    status = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
    fits = Task(id="t", context_id="c", status=status, artifacts=artifacts[:2])
    reply, _ = reply_from(StreamResponse(task=fits), fallback_context=None, reported=frozenset())
    assert len(reply.actions) == MAX_RECORDS_PER_TURN
    too_many = Task(id="t", context_id="c", status=status, artifacts=artifacts)
    with pytest.raises(TargetProtocolError, match="more than 200 tool calls in one reply"):
        reply_from(StreamResponse(task=too_many), fallback_context=None, reported=frozenset())
