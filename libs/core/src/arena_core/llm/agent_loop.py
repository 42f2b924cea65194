"""A small tool-calling agent loop on top of :class:`ChatModel`.

The loop asks the model, runs the tools it calls, feeds the results back and
repeats until the model answers without tool calls, a tool asks to stop, or
``max_steps`` model calls have been made. Tool failures never escape: the
error text is returned to the model as the tool result, so it can correct
itself. Unknown tools and malformed arguments are reported the same way.

A handler that records what it did can read the id the model gave the call with
:func:`current_tool_call_id` while it runs.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry.context import Context
from opentelemetry.trace import StatusCode

from arena_core.errors import ArenaError, ToolInputError
from arena_core.llm.chat_model import ChatModel, ChatReply, Message, ToolCall
from arena_core.llm.usage import TokenUsage
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import capture_message_content, tracer


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returns to the model. ``stop`` ends the loop after this step."""

    content: str
    stop: bool = False


ToolHandler = Callable[[Mapping[str, Any]], Awaitable[ToolResult]]

_CALL_ID: ContextVar[str] = ContextVar("arena_tool_call_id", default="")


def current_tool_call_id() -> str:
    """The id of the tool call whose handler is running ('' outside a handler, or when the
    model gave none)."""
    return _CALL_ID.get()


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model may call.

    ``parameters`` is the JSON schema of the arguments object; build it once.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: ToolHandler

    def spec(self) -> dict[str, Any]:
        """The OpenAI function-tool declaration."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


StopReason = Literal["answered", "tool_stop", "max_steps"]


@dataclass(slots=True)
class AgentRun:
    """The outcome of :meth:`AgentLoop.run`."""

    messages: list[Message]
    final_text: str
    stop_reason: StopReason
    steps: int
    usage: TokenUsage = field(default_factory=TokenUsage)
    tool_calls: int = 0
    tool_errors: int = 0


class AgentLoop:
    """Runs a model with tools for at most ``max_steps`` model calls."""

    def __init__(
        self,
        model: ChatModel,
        tools: Sequence[Tool],
        *,
        max_steps: int = 10,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self._model = model
        self._tools = {tool.name: tool for tool in tools}
        # Declarations are built once: rebuilding them per call is measurable.
        self._specs = [tool.spec() for tool in tools]
        self._max_steps = max_steps
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._seed = seed

    async def run(self, messages: Sequence[Message]) -> AgentRun:
        """Run from ``messages`` (system prompt first) until the loop ends.

        Model failures propagate as :class:`~arena_core.errors.ModelError`.
        """
        history: list[Message] = list(messages)
        usage = TokenUsage()
        calls = errors = 0
        for step in range(1, self._max_steps + 1):
            reply: ChatReply = await self._model.complete(
                history,
                tools=self._specs or None,
                temperature=self._temperature,
                max_tokens=self._max_tokens,
                seed=self._seed,
            )
            usage = usage + reply.usage
            history.append(reply.as_message())
            if not reply.tool_calls:
                return AgentRun(history, reply.content, "answered", step, usage, calls, errors)
            stop = False
            for call in reply.tool_calls:
                calls += 1
                result, failed = await self._invoke(call)
                errors += failed
                history.append({"role": "tool", "tool_call_id": call.id, "content": result.content})
                stop = stop or result.stop
            if stop:
                return AgentRun(history, reply.content, "tool_stop", step, usage, calls, errors)
        return AgentRun(history, "", "max_steps", self._max_steps, usage, calls, errors)

    async def _invoke(self, call: ToolCall) -> tuple[ToolResult, bool]:
        return await traced_tool_call(self._tools, call.name, call.id, call.arguments)


async def traced_tool_call(
    tools: Mapping[str, Tool],
    name: str,
    call_id: str | None,
    raw_arguments: str | None,
    *,
    context: Context | None = None,
) -> tuple[ToolResult, bool]:
    """Run one call of tool ``name`` from ``tools`` as an ``execute_tool`` span (a child of
    ``context``'s span when given, else of the current one); return its result and whether
    it failed.

    The span carries the GenAI attributes: the tool's name and type, the call id and, with
    content capture on, the arguments and the result; a failed call sets the span's status.
    Unknown tools, arguments that are not a JSON object and :class:`ToolInputError` from the
    handler are failed calls the model is told about; any other :class:`ArenaError` ends the run.
    """
    attributes = {
        attrs.GEN_AI_OPERATION_NAME: attrs.OPERATION_EXECUTE_TOOL,
        attrs.GEN_AI_TOOL_NAME: name,
        attrs.GEN_AI_TOOL_TYPE: "function",
    }
    if call_id:
        attributes[attrs.GEN_AI_TOOL_CALL_ID] = call_id
    capture = capture_message_content()
    if capture:
        attributes[attrs.GEN_AI_TOOL_CALL_ARGUMENTS] = raw_arguments or "{}"
    with tracer().start_as_current_span(
        f"execute_tool {name}", context=context, attributes=attributes
    ) as span:
        result, failed = await _run_tool(tools, name, call_id or "", raw_arguments)
        if failed:
            span.set_status(StatusCode.ERROR, result.content[:200])
        elif capture:
            span.set_attribute(attrs.GEN_AI_TOOL_CALL_RESULT, result.content)
        return result, failed


async def _run_tool(
    tools: Mapping[str, Tool], name: str, call_id: str, raw_arguments: str | None
) -> tuple[ToolResult, bool]:
    tool = tools.get(name)
    if tool is None:
        names = ", ".join(sorted(tools)) or "none"
        return ToolResult(f"error: no tool named '{name}'; available: {names}"), True
    try:
        arguments = json.loads(raw_arguments or "{}")
    except json.JSONDecodeError as exc:
        return ToolResult(f"error: arguments are not valid JSON ({exc.msg})"), True
    if not isinstance(arguments, dict):
        return ToolResult("error: arguments must be a JSON object"), True
    token = _CALL_ID.set(call_id)
    try:
        return await tool.handler(arguments), False
    except ToolInputError as exc:
        return ToolResult(f"error: {exc.message}"), True
    except ArenaError as exc:
        # Infrastructure failures (target down, model down) end the run.
        raise exc
    except Exception as exc:  # noqa: BLE001 - the model gets to see tool bugs
        return ToolResult(f"error: tool '{name}' failed: {type(exc).__name__}: {exc}"), True
    finally:
        _CALL_ID.reset(token)


__all__ = [
    "AgentLoop",
    "AgentRun",
    "StopReason",
    "Tool",
    "ToolHandler",
    "ToolResult",
    "current_tool_call_id",
    "traced_tool_call",
]
