"""OpenAICompatibleClient and ChatModel's direct path for llama.cpp-style servers (provider ``llamacpp``).

Three kinds of server answer here:

* the real scripted model app (``arena_model``), in process over ``httpx.ASGITransport``;
* a fake third-party server (``httpx.MockTransport``) that answers crafted, often malformed,
  responses and records every request, to pin the request on the wire and the parsing;
* a tiny aiohttp server on a loopback socket, for the client's own aiohttp session (the
  production path when no ``http_client`` is given).

Sleeping between retries is injected and only recorded.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio
from aiohttp import test_utils, web
from opentelemetry import context as otel_context
from opentelemetry import trace

from arena_core.errors import ConfigError, ModelRequestError, ModelUnavailableError
from arena_core.llm.chat_model import (
    ChatModel,
    ChatReply,
    RetryPolicy,
    ToolCall,
    _classify,
)
from arena_core.llm.openai_compatible import (
    MAX_ERROR_TEXT,
    MAX_RESPONSE_BYTES,
    ModelHttpError,
    ModelResponseError,
    OpenAICompatibleClient,
    _error_text,
)
from arena_core.llm.usage import TokenUsage
from arena_core.settings import ModelConfig
from arena_model.app import create_app
from arena_model.scripted_engine import DEFAULT_TOOL_TEXT, ScriptedEngine

MODEL_ID = "llamacpp:tiny-model"
BASE = "http://llm.test/v1"
CHAT_URL = "http://llm.test/v1/chat/completions"
HELLO = [{"role": "user", "content": "hello there"}]
SPEAK_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "speak",
        "description": "Say something",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
}

Answer = Callable[[httpx.Request], httpx.Response]


# --- helpers ------------------------------------------------------------------------------------


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def expected_delays(count: int, *, seed: int = 7) -> list[float]:
    policy = RetryPolicy(rng=random.Random(seed))
    return [policy.delay(attempt) for attempt in range(1, count + 1)]


def completion(
    content: str | None = "hi from the fake",
    *,
    model: object = "tiny-model",
    prompt_tokens: object = 7,
    completion_tokens: object = 3,
    finish_reason: object = "stop",
    tool_calls: object = None,
) -> dict[str, Any]:
    """A chat-completions JSON object as an OpenAI-compatible server sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": 10,
        },
    }


def answer_json(payload: object, status: int = 200) -> Answer:
    return lambda request: httpx.Response(status, json=payload)


def answer_bytes(content: bytes, status: int = 200, content_type: str = "application/json") -> Answer:
    return lambda request: httpx.Response(status, content=content, headers={"Content-Type": content_type})


def openai_error(status: int, message: str) -> Answer:
    return answer_json({"error": {"message": message, "type": "server_error", "code": status}}, status)


def raise_error(error_type: type[httpx.TransportError], text: str) -> Answer:
    def answer(request: httpx.Request) -> httpx.Response:
        raise error_type(text, request=request)

    return answer


class FakeServer:
    """A third-party OpenAI-compatible server: answers the scripted outcomes in turn (the last
    one repeats) and keeps every request."""

    def __init__(self) -> None:
        self.answers: list[Answer] = [answer_json(completion())]
        self.requests: list[httpx.Request] = []
        self.http = httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    def script(self, *answers: Answer) -> None:
        self.answers = list(answers)

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return answer(request)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(request.content) for request in self.requests]

    def model(
        self, sleep: RecordingSleep, *, max_retries: int = 2, model_id: str = MODEL_ID, base_url: str = BASE
    ) -> ChatModel:
        """A ChatModel on the direct client, with a seeded retry policy."""
        client = OpenAICompatibleClient(base_url, http_client=self.http)
        return ChatModel(
            client,
            model_id,
            timeout_s=4.0,
            retry=RetryPolicy(max_retries=max_retries, rng=random.Random(7)),
            sleep=sleep,
        )

    def from_config(self, base_url: str | None = BASE, *, model_id: str = MODEL_ID) -> ChatModel:
        config = ModelConfig(
            model_id=model_id, base_url=base_url, timeout_s=4.0, max_retries=0, embedded=False
        )
        return ChatModel.from_config(config, client_args={"http_client": self.http})


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeServer]:
    server = FakeServer()
    yield server
    await server.http.aclose()


@pytest.fixture
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMACPP_API_KEY", raising=False)
    monkeypatch.delenv("LLAMACPP_API_BASE", raising=False)


async def complete_with(fake: FakeServer, *answers: Answer) -> ChatReply:
    """Complete HELLO once (no retries) against ``answers``."""
    fake.script(*answers)
    return await fake.model(RecordingSleep(), max_retries=0).complete(HELLO)


# --- the request on the wire --------------------------------------------------------------------


@pytest.mark.parametrize("base_url", [BASE, BASE + "/"])
@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_request_posts_the_chat_body_to_chat_completions(fake: FakeServer, base_url: str) -> None:
    model = fake.from_config(base_url)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "héllo"}]
    await model.complete(messages, tools=[SPEAK_TOOL], temperature=0.2, max_tokens=50, seed=3)
    [request] = fake.requests
    assert request.method == "POST"
    assert str(request.url) == CHAT_URL
    assert request.headers["Content-Type"] == "application/json"
    assert request.headers["Accept"] == "application/json"
    assert json.loads(request.content) == {
        "model": "tiny-model",
        "messages": messages,
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 3,
        "tools": [SPEAK_TOOL],
    }


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_unset_options_and_empty_tools_are_not_sent(fake: FakeServer) -> None:
    await fake.from_config().complete(HELLO, tools=[])
    assert fake.bodies == [{"model": "tiny-model", "messages": HELLO}]


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_the_model_name_is_everything_after_the_provider(fake: FakeServer) -> None:
    await fake.from_config(model_id="llamacpp:org/model:Q4_K_M").complete(HELLO)
    assert fake.bodies[0]["model"] == "org/model:Q4_K_M"


@pytest.mark.parametrize(
    ("api_key", "authorization"),
    [
        pytest.param("sk-local", "Bearer sk-local", id="key-set"),
        pytest.param(None, None, id="key-unset"),
        pytest.param("", None, id="key-empty"),
    ],
)
@pytest.mark.asyncio
async def test_authorization_is_sent_only_with_an_api_key(
    fake: FakeServer, monkeypatch: pytest.MonkeyPatch, api_key: str | None, authorization: str | None
) -> None:
    if api_key is None:
        monkeypatch.delenv("LLAMACPP_API_KEY", raising=False)
    else:
        monkeypatch.setenv("LLAMACPP_API_KEY", api_key)
    await fake.from_config().complete(HELLO)
    assert fake.requests[0].headers.get("Authorization") == authorization


@pytest.mark.parametrize(
    ("config_base", "env_base", "url"),
    [
        pytest.param(
            "http://configured:9000/v1",
            "http://env:7000/v1",
            "http://configured:9000/v1/chat/completions",
            id="config-wins",
        ),
        pytest.param(
            None, "http://env:7000/v1/", "http://env:7000/v1/chat/completions", id="env-when-no-config"
        ),
        pytest.param(None, None, "http://127.0.0.1:8080/v1/chat/completions", id="default"),
        pytest.param(None, "", "http://127.0.0.1:8080/v1/chat/completions", id="empty-env-is-unset"),
    ],
)
@pytest.mark.asyncio
async def test_base_url_comes_from_config_then_environment_then_default(
    fake: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    config_base: str | None,
    env_base: str | None,
    url: str,
) -> None:
    monkeypatch.delenv("LLAMACPP_API_KEY", raising=False)
    if env_base is None:
        monkeypatch.delenv("LLAMACPP_API_BASE", raising=False)
    else:
        monkeypatch.setenv("LLAMACPP_API_BASE", env_base)
    await fake.from_config(config_base).complete(HELLO)
    assert str(fake.requests[0].url) == url


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_trace_context_goes_to_the_server(fake: FakeServer) -> None:
    trace_id = 0x0AF7651916CD43DD8448EB211C80319C
    parent = trace.SpanContext(
        trace_id=trace_id, span_id=0xB7AD6B7169203331, is_remote=True, trace_flags=trace.TraceFlags(1)
    )
    token = otel_context.attach(trace.set_span_in_context(trace.NonRecordingSpan(parent)))
    try:
        await fake.from_config().complete(HELLO)
    finally:
        otel_context.detach(token)
    version, sent_trace_id, _span_id, flags = fake.requests[0].headers["traceparent"].split("-")
    assert (version, sent_trace_id, flags) == ("00", trace.format_trace_id(trace_id), "01")


# --- replies from the real scripted model server ------------------------------------------------


class ScriptedWire:
    """The scripted model app behind an httpx client; keeps each request body."""

    def __init__(self) -> None:
        self._inner = httpx.ASGITransport(app=create_app(ScriptedEngine(mode="echo")))
        self.bodies: list[dict[str, Any]] = []
        self.http = httpx.AsyncClient(transport=httpx.MockTransport(self._handle))

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(await request.aread()))
        return await self._inner.handle_async_request(request)

    def model(
        self,
        *,
        model_id: str = "llamacpp:scripted",
        base_url: str = "http://model/v1",
        max_retries: int = 0,
        sleep: RecordingSleep | None = None,
    ) -> ChatModel:
        config = ModelConfig(
            model_id=model_id, base_url=base_url, timeout_s=10, max_retries=max_retries, embedded=True
        )
        return ChatModel.from_config(
            config, sleep=sleep or RecordingSleep(), client_args={"http_client": self.http}
        )


@pytest_asyncio.fixture
async def scripted() -> AsyncIterator[ScriptedWire]:
    wire = ScriptedWire()
    yield wire
    await wire.http.aclose()


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_scripted_server_echo_reply_has_content_usage_and_model(scripted: ScriptedWire) -> None:
    reply = await scripted.model().complete(HELLO, temperature=0.0, max_tokens=64, seed=1)
    text = '[scripted] heard 1 user message(s): "hello there"'
    assert reply == ChatReply(
        content=text,
        tool_calls=(),
        usage=TokenUsage(prompt_tokens=2, completion_tokens=len(text.split()), calls=1),
        model_id="llamacpp:scripted",
        finish_reason="stop",
        attempts=1,
    )
    assert scripted.bodies == [
        {"model": "scripted", "messages": HELLO, "temperature": 0.0, "max_tokens": 64, "seed": 1}
    ]


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_scripted_server_names_the_model_that_answered(scripted: ScriptedWire) -> None:
    reply = await scripted.model(model_id="llamacpp:smollm2-q8.gguf").complete(HELLO)
    assert scripted.bodies[0]["model"] == "smollm2-q8.gguf"
    assert reply.model_id == "llamacpp:scripted"


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_scripted_server_tool_call_is_parsed(scripted: ScriptedWire) -> None:
    reply = await scripted.model().complete(HELLO, tools=[SPEAK_TOOL])
    assert reply.content == ""
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls == (
        ToolCall(id="call_1", name="speak", arguments=json.dumps({"text": DEFAULT_TOOL_TEXT})),
    )
    assert reply.as_message()["content"] is None


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_scripted_server_validation_error_is_not_retried(scripted: ScriptedWire) -> None:
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError) as caught:
        await scripted.model(max_retries=2, sleep=sleep).complete([])
    message = str(caught.value)
    assert message.startswith("model 'llamacpp:scripted' rejected the request: HTTP 400: Invalid request: ")
    assert "messages" in message
    assert isinstance(caught.value.__cause__, ModelHttpError)
    assert len(scripted.bodies) == 1
    assert sleep.delays == []


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_scripted_server_wrong_base_path_is_a_404_request_error(scripted: ScriptedWire) -> None:
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError) as caught:
        await scripted.model(base_url="http://model/api", max_retries=2, sleep=sleep).complete(HELLO)
    assert str(caught.value) == (
        "model 'llamacpp:scripted' rejected the request: HTTP 404: Not Found (POST /api/chat/completions)"
    )
    assert sleep.delays == []


# --- malformed answers from a third-party server ------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        pytest.param(answer_bytes(b"<html>oops</html>", content_type="text/html"), "is not JSON", id="html"),
        pytest.param(answer_bytes(b""), "is not JSON", id="empty"),
        pytest.param(answer_bytes(b'{"choices": ['), "is not JSON", id="truncated"),
        pytest.param(answer_bytes(b"\xff\xfe\xfa"), "is not JSON", id="not-utf8"),
        pytest.param(answer_json([completion()]), "is not a JSON object", id="list"),
        pytest.param(answer_json("hello"), "is not a JSON object", id="string"),
        pytest.param(answer_bytes(b"null"), "is not a JSON object", id="null"),
    ],
)
@pytest.mark.asyncio
async def test_answer_that_is_not_a_json_object_is_a_request_error_without_retry(
    fake: FakeServer, answer: Answer, reason: str
) -> None:
    fake.script(answer)
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError, match=f"the model server's answer {reason}") as caught:
        await fake.model(sleep).complete(HELLO)
    assert str(caught.value).startswith(f"model '{MODEL_ID}' rejected the request: ")
    assert isinstance(caught.value.__cause__, ModelResponseError)
    assert len(fake.requests) == 1
    assert sleep.delays == []


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        pytest.param({}, "returned no choices", id="no-choices"),
        pytest.param({"choices": None}, "returned no choices", id="null-choices"),
        pytest.param({"choices": []}, "returned no choices", id="empty-choices"),
        pytest.param({"choices": {"0": {}}}, "returned no choices", id="choices-object"),
        pytest.param({"error": {"message": "busy"}}, "returned no choices", id="error-with-200"),
        pytest.param({"choices": [{}]}, "returned a choice without a message", id="no-message"),
        pytest.param({"choices": ["hi"]}, "returned a choice without a message", id="choice-string"),
        pytest.param(
            {"choices": [{"message": None}]}, "returned a choice without a message", id="null-message"
        ),
        pytest.param(
            {"choices": [{"message": "hi"}]}, "returned a choice without a message", id="message-string"
        ),
        pytest.param(
            {"choices": [{"message": {"content": [{"type": "text", "text": "hi"}]}}]},
            "returned non-text content",
            id="content-parts",
        ),
        pytest.param({"choices": [{"message": {"content": 42}}]}, "returned non-text content", id="int"),
        pytest.param(
            {"choices": [{"message": {"content": {"t": 1}}}]}, "returned non-text content", id="obj"
        ),
    ],
)
@pytest.mark.asyncio
async def test_malformed_completion_is_a_request_error_without_retry(
    fake: FakeServer, payload: dict[str, Any], reason: str
) -> None:
    fake.script(answer_json(payload))
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError, match=f"model '{MODEL_ID}' {reason}"):
        await fake.model(sleep).complete(HELLO)
    assert len(fake.requests) == 1
    assert sleep.delays == []


@pytest.mark.parametrize("tool_calls", [5, True])
@pytest.mark.asyncio
async def test_tool_calls_that_are_not_a_list_are_a_request_error(
    fake: FakeServer, tool_calls: object
) -> None:
    fake.script(answer_json(completion(None, tool_calls=tool_calls)))
    sleep = RecordingSleep()
    with pytest.raises(
        ModelRequestError, match=f"model '{MODEL_ID}' returned tool_calls that are not a list"
    ):
        await fake.model(sleep).complete(HELLO)
    assert sleep.delays == []


@pytest.mark.asyncio
async def test_content_null_or_missing_becomes_empty_text(fake: FakeServer) -> None:
    no_content = completion()
    del no_content["choices"][0]["message"]["content"]
    first = await complete_with(fake, answer_json(completion(None)))
    second = await complete_with(fake, answer_json(no_content))
    assert (first.content, second.content) == ("", "")
    assert first.as_message() == {"role": "assistant", "content": ""}


@pytest.mark.asyncio
async def test_text_reply_from_a_third_party_server(fake: FakeServer) -> None:
    reply = await complete_with(
        fake, answer_json(completion("bonjour", prompt_tokens=12, completion_tokens=1))
    )
    assert reply == ChatReply(
        content="bonjour",
        tool_calls=(),
        usage=TokenUsage(prompt_tokens=12, completion_tokens=1, calls=1),
        model_id=MODEL_ID,
        finish_reason="stop",
        attempts=1,
    )


@pytest.mark.parametrize(
    ("count", "parsed"),
    [
        pytest.param(5, 5, id="int"),
        pytest.param(0, 0, id="zero"),
        pytest.param(-3, 0, id="negative"),
        pytest.param(True, 0, id="bool"),
        pytest.param("7", 0, id="string"),
        pytest.param(7.0, 0, id="float"),
        pytest.param(None, 0, id="null"),
        pytest.param([1], 0, id="list"),
    ],
)
@pytest.mark.asyncio
async def test_usage_counts_that_are_not_non_negative_ints_become_zero(
    fake: FakeServer, count: object, parsed: int
) -> None:
    reply = await complete_with(fake, answer_json(completion(prompt_tokens=count, completion_tokens=count)))
    assert reply.usage == TokenUsage(prompt_tokens=parsed, completion_tokens=parsed, calls=1)


@pytest.mark.parametrize(
    "usage",
    [pytest.param(None, id="null"), pytest.param([3, 4], id="list"), pytest.param("lots", id="string")],
)
@pytest.mark.asyncio
async def test_usage_that_is_not_an_object_becomes_zero(fake: FakeServer, usage: object) -> None:
    payload = completion()
    payload["usage"] = usage
    reply = await complete_with(fake, answer_json(payload))
    assert reply.usage == TokenUsage(calls=1)
    missing = completion()
    del missing["usage"]
    assert (await complete_with(fake, answer_json(missing))).usage == TokenUsage(calls=1)


@pytest.mark.asyncio
async def test_tool_calls_with_and_without_function_objects(fake: FakeServer) -> None:
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "speak", "arguments": '{"text": "hi"}'}},
        {"id": "call_b", "type": "custom", "custom": {"input": "x"}},
        {"id": "call_c", "type": "function", "function": "speak"},
        {"id": "call_d", "type": "function", "function": None},
        "call_e",
        None,
        {"id": "call_f", "type": "function", "function": {"name": "reset", "arguments": {"why": "stuck"}}},
        {"type": "function", "function": {}},
        {"id": 17, "function": {"name": "count", "arguments": "{}"}},
    ]
    reply = await complete_with(
        fake, answer_json(completion(None, tool_calls=calls, finish_reason="tool_calls"))
    )
    assert reply.tool_calls == (
        ToolCall(id="call_a", name="speak", arguments='{"text": "hi"}'),
        ToolCall(id="call_f", name="reset", arguments=json.dumps({"why": "stuck"})),
        ToolCall(id="", name="", arguments=""),
        ToolCall(id="17", name="count", arguments="{}"),
    )
    assert reply.content == ""
    assert reply.finish_reason == "tool_calls"


@pytest.mark.asyncio
async def test_null_tool_call_id_and_name_are_empty_like_missing_ones(fake: FakeServer) -> None:
    calls = [{"id": None, "type": "function", "function": {"name": None, "arguments": "{}"}}]
    reply = await complete_with(fake, answer_json(completion(None, tool_calls=calls)))
    assert reply.tool_calls == (ToolCall(id="", name="", arguments="{}"),)


@pytest.mark.parametrize("tool_calls", [None, []])
@pytest.mark.asyncio
async def test_null_or_empty_tool_calls_are_no_calls(fake: FakeServer, tool_calls: object) -> None:
    payload = completion("plain")
    payload["choices"][0]["message"]["tool_calls"] = tool_calls
    reply = await complete_with(fake, answer_json(payload))
    assert (reply.content, reply.tool_calls) == ("plain", ())


@pytest.mark.parametrize(
    ("served", "model_id"),
    [
        pytest.param("tiny-model", MODEL_ID, id="same"),
        pytest.param("tiny-model-q4.gguf", "llamacpp:tiny-model-q4.gguf", id="different"),
        pytest.param("", MODEL_ID, id="empty"),
        pytest.param(None, MODEL_ID, id="null"),
        pytest.param(42, MODEL_ID, id="not-text"),
    ],
)
@pytest.mark.asyncio
async def test_served_model_name_replaces_the_configured_one(
    fake: FakeServer, served: object, model_id: str
) -> None:
    reply = await complete_with(fake, answer_json(completion(model=served)))
    assert reply.model_id == model_id


@pytest.mark.parametrize(
    ("finish", "parsed"),
    [("length", "length"), ("stop", "stop"), (None, None), (3, None), (["stop"], None)],
)
@pytest.mark.asyncio
async def test_finish_reason_is_kept_only_when_text(
    fake: FakeServer, finish: object, parsed: str | None
) -> None:
    reply = await complete_with(fake, answer_json(completion(finish_reason=finish)))
    assert reply.finish_reason == parsed


@pytest.mark.asyncio
async def test_only_the_first_choice_is_used(fake: FakeServer) -> None:
    payload = completion("first")
    payload["choices"].append({"index": 1, "message": {"role": "assistant", "content": "second"}})
    reply = await complete_with(fake, answer_json(payload))
    assert reply.content == "first"


@pytest.mark.asyncio
async def test_oversized_answer_is_refused(fake: FakeServer) -> None:
    fake.script(answer_bytes(b" " * (MAX_RESPONSE_BYTES + 1)))
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError, match=f"larger than {MAX_RESPONSE_BYTES} bytes"):
        await fake.model(sleep).complete(HELLO)
    assert sleep.delays == []


# --- error classification and retries -----------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429, 408])
@pytest.mark.asyncio
async def test_transient_status_is_retried_then_unavailable(fake: FakeServer, status: int) -> None:
    fake.script(openai_error(status, "slot unavailable"))
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError) as caught:
        await fake.model(sleep, max_retries=2).complete(HELLO)
    assert str(caught.value) == (
        f"model '{MODEL_ID}' is unavailable after 3 attempt(s): HTTP {status}: slot unavailable"
    )
    cause = caught.value.__cause__
    assert isinstance(cause, ModelHttpError)
    assert cause.status_code == status
    assert len(fake.requests) == 3
    assert sleep.delays == expected_delays(2)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
@pytest.mark.asyncio
async def test_client_error_status_is_not_retried(fake: FakeServer, status: int) -> None:
    fake.script(openai_error(status, "the request is wrong"))
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError) as caught:
        await fake.model(sleep, max_retries=2).complete(HELLO)
    assert str(caught.value) == (
        f"model '{MODEL_ID}' rejected the request: HTTP {status}: the request is wrong"
    )
    assert len(fake.requests) == 1
    assert sleep.delays == []


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        pytest.param(
            raise_error(httpx.ConnectError, "connection refused"), "connection refused", id="connect"
        ),
        pytest.param(
            raise_error(httpx.ReadTimeout, "read timed out"), "timed out (ReadTimeout)", id="read-timeout"
        ),
        pytest.param(
            raise_error(httpx.ConnectTimeout, "connect timed out"),
            "timed out (ConnectTimeout)",
            id="connect-timeout",
        ),
        pytest.param(
            raise_error(httpx.RemoteProtocolError, "server disconnected"),
            "server disconnected",
            id="disconnect",
        ),
    ],
)
@pytest.mark.asyncio
async def test_transport_errors_and_timeouts_are_retried_then_unavailable(
    fake: FakeServer, error: Answer, reason: str
) -> None:
    fake.script(error)
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError) as caught:
        await fake.model(sleep, max_retries=2).complete(HELLO)
    assert str(caught.value) == f"model '{MODEL_ID}' is unavailable after 3 attempt(s): {reason}"
    assert isinstance(caught.value.__cause__, httpx.TransportError)
    assert len(fake.requests) == 3
    assert sleep.delays == expected_delays(2)


@pytest.mark.asyncio
async def test_success_after_one_503_returns_the_reply(fake: FakeServer) -> None:
    fake.script(openai_error(503, "Loading model"), answer_json(completion("ready now")))
    sleep = RecordingSleep()
    reply = await fake.model(sleep, max_retries=2).complete(HELLO)
    assert reply.content == "ready now"
    assert reply.attempts == 2
    assert len(fake.requests) == 2
    assert fake.bodies[0] == fake.bodies[1]
    assert sleep.delays == expected_delays(1)


@pytest.mark.asyncio
async def test_success_after_a_connection_error_and_a_timeout(fake: FakeServer) -> None:
    fake.script(
        raise_error(httpx.ConnectError, "refused"),
        raise_error(httpx.ReadTimeout, "slow"),
        answer_json(completion("finally")),
    )
    sleep = RecordingSleep()
    reply = await fake.model(sleep, max_retries=2).complete(HELLO)
    assert (reply.content, reply.attempts) == ("finally", 3)
    assert sleep.delays == expected_delays(2)


@pytest.mark.asyncio
async def test_transient_then_client_error_stops_retrying(fake: FakeServer) -> None:
    fake.script(openai_error(503, "busy"), openai_error(400, "context too long"))
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError, match="HTTP 400: context too long"):
        await fake.model(sleep, max_retries=2).complete(HELLO)
    assert len(fake.requests) == 2
    assert sleep.delays == expected_delays(1)


@pytest.mark.asyncio
async def test_zero_retries_fails_on_the_first_503(fake: FakeServer) -> None:
    fake.script(openai_error(503, "busy"))
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError, match=r"after 1 attempt\(s\): HTTP 503: busy"):
        await fake.model(sleep, max_retries=0).complete(HELLO)
    assert sleep.delays == []


@pytest.mark.parametrize(
    ("error", "retryable", "reason"),
    [
        pytest.param(ModelHttpError(500, "boom"), True, "HTTP 500: boom", id="500"),
        pytest.param(ModelHttpError(599, "odd"), True, "HTTP 599: odd", id="599"),
        pytest.param(ModelHttpError(429, "slow"), True, "HTTP 429: slow", id="429"),
        pytest.param(ModelHttpError(408, "late"), True, "HTTP 408: late", id="408"),
        pytest.param(ModelHttpError(400, "bad"), False, "HTTP 400: bad", id="400"),
        pytest.param(ModelHttpError(404, "where"), False, "HTTP 404: where", id="404"),
        pytest.param(ModelHttpError(409, "conflict"), False, "HTTP 409: conflict", id="409"),
        pytest.param(ModelHttpError(499, "closed"), False, "HTTP 499: closed", id="499"),
        pytest.param(ModelResponseError("not json"), False, "not json", id="response-error"),
        pytest.param(httpx.ReadTimeout("t"), True, "timed out (ReadTimeout)", id="read-timeout"),
        pytest.param(httpx.PoolTimeout("t"), True, "timed out (PoolTimeout)", id="pool-timeout"),
        pytest.param(httpx.ConnectError("refused"), True, "refused", id="connect-error"),
        pytest.param(httpx.ReadError("reset"), True, "reset", id="read-error"),
    ],
)
def test_classify_direct_client_errors(error: Exception, retryable: bool, reason: str) -> None:
    assert _classify(error) == (retryable, reason)


# --- the server's error text --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason", "text"),
    [
        pytest.param(
            b'{"error": {"message": "Loading model", "code": 503}}', "x", "Loading model", id="openai"
        ),
        pytest.param(b'{"error": "plain words"}', "x", "plain words", id="error-string"),
        pytest.param(b'{"detail": "nope"}', "x", '{"detail": "nope"}', id="other-json"),
        pytest.param(b'{"error": {"code": 5}}', "x", '{"error": {"code": 5}}', id="no-message"),
        pytest.param(b'{"error": {"message": 5}}', "x", '{"error": {"message": 5}}', id="message-not-text"),
        pytest.param(b'["error"]', "x", '["error"]', id="json-list"),
        pytest.param(b"  upstream down\n", "x", "upstream down", id="text"),
        pytest.param(b"", "Service Unavailable", "Service Unavailable", id="empty-uses-reason"),
        pytest.param(b" \n ", "Bad Gateway", "Bad Gateway", id="blank-uses-reason"),
        pytest.param(b"", "", "no message", id="nothing-at-all"),
        pytest.param(b"caf\xe9", "x", "caf\ufffd", id="not-utf8"),
    ],
)
def test_error_text(body: bytes, reason: str, text: str) -> None:
    assert _error_text(body, reason) == text


@pytest.mark.parametrize(
    ("body", "char"),
    [
        pytest.param(("x" * 1000).encode(), "x", id="text"),
        pytest.param(json.dumps({"error": {"message": "m" * 1000}}).encode(), "m", id="openai-message"),
        pytest.param(json.dumps({"error": "e" * 1000}).encode(), "e", id="error-string"),
        pytest.param(("é" * 1000).encode(), "é", id="multibyte-counts-characters"),
    ],
)
def test_error_text_is_truncated_to_max_error_text_characters(body: bytes, char: str) -> None:
    assert MAX_ERROR_TEXT == 300
    assert _error_text(body, "Internal Server Error") == char * MAX_ERROR_TEXT


@pytest.mark.parametrize("length", [MAX_ERROR_TEXT - 1, MAX_ERROR_TEXT])
def test_error_text_up_to_the_limit_is_kept_whole(length: int) -> None:
    assert _error_text(b"y" * length, "x") == "y" * length
    assert _error_text(json.dumps({"error": {"message": "z" * length}}).encode(), "x") == "z" * length


@pytest.mark.asyncio
async def test_a_503_with_a_deeply_nested_body_is_still_retried(fake: FakeServer) -> None:
    fake.script(answer_bytes(b"[" * 100_000, 503, "text/plain"))
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError, match=r"after 3 attempt\(s\): HTTP 503"):
        await fake.model(sleep, max_retries=2).complete(HELLO)


def test_error_text_of_an_empty_openai_message_falls_back_to_the_reason() -> None:
    assert _error_text(b'{"error": {"message": ""}}', "Service Unavailable") != ""


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(openai_error(500, "m" * 1000), "HTTP 500: " + "m" * MAX_ERROR_TEXT, id="openai"),
        pytest.param(
            answer_bytes(b"<html>" + b"z" * 1000, 502, "text/html"),
            "HTTP 502: <html>" + "z" * (MAX_ERROR_TEXT - 6),
            id="html",
        ),
        pytest.param(answer_bytes(b"", 503, "text/plain"), "HTTP 503: Service Unavailable", id="empty"),
    ],
)
@pytest.mark.asyncio
async def test_client_raises_http_error_with_the_servers_message(
    fake: FakeServer, answer: Answer, message: str
) -> None:
    fake.script(answer)
    client = OpenAICompatibleClient(BASE, http_client=fake.http)
    with pytest.raises(ModelHttpError) as caught:
        await client.create(model="m", messages=HELLO, timeout_s=1.0)
    assert str(caught.value) == message


@pytest.mark.asyncio
async def test_client_returns_the_decoded_object_and_merges_headers(fake: FakeServer) -> None:
    client = OpenAICompatibleClient(BASE + "//", api_key="k", http_client=fake.http)
    assert client.url == CHAT_URL
    data = await client.create(
        model="m", messages=HELLO, timeout_s=1.0, headers={"X-Extra": "1"}, temperature=0.5
    )
    assert data == completion()
    [request] = fake.requests
    assert request.headers["X-Extra"] == "1"
    assert request.headers["Authorization"] == "Bearer k"
    assert json.loads(request.content) == {"model": "m", "messages": HELLO, "temperature": 0.5}
    # The caller's headers are per call: the next request does not carry them.
    await client.create(model="m", messages=HELLO, timeout_s=1.0)
    assert "X-Extra" not in fake.requests[1].headers


# --- _direct_client -----------------------------------------------------------------------------


def _llamacpp_config() -> ModelConfig:
    return ModelConfig(model_id=MODEL_ID, base_url=BASE, timeout_s=5.0, max_retries=1, embedded=False)


@pytest.mark.asyncio
async def test_unknown_client_args_are_a_config_error_naming_them(fake: FakeServer) -> None:
    with pytest.raises(ConfigError) as caught:
        ChatModel.from_config(
            _llamacpp_config(), client_args={"http_client": fake.http, "timeout": 5, "api_key": "k"}
        )
    assert str(caught.value) == "the OpenAI-compatible client takes only http_client, not api_key, timeout"


def test_a_sync_http_client_is_a_config_error() -> None:
    with httpx.Client() as sync_client, pytest.raises(ConfigError, match=r"must be an httpx\.AsyncClient"):
        ChatModel.from_config(_llamacpp_config(), client_args={"http_client": sync_client})


@pytest.mark.parametrize("http_client", ["http://llm.test", object()])
def test_an_http_client_that_is_not_an_async_client_is_a_config_error(http_client: object) -> None:
    with pytest.raises(ConfigError, match=r"http_client must be an httpx\.AsyncClient"):
        ChatModel.from_config(_llamacpp_config(), client_args={"http_client": http_client})


@pytest.mark.parametrize("client_args", [None, {}, {"http_client": None}])
def test_no_http_client_is_fine(client_args: dict[str, Any] | None, no_api_key: None) -> None:
    model = ChatModel.from_config(_llamacpp_config(), client_args=client_args)
    assert model.model_id == MODEL_ID


# --- aclose -------------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.asyncio
async def test_aclose_leaves_a_passed_in_client_open(fake: FakeServer) -> None:
    model = fake.from_config()
    await model.complete(HELLO)
    await model.aclose()
    assert not fake.http.is_closed
    reply = await model.complete(HELLO)
    assert reply.content == "hi from the fake"
    assert len(fake.requests) == 2


@pytest.mark.asyncio
async def test_aclose_without_any_request_is_harmless() -> None:
    client = OpenAICompatibleClient(BASE)
    await client.aclose()
    await client.aclose()


# --- the client's own aiohttp session, against a loopback server --------------------------------


class LoopbackServer:
    """An aiohttp server on 127.0.0.1 that answers scripted responses and keeps each request."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.answers: list[Callable[[], web.StreamResponse]] = []
        self.release = asyncio.Event()
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self.server = test_utils.TestServer(app, host="127.0.0.1")

    def script(self, *answers: Callable[[], web.StreamResponse]) -> None:
        self.answers = list(answers)

    @property
    def base_url(self) -> str:
        return str(self.server.make_url("/v1"))

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path, dict(request.headers), await request.read()))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if answer is hang:
            await self.release.wait()
        return answer()


def hang() -> web.StreamResponse:
    """Marker answer: the handler waits until the test ends, then answers 503."""
    return web.Response(status=503)


@pytest_asyncio.fixture
async def loopback() -> AsyncIterator[LoopbackServer]:
    server = LoopbackServer()
    server.script(lambda: web.json_response(completion("over loopback")))
    await server.server.start_server()
    yield server
    server.release.set()
    await server.server.close()


@pytest_asyncio.fixture
async def own_client(loopback: LoopbackServer) -> AsyncIterator[OpenAICompatibleClient]:
    client = OpenAICompatibleClient(loopback.base_url + "/", api_key="sk-loop")
    yield client
    await client.aclose()


def loopback_model(
    client: OpenAICompatibleClient, sleep: RecordingSleep, *, timeout_s: float = 5.0
) -> ChatModel:
    return ChatModel(
        client,
        MODEL_ID,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_retries=2, rng=random.Random(7)),
        sleep=sleep,
    )


@pytest.mark.asyncio
async def test_own_session_sends_the_same_request(
    loopback: LoopbackServer, own_client: OpenAICompatibleClient
) -> None:
    reply = await loopback_model(own_client, RecordingSleep()).complete(HELLO, max_tokens=9)
    assert reply.content == "over loopback"
    assert reply.usage == TokenUsage(prompt_tokens=7, completion_tokens=3, calls=1)
    [(method, path, headers, body)] = loopback.requests
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer sk-loop"
    assert json.loads(body) == {"model": "tiny-model", "messages": HELLO, "max_tokens": 9}


@pytest.mark.asyncio
async def test_own_session_is_reused_across_calls(own_client: OpenAICompatibleClient) -> None:
    model = loopback_model(own_client, RecordingSleep())
    await model.complete(HELLO)
    session = own_client._session
    await model.complete(HELLO)
    assert session is not None
    assert own_client._session is session


@pytest.mark.asyncio
async def test_aclose_closes_the_session_the_client_made(own_client: OpenAICompatibleClient) -> None:
    model = loopback_model(own_client, RecordingSleep())
    await model.complete(HELLO)
    session = own_client._session
    assert session is not None
    assert not session.closed
    await model.aclose()
    assert session.closed
    # Still usable: a later call makes a new session (closed again by the fixture).
    assert (await model.complete(HELLO)).content == "over loopback"


@pytest.mark.asyncio
async def test_own_session_status_errors_are_classified(
    loopback: LoopbackServer, own_client: OpenAICompatibleClient
) -> None:
    loopback.script(
        lambda: web.json_response({"error": {"message": "Loading model"}}, status=503),
        lambda: web.json_response({"error": {"message": "bad"}}, status=400),
    )
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError) as caught:
        await loopback_model(own_client, sleep).complete(HELLO)
    assert str(caught.value) == f"model '{MODEL_ID}' rejected the request: HTTP 400: bad"
    assert len(loopback.requests) == 2
    assert sleep.delays == expected_delays(1)


@pytest.mark.asyncio
async def test_own_session_empty_error_body_uses_the_reason_phrase(
    loopback: LoopbackServer, own_client: OpenAICompatibleClient
) -> None:
    loopback.script(lambda: web.Response(status=502))
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError) as caught:
        await loopback_model(own_client, sleep).complete(HELLO)
    assert str(caught.value) == f"model '{MODEL_ID}' is unavailable after 3 attempt(s): HTTP 502: Bad Gateway"


@pytest.mark.asyncio
async def test_own_session_not_json_is_not_retried(
    loopback: LoopbackServer, own_client: OpenAICompatibleClient
) -> None:
    loopback.script(lambda: web.Response(text="<html>proxy</html>", content_type="text/html"))
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError, match="is not JSON"):
        await loopback_model(own_client, sleep).complete(HELLO)
    assert sleep.delays == []


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.asyncio
async def test_own_session_refuses_an_oversized_answer(
    loopback: LoopbackServer, own_client: OpenAICompatibleClient, chunked: bool
) -> None:
    def big() -> web.StreamResponse:
        response = web.Response(body=b" " * (MAX_RESPONSE_BYTES + 1), content_type="application/json")
        if chunked:
            response.enable_chunked_encoding()
        return response

    loopback.script(big)
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError, match=f"larger than {MAX_RESPONSE_BYTES} bytes"):
        await loopback_model(own_client, sleep).complete(HELLO)
    assert sleep.delays == []


@pytest.mark.asyncio
async def test_own_session_timeout_is_retried(
    loopback: LoopbackServer, own_client: OpenAICompatibleClient
) -> None:
    loopback.script(hang)
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError, match=r"after 3 attempt\(s\)"):
        await loopback_model(own_client, sleep, timeout_s=0.2).complete(HELLO)
    assert len(loopback.requests) == 3
    assert sleep.delays == expected_delays(2)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.asyncio
async def test_own_session_connection_refused_is_retried(closed_port: int) -> None:
    client = OpenAICompatibleClient(f"http://127.0.0.1:{closed_port}/v1")
    sleep = RecordingSleep()
    try:
        with pytest.raises(ModelUnavailableError, match=r"after 3 attempt\(s\)"):
            await loopback_model(client, sleep).complete(HELLO)
    finally:
        await client.aclose()
    assert sleep.delays == expected_delays(2)
