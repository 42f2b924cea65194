"""``arena serve <name>``: one arena service in the foreground.

Each command calls the service's own runner (``arena_<name>.main.RUNNER``, the one behind the
``arena-<name>`` console script), so the CLI and the images start a service the same way. The
service is imported inside the command: the runner sets up telemetry before a2a-sdk loads.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from arena_core.service_ports import ATTACKER_PORT, DEFENDER_PORT, MODEL_PORT, ORCHESTRATOR_PORT
from arena_core.service_runner import LOOPBACK

serve_app = typer.Typer(
    help="Run one arena service in the foreground (Ctrl-C or SIGTERM stops it).",
    no_args_is_help=True,
)


class Engine(StrEnum):
    """Model server engines."""

    llama = "llama"
    scripted = "scripted"


class ScriptedMode(StrEnum):
    """Behaviours of the scripted test model."""

    echo = "echo"
    refuse = "refuse"
    obey = "obey"


HostOpt = Annotated[str, typer.Option(help="Address to bind (0.0.0.0 for all interfaces).")]
PortOpt = Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")]


@serve_app.command("defender")
def serve_defender_command(host: HostOpt = LOOPBACK, port: PortOpt = DEFENDER_PORT) -> None:
    """Serve the defender A2A agent (blue team)."""
    from arena_defender.main import RUNNER

    RUNNER.run(host=host, port=port)


@serve_app.command("attacker")
def serve_attacker_command(host: HostOpt = LOOPBACK, port: PortOpt = ATTACKER_PORT) -> None:
    """Serve the attacker A2A agent (red team) with its "red-team a target" skill."""
    from arena_attacker.main import RUNNER

    RUNNER.run(host=host, port=port)


@serve_app.command("orchestrator")
def serve_orchestrator_command(host: HostOpt = LOOPBACK, port: PortOpt = ORCHESTRATOR_PORT) -> None:
    """Serve the orchestrator: REST API (/v1, /openapi.json), dashboard (/dashboard) and a worker."""
    from arena_orchestrator.main import RUNNER

    RUNNER.run(host=host, port=port)


@serve_app.command("model")
def serve_model_command(
    host: HostOpt = LOOPBACK,
    port: PortOpt = MODEL_PORT,
    engine: Annotated[
        Engine | None,
        typer.Option(help="llama (SmolLM2-135M, the default) or scripted (deterministic, for tests)."),
    ] = None,
    scripted_mode: Annotated[
        ScriptedMode | None, typer.Option(help="Scripted engine behaviour: echo, refuse or obey.")
    ] = None,
    latency_ms: Annotated[
        float | None, typer.Option(min=0, help="Scripted engine: added latency per call.")
    ] = None,
    gguf: Annotated[Path | None, typer.Option(help="Llama engine: a GGUF file to serve instead.")] = None,
    n_ctx: Annotated[int | None, typer.Option(help="Llama engine: context window in tokens.")] = None,
    threads: Annotated[int | None, typer.Option(help="Llama engine: CPU threads.")] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option(min=16, max=8192, help="Llama engine: reply length of a request that names none."),
    ] = None,
    scripted_rules: Annotated[
        Path | None,
        typer.Option(help='Scripted engine: JSON file of [{"pattern", "reply"}] rules tried first.'),
    ] = None,
) -> None:
    """Serve the embedded OpenAI-compatible model (chat completions)."""
    from arena_model.main import RUNNER

    # The flags override the ARENA_MODEL_* settings the console script reads.
    RUNNER.run(
        host=host,
        port=port,
        model_engine=engine.value if engine else None,
        model_scripted_mode=scripted_mode.value if scripted_mode else None,
        model_latency_ms=latency_ms,
        model_gguf=str(gguf) if gguf else None,
        model_n_ctx=n_ctx,
        model_threads=threads,
        model_max_tokens=max_tokens,
        model_scripted_rules=str(scripted_rules) if scripted_rules else None,
    )


__all__ = ["Engine", "ScriptedMode", "serve_app"]
