"""Running the model server as a process (run by :mod:`arena_model.main`).

The llama model is loaded before uvicorn starts listening, so once the port
accepts connections ``/readyz`` is already true and the first request does
not pay the load time. uvicorn binds the socket itself (a pre-bound socket
created with protocol 0 loses TCP_NODELAY; see ARCHITECTURE.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from arena_core.errors import ConfigError
from arena_core.http_server import run_app
from arena_core.service_ports import MODEL_PORT
from arena_core.settings import ArenaSettings
from arena_model.app import create_app
from arena_model.engine import ChatEngine
from arena_model.llama_cpp_engine import DEFAULT_MAX_TOKENS, LlamaCppEngine
from arena_model.scripted_engine import SCRIPTED_MODES, ScriptedEngine, load_rules

logger = logging.getLogger(__name__)

DEFAULT_PORT = MODEL_PORT

ENGINES: Final[tuple[str, ...]] = ("llama", "scripted")
LOG_LEVELS: Final[tuple[str, ...]] = (
    "critical",
    "error",
    "warning",
    "info",
    "debug",
    "trace",
)


def build_engine(
    engine: str = "llama",
    *,
    gguf_path: str | None = None,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    scripted_mode: str = "echo",
    latency_ms: float = 0.0,
    scripted_rules: str | None = None,
) -> ChatEngine:
    """Create (but do not load) the engine named ``engine``.

    Raises:
        ConfigError: unknown engine or scripted mode (the message lists the
            valid choices), or an invalid engine setting.
    """
    if engine == "llama":
        return LlamaCppEngine(
            gguf_path=gguf_path, n_ctx=n_ctx, n_threads=n_threads, default_max_tokens=max_tokens
        )
    if engine == "scripted":
        if scripted_mode not in SCRIPTED_MODES:
            raise ConfigError(
                f"Unknown scripted mode {scripted_mode!r}; choose one of: {', '.join(SCRIPTED_MODES)}."
            )
        rules = load_rules(scripted_rules) if scripted_rules else ()
        return ScriptedEngine(mode=scripted_mode, latency_ms=latency_ms, rules=rules)
    raise ConfigError(f"Unknown model engine {engine!r}; choose one of: {', '.join(ENGINES)}.")


def serve_model_with_settings(
    settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT
) -> None:
    """Serve the model configured by the ``ARENA_MODEL_*`` settings (see :func:`serve_model`)."""
    serve_model(
        lambda: build_engine(
            settings.model_engine,
            gguf_path=settings.model_gguf,
            n_ctx=settings.model_n_ctx,
            n_threads=settings.model_threads,
            max_tokens=settings.model_max_tokens,
            scripted_mode=settings.model_scripted_mode,
            latency_ms=settings.model_latency_ms,
            scripted_rules=settings.model_scripted_rules,
        ),
        host=host,
        port=port,
        log_level=settings.log_level,
    )


def serve_model(
    make_engine: Callable[[], ChatEngine],
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    log_level: str = "info",
) -> None:
    """Serve the OpenAI-compatible model API until the process is stopped.

    ``make_engine`` is called once the server's own settings are checked (e.g.
    :func:`build_engine`). Blocks until SIGTERM/SIGINT, then stops gracefully and
    closes the engine. With the llama engine, prints one line naming the model
    file, then loads it before listening. Access logs are written only at the
    ``debug`` level, to keep per-request console work out of the hot path.

    Raises:
        ConfigError: invalid engine, scripted mode, port, log level or model
            file, or the model could not be loaded.
    """
    if log_level.lower() not in LOG_LEVELS:
        raise ConfigError(f"Unknown log level {log_level!r}; choose one of: {', '.join(LOG_LEVELS)}.")
    if not 0 <= port <= 65535:
        raise ConfigError(f"port must be between 0 and 65535, got {port}.")
    chat_engine = make_engine()
    try:
        if isinstance(chat_engine, LlamaCppEngine):
            # An operator-facing start-up line on stdout, before logging is configured.
            print(  # noqa: T201
                f"arena-model: loading {chat_engine.gguf_path} "
                f"(n_ctx={chat_engine.n_ctx}, n_threads={chat_engine.n_threads}, "
                f"default max_tokens={chat_engine.default_max_tokens})",
                flush=True,
            )
            chat_engine.load()
        # run_app: graceful SIGTERM (in-flight requests finish, /readyz turns 503), then the
        # engine is closed below; uvicorn.run would leave the process to die by the signal.
        run_app(create_app(chat_engine), host=host, port=port, log_level=log_level.lower())
    finally:
        chat_engine.close()
        logger.info("model engine closed")


__all__ = [
    "DEFAULT_PORT",
    "ENGINES",
    "LOG_LEVELS",
    "build_engine",
    "serve_model",
    "serve_model_with_settings",
]
