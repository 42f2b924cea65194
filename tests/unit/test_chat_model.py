"""ChatModel: retry policy, error classification and reply parsing.

The provider is a stand-in for the third-party any-llm SDK object: it raises a
scripted sequence of any-llm exceptions, then returns an object shaped like an
OpenAI ChatCompletion. Sleeping is injected and only recorded.
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any, cast

import pydantic
import pytest
from any_llm import AnyLLM
from any_llm.exceptions import (
    AuthenticationError,
    ContextLengthExceededError,
    GatewayTimeoutError,
    InvalidRequestError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    UpstreamProviderError,
)

from arena_core.errors import ConfigError, ModelRequestError, ModelUnavailableError
from arena_core.llm.chat_model import ChatModel, ChatReply, RetryPolicy, ToolCall, _classify
from arena_core.llm.usage import TokenUsage
from arena_core.settings import ModelConfig
from arena_model.openai_models import ChatMessage

MODEL_ID = "openai:gpt-test"


def completion(
    *,
    content: str | None = "hello",
    tool_calls: list[Any] | None = None,
    model: str | None = "gpt-test",
    prompt_tokens: int = 7,
    completion_tokens: int = 3,
    finish_reason: str | None = "stop",
    usage: bool = True,
) -> SimpleNamespace:
    """An object shaped like openai's ChatCompletion."""
    return SimpleNamespace(
        model=model,
        choices=[
            SimpleNamespace(
                index=0,
                finish_reason=finish_reason,
                message=SimpleNamespace(role="assistant", content=content, tool_calls=tool_calls),
            )
        ],
        usage=(
            SimpleNamespace(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
            if usage
            else None
        ),
    )


def sdk_tool_call(call_id: str, name: str, arguments: object) -> SimpleNamespace:
    return SimpleNamespace(
        id=call_id, type="function", function=SimpleNamespace(name=name, arguments=arguments)
    )


class ScriptedProvider:
    """Stand-in for the any-llm provider: raises each scripted error, then answers."""

    def __init__(self, errors: list[Exception], response: object) -> None:
        self._errors = list(errors)
        self._response = response
        self.calls: list[dict[str, Any]] = []

    async def acompletion(self, **kwargs: Any) -> object:
        self.calls.append(kwargs)
        if self._errors:
            raise self._errors.pop(0)
        return self._response


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_model(
    provider: ScriptedProvider, sleep: RecordingSleep, *, max_retries: int = 3, seed: int = 7
) -> ChatModel:
    return ChatModel(
        cast(AnyLLM, provider),
        MODEL_ID,
        timeout_s=9.0,
        retry=RetryPolicy(max_retries=max_retries, rng=random.Random(seed)),
        sleep=sleep,
    )


def expected_delays(count: int, *, seed: int = 7) -> list[float]:
    policy = RetryPolicy(rng=random.Random(seed))
    return [policy.delay(attempt) for attempt in range(1, count + 1)]


# --- RetryPolicy --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempt", "low", "high"),
    [
        (1, 0.25, 0.5),
        (2, 0.5, 1.0),
        (3, 1.0, 2.0),
        (4, 2.0, 4.0),
        (5, 4.0, 8.0),
        (6, 4.0, 8.0),
        (30, 4.0, 8.0),
    ],
)
def test_retry_delay_bounds(attempt: int, low: float, high: float) -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=8.0, rng=random.Random(attempt))
    delays = [policy.delay(attempt) for _ in range(200)]
    assert all(low <= delay <= high for delay in delays)
    assert len(set(delays)) > 1  # jittered, not constant


def test_retry_delay_is_reproducible_with_a_seeded_rng() -> None:
    first = RetryPolicy(rng=random.Random(42))
    second = RetryPolicy(rng=random.Random(42))
    assert [first.delay(n) for n in range(1, 6)] == [second.delay(n) for n in range(1, 6)]


def test_retry_delay_honours_custom_base_and_cap() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=3.0, rng=random.Random(0))
    assert 0.5 <= policy.delay(1) <= 1.0
    assert 1.5 <= policy.delay(3) <= 3.0


# --- _classify ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "retryable", "reason"),
    [
        pytest.param(RateLimitError("slow down", status_code=429), True, "slow down", id="rate-limit"),
        pytest.param(GatewayTimeoutError("gw"), True, "gw", id="gateway-timeout"),
        pytest.param(UpstreamProviderError("up"), True, "up", id="upstream"),
        pytest.param(AuthenticationError("bad key", status_code=401), False, "bad key", id="auth"),
        pytest.param(InvalidRequestError("nope", status_code=400), False, "nope", id="invalid-request"),
        pytest.param(ModelNotFoundError("who", status_code=404), False, "who", id="model-not-found"),
        pytest.param(ContextLengthExceededError("long"), False, "long", id="context-length"),
        pytest.param(ProviderError("down", status_code=503), True, "HTTP 503: down", id="provider-503"),
        pytest.param(ProviderError("busy", status_code=500), True, "HTTP 500: busy", id="provider-500"),
        pytest.param(ProviderError("late", status_code=408), True, "HTTP 408: late", id="provider-408"),
        pytest.param(ProviderError("bad", status_code=400), False, "HTTP 400: bad", id="provider-400"),
        pytest.param(ProviderError("gone", status_code=None), True, "gone", id="provider-no-status"),
        pytest.param(ConnectionError("refused"), True, "refused", id="connection-error"),
        pytest.param(TimeoutError(), True, "TimeoutError", id="timeout-no-text"),
        pytest.param(ValueError("odd"), False, "ValueError: odd", id="value-error"),
    ],
)
def test_classify(error: Exception, retryable: bool, reason: str) -> None:
    assert _classify(error) == (retryable, reason)


def test_classify_includes_the_provider_name() -> None:
    assert _classify(ProviderError("down", provider_name="gemini", status_code=502)) == (
        True,
        "HTTP 502: [gemini] down",
    )


# --- ChatModel.complete: retries ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_succeeds_after_two_transient_failures() -> None:
    provider = ScriptedProvider(
        [RateLimitError("slow down", status_code=429), ProviderError("down", status_code=503)],
        completion(),
    )
    sleep = RecordingSleep()
    reply = await make_model(provider, sleep).complete([{"role": "user", "content": "hi"}])
    assert reply.attempts == 3
    assert reply.content == "hello"
    assert sleep.delays == expected_delays(2)
    assert len(provider.calls) == 3


@pytest.mark.asyncio
async def test_gives_up_after_max_retries() -> None:
    provider = ScriptedProvider([ConnectionError("refused")] * 5, completion())
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError) as caught:
        await make_model(provider, sleep, max_retries=2).complete([{"role": "user", "content": "hi"}])
    assert str(caught.value) == f"model '{MODEL_ID}' is unavailable after 3 attempt(s): refused"
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert len(provider.calls) == 3
    assert sleep.delays == expected_delays(2)


@pytest.mark.asyncio
async def test_zero_retries_fails_on_the_first_transient_error() -> None:
    provider = ScriptedProvider([ProviderError("down", status_code=503)], completion())
    sleep = RecordingSleep()
    with pytest.raises(ModelUnavailableError, match=r"after 1 attempt\(s\): HTTP 503: down"):
        await make_model(provider, sleep, max_retries=0).complete([{"role": "user", "content": "hi"}])
    assert sleep.delays == []


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (AuthenticationError("bad key", status_code=401), "bad key"),
        (ProviderError("bad", status_code=400), "HTTP 400: bad"),
        (ValueError("odd"), "ValueError: odd"),
    ],
)
@pytest.mark.asyncio
async def test_non_retryable_error_fails_at_once(error: Exception, reason: str) -> None:
    provider = ScriptedProvider([error], completion())
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError) as caught:
        await make_model(provider, sleep).complete([{"role": "user", "content": "hi"}])
    assert str(caught.value) == f"model '{MODEL_ID}' rejected the request: {reason}"
    assert caught.value.__cause__ is error
    assert len(provider.calls) == 1
    assert sleep.delays == []


@pytest.mark.asyncio
async def test_transient_then_non_retryable_stops_retrying() -> None:
    provider = ScriptedProvider(
        [RateLimitError("slow down"), AuthenticationError("bad key")],
        completion(),
    )
    sleep = RecordingSleep()
    with pytest.raises(ModelRequestError):
        await make_model(provider, sleep).complete([{"role": "user", "content": "hi"}])
    assert len(provider.calls) == 2
    assert len(sleep.delays) == 1


# --- ChatModel.complete: request and reply -----------------------------------------------------


@pytest.mark.asyncio
async def test_request_arguments() -> None:
    provider = ScriptedProvider([], completion())
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    await make_model(provider, RecordingSleep()).complete(
        messages, tools=[tool], temperature=0.2, max_tokens=50, seed=3
    )
    assert provider.calls == [
        {
            "model": "gpt-test",
            "messages": messages,
            "timeout": 9.0,
            "tools": [tool],
            "temperature": 0.2,
            "max_tokens": 50,
            "seed": 3,
        }
    ]


@pytest.mark.asyncio
async def test_unset_options_are_not_sent() -> None:
    provider = ScriptedProvider([], completion())
    await make_model(provider, RecordingSleep()).complete([{"role": "user", "content": "u"}], tools=[])
    assert set(provider.calls[0]) == {"model", "messages", "timeout"}


@pytest.mark.asyncio
async def test_text_reply_with_usage() -> None:
    provider = ScriptedProvider([], completion(content="hi there", prompt_tokens=11, completion_tokens=2))
    reply = await make_model(provider, RecordingSleep()).complete([{"role": "user", "content": "u"}])
    assert reply == ChatReply(
        content="hi there",
        tool_calls=(),
        usage=TokenUsage(prompt_tokens=11, completion_tokens=2, calls=1),
        model_id=MODEL_ID,
        finish_reason="stop",
        attempts=1,
    )


@pytest.mark.asyncio
async def test_missing_usage_and_content_become_zero_and_empty() -> None:
    provider = ScriptedProvider([], completion(content=None, usage=False, finish_reason=None))
    reply = await make_model(provider, RecordingSleep()).complete([{"role": "user", "content": "u"}])
    assert reply.content == ""
    assert reply.usage == TokenUsage(calls=1)
    assert reply.finish_reason is None


@pytest.mark.parametrize(
    ("served", "model_id"),
    [
        ("gpt-test", MODEL_ID),
        ("gpt-test-2025-01-01", "openai:gpt-test-2025-01-01"),
        (None, MODEL_ID),
        ("", MODEL_ID),
    ],
)
@pytest.mark.asyncio
async def test_model_id_comes_from_the_response(served: str | None, model_id: str) -> None:
    provider = ScriptedProvider([], completion(model=served))
    reply = await make_model(provider, RecordingSleep()).complete([{"role": "user", "content": "u"}])
    assert reply.model_id == model_id


@pytest.mark.asyncio
async def test_tool_calls_are_parsed_with_json_text_arguments() -> None:
    calls = [
        sdk_tool_call("call_1", "send_message", '{"text": "hi"}'),
        sdk_tool_call("call_2", "reset", {"why": "stuck", "n": 2}),
        SimpleNamespace(id="call_3", type="custom", function=None),
    ]
    provider = ScriptedProvider([], completion(content=None, tool_calls=calls, finish_reason="tool_calls"))
    reply = await make_model(provider, RecordingSleep()).complete([{"role": "user", "content": "u"}])
    assert reply.tool_calls == (
        ToolCall(id="call_1", name="send_message", arguments='{"text": "hi"}'),
        ToolCall(id="call_2", name="reset", arguments=json.dumps({"why": "stuck", "n": 2})),
    )
    assert json.loads(reply.tool_calls[1].arguments) == {"why": "stuck", "n": 2}
    assert reply.finish_reason == "tool_calls"


@pytest.mark.asyncio
async def test_no_choices_is_a_request_error() -> None:
    provider = ScriptedProvider([], SimpleNamespace(model="gpt-test", choices=[], usage=None))
    with pytest.raises(ModelRequestError, match="returned no choices"):
        await make_model(provider, RecordingSleep()).complete([{"role": "user", "content": "u"}])


# --- ChatReply.as_message -----------------------------------------------------------------------


def test_as_message_text_reply() -> None:
    reply = ChatReply("hello", (), TokenUsage(), MODEL_ID, "stop")
    assert reply.as_message() == {"role": "assistant", "content": "hello"}


def test_as_message_with_tool_calls() -> None:
    reply = ChatReply(
        "",
        (ToolCall("call_1", "send_message", '{"text": "hi"}'), ToolCall("call_2", "reset", "{}")),
        TokenUsage(),
        MODEL_ID,
        "tool_calls",
    )
    assert reply.as_message() == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "send_message", "arguments": '{"text": "hi"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "reset", "arguments": "{}"}},
        ],
    }
    ChatMessage.model_validate(reply.as_message())  # valid on the wire


def test_as_message_of_an_empty_answer_is_a_valid_chat_message() -> None:
    reply = ChatReply("", (), TokenUsage(), MODEL_ID, "stop")
    try:
        ChatMessage.model_validate(reply.as_message())
    except pydantic.ValidationError as exc:
        pytest.fail(f"the model server would reject this history message: {exc}")


# --- ChatModel.from_config ---------------------------------------------------------------------


def _config(model_id: str) -> ModelConfig:
    return ModelConfig(model_id=model_id, base_url=None, timeout_s=5.0, max_retries=1, embedded=False)


def test_from_config_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown model provider 'nosuchprovider'"):
        ChatModel.from_config(_config("nosuchprovider:some-model"))


def test_from_config_missing_api_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="needs an API key"):
        ChatModel.from_config(_config("gemini:gemini-2.5-flash"))


def test_from_config_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LLAMACPP_API_KEY", raising=False)
    config = ModelConfig(
        model_id="llamacpp:scripted", base_url="http://model/v1", timeout_s=5.0, max_retries=4, embedded=True
    )
    model = ChatModel.from_config(config)
    assert model.model_id == "llamacpp:scripted"
