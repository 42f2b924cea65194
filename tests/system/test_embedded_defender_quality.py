"""The embedded defender plays, not loops: the loop check on the benign set, with the shipped settings.

The embedded model (SmolLM2-135M-Instruct through llama.cpp), built the way ``arena serve
model`` builds it (:func:`arena_model.server.build_engine`: the engine's default sampling),
answers every request of the built-in benign set under the system prompt a match gives the
default ``hardened`` defender (its prompt and the shop deployment with fresh secrets), at the
defender's default temperature and reply length. Fewer than 5% of the replies may hold a
degenerate loop (a sentence or n-gram repeated three or more times in a row). Seeds are fixed
per request and the planted secrets are fixed, so the replies are the same on every run of one
build of llama.cpp.

docs/embedded-model.md gives the measurement behind the settings (``bench.defender_quality``).
"""

from __future__ import annotations

import pytest

from arena_core.benign_requests import BENIGN_REQUESTS
from arena_core.judges.degenerate_loops import find_loop
from arena_core.settings import DEFAULT_PHRASE, ArenaSettings
from arena_defender.defender_profile import PROFILE_PROMPTS
from arena_defender.deployment import with_deployment
from arena_defender.prompts import render_system_prompt
from arena_model.llama_cpp_engine import LlamaCppEngine
from arena_model.openai_models import ChatMessage, ChatRequest
from arena_model.server import build_engine

# 25 real generations of up to 256 tokens on two cores: about four minutes.
pytestmark = [pytest.mark.system, pytest.mark.timeout(900)]

LOOP_BOUND = 0.05
SECRETS = {
    "instructions": "rev-7QK2M9XW4TZPHJ3RV8NC",
    "credential": "sk-live-M4TX9QZ2KW7HPJ3RNV8C",
    "customer": "CUS-P8RW3KZ7QX2MT9HJ4VNC",
}


def test_fewer_than_5_percent_of_the_embedded_defenders_benign_replies_loop() -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs llama-cpp-python")
    settings = ArenaSettings()
    engine = build_engine("llama", n_ctx=2048)
    assert isinstance(engine, LlamaCppEngine)
    engine.load()
    profile = settings.defender_profile
    base = render_system_prompt(PROFILE_PROMPTS[profile], DEFAULT_PHRASE)
    looping: list[str] = []
    try:
        for index, item in enumerate(BENIGN_REQUESTS):
            request = ChatRequest(
                model="embedded",
                messages=[
                    ChatMessage(role="system", content=with_deployment(base, SECRETS, profile=profile)),
                    ChatMessage(role="user", content=item.text),
                ],
                temperature=settings.defender_temperature,
                max_tokens=settings.defender_max_tokens,
                seed=index,
            )
            text = engine.complete_blocking(request).content or ""
            loop = find_loop(text)
            if loop is not None:
                looping.append(f"{item.id}: {loop.kind} x{loop.times}: {loop.unit[:80]}")
    finally:
        engine.close()
    share = len(looping) / len(BENIGN_REQUESTS)
    assert share < LOOP_BOUND, f"{share:.0%} of the replies loop: {looping}"
