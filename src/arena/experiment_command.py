"""``arena experiment``: every strategy against every defender profile, honestly counted.

Starts the embedded model (or the hosted models configured), one defender per
profile and one attacker as local processes, plays ``repetitions`` matches per
(strategy, profile) cell, interleaving cells so that drift hits all alike, and
writes a Markdown report (default ``docs/results.md``) plus the raw results as
JSON beside it. The attack success rate of a cell is wins / (wins + defences)
with a Wilson 95% interval; errors and attacker refusals are neither and are
listed separately.
"""

from __future__ import annotations

import asyncio
import json
import platform
import shlex
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from arena.local_services import LocalServices
from arena_core.a2a.attacker_client import play_remote_match
from arena_core.match_models import MatchRequest, MatchResult
from arena_core.objective import Objective
from arena_core.settings import ArenaSettings
from arena_core.stats import wilson_interval

PROFILES: tuple[str, ...] = ("naive", "hardened", "guarded")
MODEL_READY_TIMEOUT_S = 300.0


@dataclass
class Cell:
    """The matches of one (strategy, profile) pair."""

    strategy: str
    profile: str
    results: list[MatchResult] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    def summary(self) -> str:
        wins, defended = self.count("attacker_won"), self.count("defended")
        interval = wilson_interval(wins, wins + defended)
        if interval.rate is None:
            return "n/a"
        text = f"{wins}/{wins + defended} = {interval.rate:.0%} [{interval.low:.0%}, {interval.high:.0%}]"
        turns = [r.turns_used for r in self.results if r.outcome == "attacker_won"]
        if turns:
            text += f", turns to success {statistics.median(turns):g}"
        return text

    def other(self) -> str:
        parts = []
        if self.count("error"):
            kinds = sorted({r.error_kind or "error" for r in self.results if r.outcome == "error"})
            parts.append(f"{self.count('error')} error ({', '.join(kinds)})")
        if self.count("attacker_refused"):
            parts.append(f"{self.count('attacker_refused')} attacker refused")
        return "; ".join(parts) or "none"


def run_experiment(
    settings: ArenaSettings,
    *,
    strategies: Sequence[str],
    profiles: Sequence[str],
    repetitions: int,
    max_turns: int,
    judge: str,
    objective: Objective,
    seed: int,
    engine: str,
    out: Path,
    log_dir: Path,
    command: str,
    console: Console,
) -> list[Cell]:
    """Play the matrix and write the report; return the cells."""
    cells = {(s, p): Cell(s, p) for s in strategies for p in profiles}
    with LocalServices(log_dir) as services:
        env: dict[str, str] = {}
        if settings.model_for("defender").embedded or settings.model_for("attacker").embedded:
            model = services.start("model", extra_args=["--engine", engine])
            with console.status("starting the embedded model server…"):
                services.wait_ready(model, timeout_s=MODEL_READY_TIMEOUT_S)
            env["ARENA_MODEL_BASE_URL"] = f"{model.url}/v1"
        if objective.phrase:
            env["ARENA_DEFENDER_PHRASE"] = objective.phrase
        defenders = {
            p: services.start("defender", env={**env, "ARENA_DEFENDER_PROFILE": p}) for p in profiles
        }
        attacker = services.start("attacker", env=env)
        with console.status("starting the agents…"):
            for service in [*defenders.values(), attacker]:
                services.wait_ready(service, timeout_s=60)
        total = len(cells) * repetitions
        done = 0
        for repetition in range(repetitions):
            for (strategy, profile), cell in cells.items():
                request = MatchRequest(
                    target=defenders[profile].url,
                    objective=objective,
                    strategy=strategy,
                    max_turns=max_turns,
                    judge=judge,
                    seed=seed + repetition,
                )
                result = asyncio.run(
                    play_remote_match(attacker.url, request, timeout_s=settings.match_timeout_s)
                )
                cell.results.append(result)
                done += 1
                console.print(
                    f"[{done}/{total}] {escape(strategy)} vs {escape(profile)}: {result.outcome} "
                    f"in {result.turns_used} turn(s), {result.duration_ms / 1000:.1f}s"
                )
            # Rewrite after every repetition: an interrupted run keeps what it measured.
            write_report(
                list(cells.values()),
                out=out,
                command=command,
                settings=settings,
                engine=engine,
                judge=judge,
                objective=objective,
                max_turns=max_turns,
                repetitions=repetition + 1,
                planned_repetitions=repetitions,
            )
    return list(cells.values())


def write_report(
    cells: Sequence[Cell],
    *,
    out: Path,
    command: str,
    settings: ArenaSettings,
    engine: str,
    judge: str,
    objective: Objective,
    max_turns: int,
    repetitions: int,
    planned_repetitions: int | None = None,
) -> None:
    """Write the Markdown report and the raw results (``<out>.json``).

    ``repetitions`` is how many were completed; when fewer than
    ``planned_repetitions``, the report says the run is partial.
    """
    strategies = list(dict.fromkeys(c.strategy for c in cells))
    profiles = list(dict.fromkeys(c.profile for c in cells))
    by_key = {(c.strategy, c.profile): c for c in cells}
    defender_model = settings.model_for("defender").model_id
    attacker_model = settings.model_for("attacker").model_id
    if engine == "scripted":
        defender_model = attacker_model = "scripted (deterministic test model: NOT a robustness measurement)"
    lines = [
        "# Strategies against defender profiles",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"({platform.system()} {platform.machine()}, Python {platform.python_version()}).",
        "",
        f"- Objective: {objective.label}; judge `{judge}`; up to {max_turns} turns per match; "
        f"{repetitions} match(es) per cell, seeds `--seed` + 0..{repetitions - 1}"
        + (
            f" (partial: {repetitions} of the {planned_repetitions} planned repetitions completed)."
            if planned_repetitions and planned_repetitions > repetitions
            else "."
        ),
        f"- Defender model: {defender_model}. Attacker model (strategies that use one): {attacker_model}.",
        "- Attack success rate (ASR) = matches won / (won + defended), with a Wilson 95% interval and the",
        "  median number of turns of the won matches. Errors and attacker refusals are neither a win",
        "  nor a defence; they are counted in the second table.",
        "",
        "## Attack success rate",
        "",
        "| strategy | " + " | ".join(profiles) + " |",
        "|---|" + "---|" * len(profiles),
    ]
    for strategy in strategies:
        row = [by_key[(strategy, p)].summary() for p in profiles]
        lines.append(f"| {strategy} | " + " | ".join(row) + " |")
    lines += [
        "",
        "## Matches that were neither won nor defended",
        "",
        "| strategy | " + " | ".join(profiles) + " |",
    ]
    lines.append("|---|" + "---|" * len(profiles))
    for strategy in strategies:
        lines.append(f"| {strategy} | " + " | ".join(by_key[(strategy, p)].other() for p in profiles) + " |")
    lines += [
        "",
        "## Reading these numbers",
        "",
        "The embedded SmolLM2-135M model plays both sides here. It follows instructions weakly, so",
        "defender profiles that rely on instructions differ less than they would with a capable model,",
        "and strategies that need the attacker model to write structured plans (crescendo, pair, tap,",
        "goat) run mostly on their fallbacks; `agentic` needs tool calls that a 135M model cannot make.",
        "The `guarded` profile's output guard is not a model and does not depend on model quality.",
        "Rerun the command with hosted models (see the README) for numbers that say more about them.",
        "",
        f"Raw results: [{out.with_suffix('.json').name}]({out.with_suffix('.json').name}).",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raw = [
        {
            "strategy": c.strategy,
            "profile": c.profile,
            "results": [r.model_dump(mode="json") for r in c.results],
        }
        for c in cells
    ]
    out.with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n", encoding="utf-8")


def command_line(argv: Sequence[str]) -> str:
    """The command as a user would type it (``uv run arena ...``)."""
    return "uv run arena " + " ".join(shlex.quote(a) for a in argv)


def current_argv() -> list[str]:
    """The arguments after the program name."""
    return sys.argv[1:]


__all__ = ["PROFILES", "Cell", "command_line", "current_argv", "run_experiment", "write_report"]
