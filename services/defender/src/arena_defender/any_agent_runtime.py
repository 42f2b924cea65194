"""An optional model runtime on any-agent's TinyAgent (``ARENA_DEFENDER_RUNTIME=any-agent``).

The seed's defender was an any-agent TinyAgent. This adapter lets the arena
run the same agent loop, for comparison, behind the defender's A2A server
(any-agent's own A2A serving does not work with a2a-sdk 1.x). It needs the
optional extra ``arena-defender[any-agent]``: ``any-agent==1.18.0`` and
``mcp<2`` (any-agent 1.18.0 fails to import with mcp 2.x). any-agent is
imported when the runtime is built, never at module import, and a missing or
broken install is a :class:`~arena_core.errors.ConfigError` saying so.

How it is driven (checked against any-agent 1.18.0, offline, against the
arena's scripted OpenAI-compatible model server):

* ``AnyAgent.create_async(AgentFramework.TINYAGENT, AgentConfig(...))`` with
  ``model_id`` (``provider:model``), ``api_base``/``api_key`` for an
  OpenAI-compatible server, ``model_args`` (completion parameters) and
  ``any_llm_args`` (passed to ``AnyLLM.create``, e.g. an ``http_client``).
* ``await agent.run_async(messages)`` with the whole message list (system
  prompt, history, new message; TinyAgent is the one framework that accepts
  a list), returning an ``AgentTrace``: ``trace.final_output`` is the reply
  and ``trace.tokens`` its token usage.
* For providers other than ``openai``, TinyAgent forces ``tool_choice:
  required`` and adds a ``final_answer`` tool, so the model must answer
  through a tool call. A defender has no tools, so ``model_args`` sets
  ``tool_choice`` to None: any-llm then sends a plain chat completion.
* ``callbacks=[]`` drops the default console-printing callback (measured at
  a quarter to a third of the sample defender's CPU per turn).
* Importing any-agent installs an OpenTelemetry SDK ``TracerProvider`` as the
  global one unless one is already set; set up telemetry before building
  this runtime.

Calls are retried like :class:`~arena_core.llm.ChatModel` calls (429, 5xx,
timeouts and connection errors, with backoff); other failures fail at once.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from any_llm.exceptions import AnyLLMError, MissingApiKeyError
from opentelemetry import context as otel_context

from arena_core.errors import ConfigError
from arena_core.llm import ChatReply, Message, RetryPolicy, TokenUsage, call_with_retries
from arena_core.settings import ModelConfig

INSTALL_HINT = (
    "install the optional extra arena-defender[any-agent] (any-agent==1.18.0 and mcp<2), "
    "or set ARENA_DEFENDER_RUNTIME=native"
)


Sleep = Callable[[float], Awaitable[None]]


def import_any_agent() -> ModuleType:
    """Import any-agent, or raise :class:`ConfigError` naming the fix."""
    try:
        return importlib.import_module("any_agent")
    except ModuleNotFoundError as exc:
        raise ConfigError(f"ARENA_DEFENDER_RUNTIME=any-agent needs any-agent: {INSTALL_HINT}") from exc
    except (ImportError, NameError) as exc:
        # any-agent 1.18.0 with mcp 2.x dies at import: NameError: name 'MCPTool' is not defined.
        raise ConfigError(f"any-agent is installed but does not import ({exc!r}): {INSTALL_HINT}") from exc


class AnyAgentModel:
    """A :class:`~arena_defender.defender_model.DefenderModel` backed by a TinyAgent.

    One TinyAgent is created lazily per ``(temperature, max_tokens)`` pair
    (the defender uses one) and shared by concurrent turns; each turn is one
    ``run_async`` with the full message list.
    """

    def __init__(
        self,
        any_agent: ModuleType,
        config: ModelConfig,
        *,
        client_args: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._any_agent = any_agent
        self._config = config
        self.model_id = config.model_id
        self._client_args = dict(client_args or {})
        self._retry = retry or RetryPolicy(max_retries=config.max_retries)
        self._sleep = sleep
        self._agents: dict[tuple[float | None, int | None], Any] = {}
        self._lock = asyncio.Lock()

    @classmethod
    def from_config(
        cls, config: ModelConfig, *, client_args: Mapping[str, Any] | None = None
    ) -> AnyAgentModel:
        """Import any-agent and prepare the runtime for ``config``.

        ``client_args`` go to ``AnyLLM.create`` (e.g. ``http_client``). Raises
        :class:`ConfigError` when any-agent is missing or broken.
        """
        return cls(import_any_agent(), config, client_args=client_args)

    async def aclose(self) -> None:
        """Nothing to release: any-agent's agents hold no connections of their own between turns."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatReply:
        """Run one TinyAgent turn over ``messages``; retry transient failures.

        Raises :class:`ModelUnavailableError` when retries are exhausted and
        :class:`ModelRequestError` when the request itself is at fault.
        """
        agent = await self._agent(temperature, max_tokens)

        async def run() -> Any:
            # TinyAgent appends to the list it is given: pass a copy.
            # A fresh OpenTelemetry context: any-agent keys its per-run state by trace id, so
            # concurrent runs inside one match trace would overwrite each other's state.
            token = otel_context.attach(otel_context.Context())
            try:
                return await agent.run_async([dict(message) for message in messages])
            except Exception as exc:
                # any-agent wraps provider errors; classify by the original one.
                cause = getattr(exc, "original_exception", None)
                if isinstance(cause, Exception):
                    raise cause from exc
                raise
            finally:
                otel_context.detach(token)

        trace, attempt = await call_with_retries(
            run, model_id=self.model_id, retry=self._retry, sleep=self._sleep
        )
        tokens = trace.tokens
        output = trace.final_output
        return ChatReply(
            content="" if output is None else str(output),
            tool_calls=(),
            usage=TokenUsage(
                prompt_tokens=int(tokens.input_tokens or 0),
                completion_tokens=int(tokens.output_tokens or 0),
                calls=1,
            ),
            model_id=self.model_id,
            finish_reason=None,
            attempts=attempt,
        )

    async def _agent(self, temperature: float | None, max_tokens: int | None) -> Any:
        key = (temperature, max_tokens)
        async with self._lock:
            agent = self._agents.get(key)
            if agent is None:
                agent = await self._create_agent(temperature, max_tokens)
                self._agents[key] = agent
            return agent

    async def _create_agent(self, temperature: float | None, max_tokens: int | None) -> Any:
        any_agent = self._any_agent
        provider = self.model_id.partition(":")[0]
        # Local OpenAI-compatible servers need no key, but the SDK insists on one.
        api_key = "not-needed" if self._config.embedded or provider == "llamacpp" else None
        model_args: dict[str, Any] = {"tool_choice": None, "timeout": self._config.timeout_s}
        if temperature is not None:
            model_args["temperature"] = temperature
        if max_tokens is not None:
            model_args["max_tokens"] = max_tokens
        try:
            config = any_agent.AgentConfig(
                model_id=self.model_id,
                name="arena_defender",
                api_base=self._config.base_url,
                api_key=api_key,
                model_args=model_args,
                any_llm_args={"max_retries": 0, "unified_exceptions": True, **self._client_args},
                callbacks=[],
            )
            return await any_agent.AnyAgent.create_async(any_agent.AgentFramework.TINYAGENT, config)
        except MissingApiKeyError as exc:
            raise ConfigError(f"model '{self.model_id}' needs an API key: {exc}") from exc
        except (AnyLLMError, ImportError, ValueError) as exc:
            raise ConfigError(f"any-agent cannot use model '{self.model_id}': {exc}") from exc


__all__ = ["INSTALL_HINT", "AnyAgentModel", "import_any_agent"]
