"""execute_tool spans: the GenAI attributes of a tool call, content only when capture is on.

Each case runs in its own interpreter: a process has one global tracer provider.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

PROBE = """
import asyncio, json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from arena_core.llm.agent_loop import AgentLoop, Tool, ToolResult
from arena_core.llm.chat_model import ChatReply, ToolCall
from arena_core.llm.usage import TokenUsage

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

class Model:
    model_id = "canned:model"
    def __init__(self):
        calls = (ToolCall("call-1", "refund", '{"amount": 120}'),
                 ToolCall("call-2", "refund", '{"amount": -1}'))
        self.replies = [ChatReply("", calls, TokenUsage(), "canned:model", "tool_calls"),
                        ChatReply("I cannot do that.", (), TokenUsage(), "canned:model", "stop")]
    async def complete(self, messages, **_):
        return self.replies.pop(0)

async def refund(arguments):
    from arena_core.errors import ToolInputError
    if arguments["amount"] < 0:
        raise ToolInputError("amount must be positive")
    return ToolResult('{"refunded": true}')

tool = Tool("refund", "Refund.", {"type": "object"}, refund)
asyncio.run(AgentLoop(Model(), [tool]).run([{"role": "user", "content": "hi"}]))
print(json.dumps([{"name": s.name, "status": s.status.status_code.name, "attributes": dict(s.attributes)}
                  for s in exporter.get_finished_spans()]))
"""


def tool_spans(capture: str | None) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if capture is not None:
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = capture
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    spans: list[dict[str, Any]] = json.loads(done.stdout)
    return [span for span in spans if span["name"].startswith("execute_tool")]


def test_a_tool_span_names_the_tool_and_the_call_and_keeps_content_out() -> None:
    ok, failed = tool_spans(None)
    assert ok["name"] == "execute_tool refund"
    assert ok["attributes"] == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "refund",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call-1",
    }
    assert ok["status"] == "UNSET"
    assert failed["attributes"]["gen_ai.tool.call.id"] == "call-2"
    assert failed["status"] == "ERROR"


@pytest.mark.parametrize("capture", ["true", "SPAN_ONLY", "span_and_event"])
def test_with_content_capture_the_arguments_and_result_are_recorded(capture: str) -> None:
    ok, failed = tool_spans(capture)
    assert json.loads(ok["attributes"]["gen_ai.tool.call.arguments"]) == {"amount": 120}
    assert ok["attributes"]["gen_ai.tool.call.result"] == '{"refunded": true}'
    assert json.loads(failed["attributes"]["gen_ai.tool.call.arguments"]) == {"amount": -1}
    assert "gen_ai.tool.call.result" not in failed["attributes"]


@pytest.mark.parametrize("capture", ["false", "EVENT_ONLY", "NO_CONTENT"])
def test_capture_values_that_keep_content_off_spans(capture: str) -> None:
    ok, _ = tool_spans(capture)
    assert "gen_ai.tool.call.arguments" not in ok["attributes"]
