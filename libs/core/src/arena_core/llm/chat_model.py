"""Access to any language model through any-llm, with retries and usage.

One :class:`ChatModel` is built per process and side (the provider client is
created once, not per call). llama.cpp-style servers (provider ``llamacpp``: the
embedded model server, a llama.cpp server) are called directly through
:class:`~arena_core.llm.openai_compatible.OpenAICompatibleClient`, which costs a
fraction of any-llm's CPU per call (ADR 0013); every other provider goes through
any-llm. Calls that fail with 429, 5xx, timeouts or
connection errors are retried with exponential backoff and jitter; anything
else fails at once. Every failure that leaves this module is a
:class:`~arena_core.errors.ModelError` with a sentence a user can act on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiohttp import ClientError, InvalidURL
from any_llm import AnyLLM
from any_llm.exceptions import (
    AnyLLMError,
    AuthenticationError,
    ContextLengthExceededError,
    GatewayTimeoutError,
    InvalidRequestError,
    MissingApiKeyError,
    ModelNotFoundError,
    RateLimitError,
    UnsupportedParameterError,
    UnsupportedProviderError,
    UpstreamProviderError,
)
from any_llm.providers.openai.base import BaseOpenAIProvider
from httpx import AsyncClient, TimeoutException, TransportError, UnsupportedProtocol
from opentelemetry import propagate
from opentelemetry.trace import SpanKind

from arena_core.errors import ArenaError, ConfigError, ModelError, ModelRequestError, ModelUnavailableError
from arena_core.llm.openai_compatible import ModelHttpError, ModelResponseError, OpenAICompatibleClient
from arena_core.llm.usage import TokenUsage
from arena_core.retry import Backoff
from arena_core.settings import ModelConfig
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.metrics import record_operation_duration, record_token_usage
from arena_core.telemetry.spans import capture_message_content, tracer

Message = dict[str, Any]
"""An OpenAI-style chat message: ``{"role": ..., "content": ...}``."""

Sleep = Callable[[float], Awaitable[None]]
T = TypeVar("T")

_NON_RETRYABLE = (
    AuthenticationError,
    ContextLengthExceededError,
    InvalidRequestError,
    MissingApiKeyError,
    ModelNotFoundError,
    UnsupportedParameterError,
)
_RETRYABLE = (RateLimitError, GatewayTimeoutError, UpstreamProviderError)

DIRECT_PROVIDERS = frozenset({"llamacpp"})
"""Providers called through :class:`OpenAICompatibleClient` instead of any-llm."""
LLAMACPP_DEFAULT_BASE = "http://127.0.0.1:8080/v1"
"""any-llm's default for ``llamacpp`` without a base URL (``LLAMACPP_API_BASE`` overrides it)."""
LLAMACPP_ENV_KEY = "LLAMACPP_API_KEY"
LLAMACPP_ENV_BASE = "LLAMACPP_API_BASE"
"""The llamacpp provider's own variables. Like GEMINI_API_KEY and the other provider keys, which
any-llm reads itself, they are not ARENA_* settings: the direct client stands in for any-llm's
llamacpp provider (ADR 0013) and reads the same two, so swapping the client changed no
configuration. Documented beside the provider keys in deploy/.env.example."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model asked for. ``arguments`` is raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatReply:
    """What one completed model call returned."""

    content: str
    tool_calls: tuple[ToolCall, ...]
    usage: TokenUsage
    model_id: str
    finish_reason: str | None
    attempts: int = 1

    def as_message(self) -> Message:
        """The assistant message to append to the conversation."""
        # Null content is valid only beside tool calls; servers reject it otherwise.
        content = self.content or (None if self.tool_calls else "")
        message: Message = {"role": "assistant", "content": content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


@dataclass(slots=True)
class RetryPolicy:
    """How often a model call is retried (``max_retries``) and how long each wait is: the
    arena's :class:`~arena_core.retry.Backoff` from ``base_delay_s``, capped at ``max_delay_s``,
    with equal jitter (calls failing together, e.g. on a 429, do not retry together)."""

    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    rng: random.Random = field(default_factory=random.Random)

    @property
    def backoff(self) -> Backoff:
        """The waits between tries, drawn from ``rng``."""
        return Backoff(self.base_delay_s, self.max_delay_s, jitter=True, rng=self.rng)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        return self.backoff.delay(attempt)


class ChatModel:
    """A configured model that completes chat messages.

    Build it with :meth:`from_config`; reuse it for every call.
    """

    def __init__(
        self,
        provider: AnyLLM | OpenAICompatibleClient,
        model_id: str,
        *,
        timeout_s: float,
        retry: RetryPolicy,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._provider = provider
        self.model_id = model_id
        self._model_name = model_id.partition(":")[2]
        self._timeout_s = timeout_s
        self._retry = retry
        self._sleep = sleep
        # OpenAI-compatible clients take extra headers: the W3C trace context goes to the server
        # (their HTTP client is not the instrumented httpx, so it is injected here).
        self._propagates = isinstance(provider, (BaseOpenAIProvider, OpenAICompatibleClient))

    @classmethod
    def from_config(
        cls,
        config: ModelConfig,
        *,
        sleep: Sleep = asyncio.sleep,
        client_args: Mapping[str, Any] | None = None,
    ) -> ChatModel:
        """Create the provider client once for ``config``.

        ``client_args`` go to the provider SDK's client (for OpenAI-compatible
        servers, e.g. ``http_client``). Raises :class:`ConfigError` for an
        unknown provider or a missing API key.
        """
        provider_name = config.model_id.partition(":")[0]
        if provider_name in DIRECT_PROVIDERS:
            return cls(
                _direct_client(config, client_args or {}),
                config.model_id,
                timeout_s=config.timeout_s,
                retry=RetryPolicy(max_retries=config.max_retries),
                sleep=sleep,
            )
        try:
            provider = AnyLLM.create(
                provider_name,
                api_key=None,
                api_base=config.base_url,
                max_retries=0,
                unified_exceptions=True,
                **dict(client_args or {}),
            )
        except UnsupportedProviderError as exc:
            raise ConfigError(f"unknown model provider '{provider_name}' in '{config.model_id}'") from exc
        except MissingApiKeyError as exc:
            raise ConfigError(f"model '{config.model_id}' needs an API key: {exc}") from exc
        except ImportError as exc:
            raise ConfigError(
                f"model provider '{provider_name}' is not installed in this build: {exc}"
            ) from exc
        return cls(
            provider,
            config.model_id,
            timeout_s=config.timeout_s,
            retry=RetryPolicy(max_retries=config.max_retries),
            sleep=sleep,
        )

    async def aclose(self) -> None:
        """Release the HTTP connections of a directly called server (any-llm's clients need nothing)."""
        if isinstance(self._provider, OpenAICompatibleClient):
            await self._provider.aclose()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
    ) -> ChatReply:
        """Complete ``messages``; retry transient failures.

        Raises :class:`ModelUnavailableError` when retries are exhausted and
        :class:`ModelRequestError` when the request itself is at fault.
        """
        kwargs: dict[str, Any] = {}
        if tools:
            kwargs["tools"] = [dict(tool) for tool in tools]
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if seed is not None:
            kwargs["seed"] = seed
        messages_list: list[Any] = list(messages)

        async def call() -> ChatReply:
            headers: dict[str, str] = {}
            if self._propagates:
                propagate.inject(headers)
            if isinstance(self._provider, OpenAICompatibleClient):
                data = await self._provider.create(
                    model=self._model_name,
                    messages=messages_list,
                    timeout_s=self._timeout_s,
                    headers=headers,
                    **kwargs,
                )
                return _reply_from_json(data, self.model_id)
            options: dict[str, Any] = {**kwargs, "extra_headers": headers} if headers else kwargs
            response = await self._provider.acompletion(
                model=self._model_name, messages=messages_list, timeout=self._timeout_s, **options
            )
            return _to_reply(response, self.model_id)

        provider, _, model = self.model_id.partition(":")
        attributes: dict[str, Any] = {
            attrs.GEN_AI_OPERATION_NAME: attrs.OPERATION_CHAT,
            attrs.GEN_AI_PROVIDER_NAME: provider,
            attrs.GEN_AI_REQUEST_MODEL: model,
        }
        if temperature is not None:
            attributes[attrs.GEN_AI_REQUEST_TEMPERATURE] = temperature
        if max_tokens is not None:
            attributes[attrs.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
        started = time.perf_counter()
        with tracer().start_as_current_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            if capture_message_content():
                span.set_attribute(attrs.GEN_AI_INPUT_MESSAGES, json.dumps(messages_list, default=str))
            try:
                reply, attempts = await call_with_retries(
                    call, model_id=self.model_id, retry=self._retry, sleep=self._sleep
                )
            except ArenaError as exc:
                span.set_attribute(attrs.ARENA_ERROR_KIND, exc.kind)
                raise
            finally:
                record_operation_duration(time.perf_counter() - started, attributes)
            reply = dataclasses.replace(reply, attempts=attempts)
            span.set_attributes(
                {
                    attrs.GEN_AI_USAGE_INPUT_TOKENS: reply.usage.prompt_tokens,
                    attrs.GEN_AI_USAGE_OUTPUT_TOKENS: reply.usage.completion_tokens,
                }
            )
            if capture_message_content():
                span.set_attribute(
                    attrs.GEN_AI_OUTPUT_MESSAGES,
                    json.dumps([{"role": "assistant", "content": reply.content}], default=str),
                )
            record_token_usage(reply.usage.prompt_tokens, reply.usage.completion_tokens, attributes)
            return reply


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    model_id: str,
    retry: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
) -> tuple[T, int]:
    """Await ``call()``, retrying transient model failures; return the result and attempts.

    The one place that decides what a model failure means: 429, 5xx, timeouts
    and connection errors are retried with backoff, then raised as
    :class:`ModelUnavailableError`; anything else is raised at once as
    :class:`ModelRequestError`.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call(), attempt
        except ModelRequestError:
            raise  # the answer was read and found wanting (no choices...): already says why
        except Exception as exc:
            retryable, reason = _classify(exc)
            if not retryable:
                raise ModelRequestError(f"model '{model_id}' rejected the request: {reason}") from exc
            if attempt > retry.max_retries:
                raise ModelUnavailableError(
                    f"model '{model_id}' is unavailable after {attempt} attempt(s): {reason}"
                ) from exc
            await sleep(retry.delay(attempt))


def _classify(exc: Exception) -> tuple[bool, str]:
    """Whether ``exc`` is worth a retry, and a short reason. The ``retryable`` of the class
    :func:`_model_error_class` maps ``exc`` to decides: no second list of transient failures."""
    error_class, reason = _model_error_class(exc)
    return error_class.retryable, reason


def _model_error_class(exc: Exception) -> tuple[type[ModelError], str]:
    """Our class for a provider's (or a transport's) exception, and a short reason.

    429, 5xx, 408, timeouts and connection errors: :class:`ModelUnavailableError`; anything
    else, a request no retry can fix: :class:`ModelRequestError`.
    """
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, _NON_RETRYABLE):
        return ModelRequestError, reason
    if isinstance(exc, _RETRYABLE):
        return ModelUnavailableError, reason
    if isinstance(exc, AnyLLMError):
        status = exc.status_code
        if status is None:
            # Connection errors and timeouts carry no status.
            return ModelUnavailableError, reason
        return _status_class(status), f"HTTP {status}: {reason}"
    if isinstance(exc, ModelHttpError):
        return _status_class(exc.status_code), reason
    if isinstance(exc, ModelResponseError):
        return ModelRequestError, reason
    if isinstance(exc, (UnsupportedProtocol, InvalidURL)):
        return ModelRequestError, reason  # a wrong base URL: no retry can fix it
    if isinstance(exc, TimeoutException):
        return ModelUnavailableError, f"timed out ({type(exc).__name__})"
    if isinstance(exc, (TransportError, ClientError, TimeoutError, ConnectionError, OSError)):
        return ModelUnavailableError, reason
    return ModelRequestError, f"{type(exc).__name__}: {reason}"


def _status_class(status: int) -> type[ModelError]:
    """An HTTP status from a model server: timeouts, rate limits and server errors are transient."""
    return ModelUnavailableError if status == 408 or status == 429 or status >= 500 else ModelRequestError


def _direct_client(config: ModelConfig, client_args: Mapping[str, Any]) -> OpenAICompatibleClient:
    unknown = sorted(set(client_args) - {"http_client"})
    if unknown:
        raise ConfigError(f"the OpenAI-compatible client takes only http_client, not {', '.join(unknown)}")
    http_client = client_args.get("http_client")
    if http_client is not None and not isinstance(http_client, AsyncClient):
        raise ConfigError("http_client must be an httpx.AsyncClient")
    # Provider-native variables, read as any-llm reads them (see LLAMACPP_ENV_BASE); empty is unset.
    base_url = config.base_url or os.environ.get(LLAMACPP_ENV_BASE) or LLAMACPP_DEFAULT_BASE
    return OpenAICompatibleClient(
        base_url, api_key=os.environ.get(LLAMACPP_ENV_KEY) or None, http_client=http_client
    )


def _reply_from_json(data: Mapping[str, Any], model_id: str) -> ChatReply:
    """A chat-completions JSON object (from a server across a process boundary: checked)."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ModelRequestError(f"model '{model_id}' returned no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelRequestError(f"model '{model_id}' returned a choice without a message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelRequestError(f"model '{model_id}' returned non-text content")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ModelRequestError(f"model '{model_id}' returned tool_calls that are not a list")
    calls: list[ToolCall] = []
    for call in raw_calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        calls.append(
            ToolCall(
                id=_text(call.get("id")),
                name=_text(function.get("name")),
                arguments="" if arguments is None else _arguments_text(arguments),
            )
        )
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    served = data.get("model")
    if isinstance(served, str) and served and served != model_id.partition(":")[2]:
        model_id = f"{model_id.partition(':')[0]}:{served}"
    finish = choice.get("finish_reason")
    return ChatReply(
        content=content or "",
        tool_calls=tuple(calls),
        usage=TokenUsage(
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            calls=1,
        ),
        model_id=model_id,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def _text(value: object) -> str:
    """A string field of a server's answer: absent or null is empty."""
    return "" if value is None else str(value)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _to_reply(response: Any, model_id: str) -> ChatReply:
    if not getattr(response, "choices", None):
        raise ModelRequestError(f"model '{model_id}' returned no choices")
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        ToolCall(
            id=str(call.id),
            name=str(call.function.name),
            arguments=_arguments_text(call.function.arguments),
        )
        for call in (getattr(message, "tool_calls", None) or ())
        if getattr(call, "function", None) is not None
    )
    usage = getattr(response, "usage", None)
    # Report the model that actually answered when the server names it.
    served = getattr(response, "model", None)
    if isinstance(served, str) and served and served != model_id.partition(":")[2]:
        model_id = f"{model_id.partition(':')[0]}:{served}"
    return ChatReply(
        content=str(message.content or ""),
        tool_calls=calls,
        usage=TokenUsage(
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            calls=1,
        ),
        model_id=model_id,
        finish_reason=getattr(choice, "finish_reason", None),
    )


def _arguments_text(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments)


__all__ = ["ChatModel", "ChatReply", "Message", "RetryPolicy", "ToolCall", "call_with_retries"]
