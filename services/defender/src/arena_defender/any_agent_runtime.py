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

Tools (the ``support-desk`` profiles, :meth:`AnyAgentModel.run_tools`): TinyAgent runs its
own loop over Python callables. One agent per settings carries four stand-in callables,
each with its tool's JSON schema (``__input_schema__``); during a turn they call the turn's
own :class:`~arena_core.llm.Tool` handlers (found through a context variable, so concurrent
turns never mix), and each call is an ``execute_tool`` span of the match's trace with the
GenAI attributes, like the native loop's (any-agent's own spans belong to a trace of
their own, see above). ``tool_choice`` is ``auto``, so TinyAgent adds no ``final_answer``
tool: a reply without tool calls ends the turn. TinyAgent has no step bound of its own; a
callback stops the run after ``max_steps`` model calls (:class:`StepLimitReached`, an
``AgentCancel``), and the turn answers as the native loop does when it runs out of steps.
A turn with tools is never retried: its tools may already have acted.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from any_llm.exceptions import AnyLLMError, MissingApiKeyError
from opentelemetry import context as otel_context

from arena_core.errors import ConfigError
from arena_core.llm import ChatReply, Message, RetryPolicy, TokenUsage, Tool, call_with_retries
from arena_core.llm.agent_loop import traced_tool_call
from arena_core.settings import ModelConfig
from arena_core.support_desk import TOOL_SCHEMAS

if TYPE_CHECKING:
    from arena_defender.defender_model import ToolTurn

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


@dataclass(slots=True)
class _ToolRun:
    """One turn with tools: its handlers, the trace to report calls in, the calls the model asked
    for in its last step (id, tool, arguments) and the model calls made so far."""

    tools: Mapping[str, Tool]
    trace_context: otel_context.Context
    max_steps: int
    pending: list[tuple[str, str, Any]] = field(default_factory=list)
    steps: int = 0

    def take_call_id(self, name: str, arguments: Mapping[str, Any]) -> str:
        """The id the model gave this call: its step's call of the same tool with the same
        arguments (else of the same tool), taken so that it is given once; "" when unknown."""
        for exact in (True, False):
            for index, (call_id, tool, given) in enumerate(self.pending):
                if tool == name and (not exact or given == dict(arguments)):
                    del self.pending[index]
                    return call_id
        return ""


_RUN: ContextVar[_ToolRun | None] = ContextVar("arena_any_agent_tool_run", default=None)


def _stand_in(name: str, description: str, schema: Mapping[str, Any]) -> Callable[..., Awaitable[str]]:
    """A callable TinyAgent can offer as tool ``name``; it runs the current turn's handler."""

    async def call(**arguments: Any) -> str:
        run = _RUN.get()
        if run is None:
            return f"error: no tool named '{name}' outside a turn"
        call_id = run.take_call_id(name, arguments)
        result, _ = await traced_tool_call(
            run.tools, name, call_id, json.dumps(arguments), context=run.trace_context
        )
        return result.content

    call.__name__ = name
    call.__doc__ = description
    call.__input_schema__ = dict(schema)  # type: ignore[attr-defined]
    return call


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
        self._agents: dict[tuple[Any, ...], Any] = {}
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

    async def run_tools(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        temperature: float | None,
        max_tokens: int | None,
        max_steps: int,
    ) -> ToolTurn:
        """One turn with ``tools`` (the support desk's), run by TinyAgent; see the module doc.

        Raises :class:`ModelUnavailableError` or :class:`ModelRequestError` when the model fails.
        """
        from arena_defender.defender_model import ToolTurn

        unknown = sorted({tool.name for tool in tools} - set(TOOL_SCHEMAS))
        if unknown:
            raise ConfigError(f"the any-agent runtime offers only the support desk's tools, not {unknown}")
        agent = await self._tool_agent(temperature, max_tokens)
        run = _ToolRun({tool.name: tool for tool in tools}, otel_context.get_current(), max_steps)
        token = _RUN.set(run)
        fresh = otel_context.attach(otel_context.Context())
        try:
            trace = await agent.run_async([dict(message) for message in messages])
            text = "" if trace.final_output is None else str(trace.final_output)
        except StepLimitReached as stop:
            trace, text = getattr(stop, "trace", None), ""
        except Exception as exc:
            cause = getattr(exc, "original_exception", None)
            error = cause if isinstance(cause, Exception) else exc
            # Classified like any model call, but never retried: a tool may have acted.
            await call_with_retries(
                _raise(error), model_id=self.model_id, retry=RetryPolicy(max_retries=0), sleep=self._sleep
            )
            raise
        finally:
            otel_context.detach(fresh)
            _RUN.reset(token)
        tokens = trace.tokens if trace is not None else None
        usage = TokenUsage(
            prompt_tokens=int(getattr(tokens, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(tokens, "output_tokens", 0) or 0),
            calls=run.steps,
        )
        return ToolTurn(text=text, usage=usage, model_id=self.model_id, steps=run.steps)

    async def _tool_agent(self, temperature: float | None, max_tokens: int | None) -> Any:
        key = ("tools", temperature, max_tokens)
        async with self._lock:
            agent = self._agents.get(key)
            if agent is None:
                stand_ins = [_stand_in(name, *spec) for name, spec in TOOL_SCHEMAS.items()]
                agent = await self._create_agent(
                    temperature, max_tokens, tools=stand_ins, callbacks=[step_counter(self._any_agent)]
                )
                self._agents[key] = agent
            return agent

    async def _agent(self, temperature: float | None, max_tokens: int | None) -> Any:
        key = (temperature, max_tokens)
        async with self._lock:
            agent = self._agents.get(key)
            if agent is None:
                agent = await self._create_agent(temperature, max_tokens)
                self._agents[key] = agent
            return agent

    async def _create_agent(
        self,
        temperature: float | None,
        max_tokens: int | None,
        *,
        tools: Sequence[Callable[..., Any]] = (),
        callbacks: Sequence[Any] = (),
    ) -> Any:
        any_agent = self._any_agent
        provider = self.model_id.partition(":")[0]
        # Local OpenAI-compatible servers need no key, but the SDK insists on one.
        api_key = "not-needed" if self._config.embedded or provider == "llamacpp" else None
        # No tools: a plain chat completion. Tools: the model chooses (no final_answer tool).
        model_args: dict[str, Any] = {
            "tool_choice": "auto" if tools else None,
            "timeout": self._config.timeout_s,
        }
        if temperature is not None:
            model_args["temperature"] = temperature
        if max_tokens is not None:
            model_args["max_tokens"] = max_tokens
        try:
            with warnings.catch_warnings():
                # Validating a callable tool tries it against MCPSse first, whose validator warns
                # that SSE is deprecated, whatever the tool is.
                warnings.filterwarnings("ignore", message="SSE is deprecated", category=DeprecationWarning)
                config = any_agent.AgentConfig(
                    model_id=self.model_id,
                    name="arena_defender",
                    api_base=self._config.base_url,
                    api_key=api_key,
                    model_args=model_args,
                    any_llm_args={"max_retries": 0, "unified_exceptions": True, **self._client_args},
                    tools=list(tools),
                    callbacks=list(callbacks),
                )
            return await any_agent.AnyAgent.create_async(any_agent.AgentFramework.TINYAGENT, config)
        except MissingApiKeyError as exc:
            raise ConfigError(f"model '{self.model_id}' needs an API key: {exc}") from exc
        except (AnyLLMError, ImportError, ValueError) as exc:
            raise ConfigError(f"any-agent cannot use model '{self.model_id}': {exc}") from exc


def _raise(error: Exception) -> Callable[[], Awaitable[Any]]:
    async def fail() -> Any:
        raise error

    return fail


class StepLimitReached(Exception):  # noqa: N818 - control flow; made an AgentCancel at runtime
    """Raised by the step counter when a turn has made its ``max_steps`` model calls (as an
    any-agent ``AgentCancel``, which carries the run's trace)."""


def _step_counter_class(any_agent: ModuleType) -> type:
    # any-agent lets AgentCancel subclasses through unwrapped; build one over its base class.
    cancel = type("AnyAgentStepLimit", (StepLimitReached, any_agent.AgentCancel), {})

    class StepCounter(any_agent.callbacks.Callback):  # type: ignore[misc, name-defined]
        def before_llm_call(self, context: Any, *args: Any, **kwargs: Any) -> Any:
            run = _RUN.get()
            if run is not None:
                if run.steps >= run.max_steps:
                    raise cancel("the turn made its last model call")
                run.steps += 1
            return context

        def after_llm_call(self, context: Any, *args: Any, **kwargs: Any) -> Any:
            run = _RUN.get()
            output = args[0] if args else None
            choices = getattr(output, "choices", None) or []
            calls = getattr(choices[0].message, "tool_calls", None) if choices else None
            if run is not None:
                # Each step's calls replace the last step's: an id left over (a call TinyAgent
                # refused before running it) never shifts onto a later call.
                run.pending = [_requested(call) for call in calls or []]
            return context

    return StepCounter


def _requested(call: Any) -> tuple[str, str, Any]:
    """``(id, tool, arguments)`` of a tool call in a model reply (arguments None when unreadable)."""
    function = getattr(call, "function", None)
    name = str(getattr(function, "name", "") or "")
    raw = getattr(function, "arguments", None)
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        arguments = None
    return str(getattr(call, "id", "") or ""), name, arguments


def step_counter(any_agent: ModuleType) -> Any:
    """The callback that counts a turn's model calls and queues its tool call ids."""
    return _step_counter_class(any_agent)()


__all__ = ["INSTALL_HINT", "AnyAgentModel", "StepLimitReached", "import_any_agent"]
