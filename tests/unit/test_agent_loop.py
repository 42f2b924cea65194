"""AgentLoop against the real scripted model server, in process over httpx.ASGITransport.

The scripted engine (see arena_model.scripted_engine) calls the first offered
tool, with arguments built from its schema, on every turn until a tool result
contains "[[stop]]"; then it answers "done". Without tools it echoes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
import pytest_asyncio

from arena_core.errors import ArenaError, TargetUnreachableError, ToolInputError
from arena_core.llm.agent_loop import AgentLoop, Tool, ToolResult
from arena_core.llm.chat_model import ChatModel, ChatReply, Message, ToolCall
from arena_core.llm.usage import TokenUsage
from arena_core.settings import ModelConfig
from arena_model.app import create_app
from arena_model.scripted_engine import DEFAULT_TOOL_TEXT, ScriptedEngine

SPEAK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "loud": {"type": "boolean"}},
    "required": ["text"],
}
SPEAK_ARGUMENTS = {"text": DEFAULT_TOOL_TEXT, "loud": False}


class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests to the app and keeps each chat request body, to see what the model got."""

    def __init__(self, app: Any) -> None:
        self._inner = httpx.ASGITransport(app=app)
        self.bodies: list[dict[str, Any]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        self.bodies.append(json.loads(body))
        return await self._inner.handle_async_request(request)


class Wire:
    def __init__(self, transport: RecordingTransport, model: ChatModel) -> None:
        self.transport = transport
        self.model = model

    @property
    def sent(self) -> list[list[dict[str, Any]]]:
        """The messages of every chat request, in order."""
        return [body["messages"] for body in self.transport.bodies]


@pytest_asyncio.fixture
async def wire() -> AsyncIterator[Wire]:
    app = create_app(ScriptedEngine(mode="echo"))
    transport = RecordingTransport(app)
    http = httpx.AsyncClient(transport=transport)
    config = ModelConfig(
        model_id="llamacpp:scripted", base_url="http://model/v1", timeout_s=10, max_retries=0, embedded=True
    )
    model = ChatModel.from_config(config, client_args={"http_client": http})
    yield Wire(transport, model)
    await http.aclose()


class Handler:
    """A tool handler that returns (or raises) scripted outcomes and records its arguments."""

    def __init__(self, *outcomes: ToolResult | BaseException) -> None:
        self._outcomes = list(outcomes)
        self.received: list[dict[str, Any]] = []

    async def __call__(self, arguments: Mapping[str, Any]) -> ToolResult:
        self.received.append(dict(arguments))
        outcome = self._outcomes.pop(0) if len(self._outcomes) > 1 else self._outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


def speak_tool(handler: Handler) -> Tool:
    return Tool(name="speak", description="Say something", parameters=SPEAK_SCHEMA, handler=handler)


def _start(text: str = "hello there") -> list[Message]:
    return [{"role": "user", "content": text}]


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.asyncio
async def test_answers_without_tools(wire: Wire) -> None:
    run = await AgentLoop(wire.model, []).run(_start())
    assert run.stop_reason == "answered"
    assert run.final_text == '[scripted] heard 1 user message(s): "hello there"'
    assert run.steps == 1
    assert (run.tool_calls, run.tool_errors) == (0, 0)
    assert run.messages == [*_start(), {"role": "assistant", "content": run.final_text}]
    assert "tools" not in wire.transport.bodies[0]


@pytest.mark.asyncio
async def test_tool_called_and_result_fed_back(wire: Wire) -> None:
    handler = Handler(ToolResult("[[stop]] noted"))
    run = await AgentLoop(wire.model, [speak_tool(handler)]).run(_start())
    assert handler.received == [SPEAK_ARGUMENTS]
    assert run.stop_reason == "answered"
    assert run.final_text == "done"
    assert run.steps == 2
    assert (run.tool_calls, run.tool_errors) == (1, 0)
    assert run.messages == [
        *_start(),
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "speak", "arguments": json.dumps(SPEAK_ARGUMENTS)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "[[stop]] noted"},
        {"role": "assistant", "content": "done"},
    ]
    assert wire.sent[1][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "[[stop]] noted"}
    assert wire.transport.bodies[0]["tools"] == [speak_tool(handler).spec()]


@pytest.mark.asyncio
async def test_tool_stop_ends_the_run(wire: Wire) -> None:
    handler = Handler(ToolResult("first"), ToolResult("enough", stop=True))
    run = await AgentLoop(wire.model, [speak_tool(handler)]).run(_start())
    assert run.stop_reason == "tool_stop"
    assert run.steps == 2
    assert run.final_text == ""
    assert (run.tool_calls, run.tool_errors) == (2, 0)
    assert run.messages[-1] == {"role": "tool", "tool_call_id": "call_2", "content": "enough"}
    assert len(wire.transport.bodies) == 2  # the model is not asked again after a stop


@pytest.mark.asyncio
async def test_max_steps_reached(wire: Wire) -> None:
    handler = Handler(ToolResult("keep going"))
    run = await AgentLoop(wire.model, [speak_tool(handler)], max_steps=3).run(_start())
    assert run.stop_reason == "max_steps"
    assert run.steps == 3
    assert run.final_text == ""
    assert (run.tool_calls, run.tool_errors) == (3, 0)
    assert len(handler.received) == 3
    assert [m["tool_call_id"] for m in run.messages if m["role"] == "tool"] == ["call_1", "call_2", "call_3"]
    assert len(wire.transport.bodies) == 3


@pytest.mark.parametrize(
    ("failure", "error_text"),
    [
        pytest.param(ToolInputError("text must not be empty"), "error: text must not be empty", id="input"),
        pytest.param(
            KeyError("boom"),
            "error: tool 'speak' failed: KeyError: 'boom'",
            id="plain-exception",
        ),
    ],
)
@pytest.mark.asyncio
async def test_tool_failure_is_returned_to_the_model(wire: Wire, failure: Exception, error_text: str) -> None:
    handler = Handler(failure, ToolResult("[[stop]] fine now"))
    run = await AgentLoop(wire.model, [speak_tool(handler)]).run(_start())
    assert run.stop_reason == "answered"
    assert run.final_text == "done"
    assert (run.tool_calls, run.tool_errors) == (2, 1)
    error_message = {"role": "tool", "tool_call_id": "call_1", "content": error_text}
    assert run.messages[2] == error_message
    # The model saw the error text as the tool result and carried on with the next call.
    assert wire.sent[1][-1] == error_message
    assert run.messages[3]["tool_calls"][0]["id"] == "call_2"


@pytest.mark.asyncio
async def test_tool_error_is_echoed_when_tools_are_no_longer_offered(wire: Wire) -> None:
    # With tools offered the scripted engine always calls again; its echo of a tool result
    # shows only without tools. Continue the failed run's history in a tool-less loop.
    handler = Handler(ToolInputError("text must not be empty"))
    first = await AgentLoop(wire.model, [speak_tool(handler)], max_steps=1).run(_start())
    assert first.messages[-1]["content"] == "error: text must not be empty"
    second = await AgentLoop(wire.model, []).run(first.messages)
    assert second.final_text == "[scripted] tool said: error: text must not be empty"


@pytest.mark.asyncio
async def test_arena_error_from_a_tool_propagates(wire: Wire) -> None:
    handler = Handler(TargetUnreachableError("target http://x is not reachable"))
    loop = AgentLoop(wire.model, [speak_tool(handler)])
    with pytest.raises(TargetUnreachableError, match="not reachable"):
        await loop.run(_start())
    assert len(wire.transport.bodies) == 1


@pytest.mark.asyncio
async def test_usage_is_summed_across_steps(wire: Wire) -> None:
    handler = Handler(ToolResult("[[stop]] ok"))
    run = await AgentLoop(wire.model, [speak_tool(handler)]).run(_start("hello there"))
    # Scripted usage is word counts: prompt = words of every message sent; completion =
    # tool name + JSON arguments for the call, then "done".
    first_prompt = _words("hello there")
    second_prompt = first_prompt + _words("[[stop]] ok")
    first_completion = _words("speak") + _words(json.dumps(SPEAK_ARGUMENTS))
    assert run.usage == TokenUsage(
        prompt_tokens=first_prompt + second_prompt,
        completion_tokens=first_completion + _words("done"),
        calls=2,
    )


@pytest.mark.asyncio
async def test_options_are_passed_to_every_model_call(wire: Wire) -> None:
    handler = Handler(ToolResult("[[stop]]"))
    loop = AgentLoop(wire.model, [speak_tool(handler)], temperature=0.3, max_tokens=64, seed=9)
    await loop.run(_start())
    assert len(wire.transport.bodies) == 2
    for body in wire.transport.bodies:
        # llamacpp is called directly (ADR 0013), with the classic max_tokens llama.cpp servers know.
        assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 64, 9)


@pytest.mark.asyncio
async def test_run_does_not_change_the_callers_messages(wire: Wire) -> None:
    messages = _start()
    await AgentLoop(wire.model, [speak_tool(Handler(ToolResult("[[stop]]")))]).run(messages)
    assert messages == _start()


@pytest.mark.parametrize("max_steps", [0, -1])
def test_max_steps_below_one_is_rejected(max_steps: int) -> None:
    with pytest.raises(ValueError, match="max_steps must be at least 1"):
        AgentLoop(CannedModel([]), [], max_steps=max_steps)


# --- crafted replies: what the scripted engine never sends -------------------------------------


class CannedModel(ChatModel):
    """Returns crafted replies in order and records the history it was given."""

    def __init__(self, replies: Sequence[ChatReply]) -> None:
        # No provider: this stand-in never calls one.
        self.model_id = "canned:model"
        self._replies = list(replies)
        self.seen: list[list[Message]] = []

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatReply:
        self.seen.append([dict(message) for message in messages])
        return self._replies.pop(0)


def _reply(*calls: ToolCall, content: str = "", prompt: int = 0, completion: int = 0) -> ChatReply:
    usage = TokenUsage(prompt_tokens=prompt, completion_tokens=completion, calls=1)
    return ChatReply(content, tuple(calls), usage, "canned:model", "tool_calls" if calls else "stop")


@pytest.mark.parametrize(
    ("call", "error_text"),
    [
        pytest.param(
            ToolCall("c1", "shout", "{}"),
            "error: no tool named 'shout'; available: speak",
            id="unknown-tool",
        ),
        pytest.param(
            ToolCall("c1", "speak", '{"text": "hi"'),
            "error: arguments are not valid JSON (Expecting ',' delimiter)",
            id="malformed-json",
        ),
        pytest.param(
            ToolCall("c1", "speak", '["hi"]'),
            "error: arguments must be a JSON object",
            id="not-an-object",
        ),
    ],
)
@pytest.mark.asyncio
async def test_bad_tool_call_is_reported_to_the_model(call: ToolCall, error_text: str) -> None:
    handler = Handler(ToolResult("never"))
    model = CannedModel([_reply(call), _reply(content="sorry")])
    run = await AgentLoop(model, [speak_tool(handler)]).run(_start())
    assert handler.received == []
    assert (run.tool_calls, run.tool_errors) == (1, 1)
    assert run.stop_reason == "answered"
    assert run.final_text == "sorry"
    assert model.seen[1][-1] == {"role": "tool", "tool_call_id": "c1", "content": error_text}


@pytest.mark.asyncio
async def test_unknown_tool_with_no_tools_says_none() -> None:
    model = CannedModel([_reply(ToolCall("c1", "speak", "{}")), _reply(content="ok")])
    run = await AgentLoop(model, []).run(_start())
    assert run.messages[2]["content"] == "error: no tool named 'speak'; available: none"


@pytest.mark.asyncio
async def test_empty_arguments_mean_an_empty_object() -> None:
    handler = Handler(ToolResult("fine"))
    model = CannedModel([_reply(ToolCall("c1", "speak", "")), _reply(content="ok")])
    run = await AgentLoop(model, [speak_tool(handler)]).run(_start())
    assert handler.received == [{}]
    assert run.tool_errors == 0


@pytest.mark.asyncio
async def test_every_call_of_one_reply_runs_and_any_stop_ends() -> None:
    handler = Handler(ToolResult("stop here", stop=True), ToolResult("second"))
    model = CannedModel([_reply(ToolCall("a", "speak", "{}"), ToolCall("b", "speak", "{}"), content="two")])
    run = await AgentLoop(model, [speak_tool(handler)]).run(_start())
    assert run.stop_reason == "tool_stop"
    assert run.final_text == "two"
    assert run.tool_calls == 2
    assert [m["content"] for m in run.messages if m["role"] == "tool"] == ["stop here", "second"]


@pytest.mark.asyncio
async def test_usage_is_summed_over_crafted_replies() -> None:
    handler = Handler(ToolResult("fine"))
    model = CannedModel(
        [
            _reply(ToolCall("a", "speak", "{}"), prompt=10, completion=2),
            _reply(ToolCall("b", "speak", "{}"), prompt=15, completion=3),
            _reply(content="end", prompt=20, completion=1),
        ]
    )
    run = await AgentLoop(model, [speak_tool(handler)]).run(_start())
    assert run.usage == TokenUsage(prompt_tokens=45, completion_tokens=6, calls=3)
    assert run.steps == 3


def test_arena_error_is_not_a_tool_input_error() -> None:
    # ToolInputError is reported to the model; any other ArenaError ends the run.
    assert issubclass(ToolInputError, ArenaError)
    assert not issubclass(TargetUnreachableError, ToolInputError)
