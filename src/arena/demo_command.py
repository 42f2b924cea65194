"""``arena demo``: the whole arena on one machine, no API key needed.

Starts the embedded model server, a defender and an attacker as separate local
processes on free loopback ports, asks the attacker over A2A to red-team the
defender, shows every turn live, and writes ``out/<run-id>/transcript.md`` and
``result.json`` (plus each service's log under ``logs/``).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from arena.cli_support import run
from arena.console_render import render_result, render_turn
from arena.local_services import LocalServices
from arena.transcript import write_match
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.match_models import MatchRequest, MatchResult, TurnRecord
from arena_core.settings import ArenaSettings

MODEL_READY_TIMEOUT_S = 300.0
SERVICE_READY_TIMEOUT_S = 60.0


def new_run_id() -> str:
    """A sortable, unique run id such as ``20261130-101500-3fa2c1``."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


def run_demo(
    settings: ArenaSettings,
    request_template: MatchRequest,
    *,
    out_root: Path,
    engine: str,
    scripted_mode: str,
    console: Console,
) -> tuple[MatchResult, Path]:
    """Run the demo; return the result and the run directory."""
    run_dir = out_root / new_run_id()
    defender_embedded = settings.model_for("defender").embedded
    attacker_embedded = settings.model_for("attacker").embedded
    console.rule("[bold]A2A Arena demo")
    console.print(
        f"defender model: [bold]{escape(settings.model_for('defender').model_id)}[/]"
        + (" (embedded)" if defender_embedded else "")
    )
    console.print(
        f"attacker: [bold]{escape(request_template.strategy)}[/] strategy"
        + (
            f" with {escape(settings.model_for('attacker').model_id)}"
            if request_template.strategy != "playbook"
            else " (scripted multi-turn attacks, no model needed)"
        )
    )
    with LocalServices(run_dir / "logs") as services:
        env: dict[str, str] = {}
        if request_template.objective.phrase:
            env["ARENA_DEFENDER_PHRASE"] = request_template.objective.phrase
        if defender_embedded or attacker_embedded:
            model_args = ["--engine", engine]
            if engine == "scripted":
                model_args += ["--scripted-mode", scripted_mode]
            model = services.start("model", extra_args=model_args)
            label = (
                "SmolLM2-135M-Instruct on llama.cpp"
                if engine == "llama"
                else f"the SCRIPTED test model ({scripted_mode})"
            )
            with console.status(f"starting the embedded model server ({label})…") as status:
                services.wait_ready(
                    model,
                    timeout_s=MODEL_READY_TIMEOUT_S,
                    on_wait=lambda s: status.update(
                        f"starting the embedded model server ({label})… {s:.0f}s"
                    ),
                )
            console.print(f"model server ready at {model.url}")
            env["ARENA_MODEL_BASE_URL"] = f"{model.url}/v1"
        defender = services.start("defender", env=env)
        attacker = services.start("attacker", env=env)
        with console.status("starting the defender and attacker agents…"):
            services.wait_ready(defender, timeout_s=SERVICE_READY_TIMEOUT_S)
            services.wait_ready(attacker, timeout_s=SERVICE_READY_TIMEOUT_S)
        console.print(f"defender A2A agent at {defender.url}, attacker A2A agent at {attacker.url}")
        request = request_template.model_copy(update={"target": defender.url})
        console.rule(f"match: {escape(request.objective.goal)}")

        async def on_turn(record: TurnRecord) -> None:
            render_turn(console, record)

        result = run(
            play_remote_match(attacker.url, request, on_turn=on_turn, timeout_s=settings.match_timeout_s)
        )
    render_result(console, result)
    transcript, result_json = write_match(result, run_dir)
    console.print(f"transcript: {transcript}\nresult:     {result_json}\nlogs:       {run_dir / 'logs'}")
    return result, run_dir


__all__ = ["new_run_id", "run_demo"]
