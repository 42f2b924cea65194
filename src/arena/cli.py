"""The ``arena`` command: wiring of sub-commands, settings and exit codes.

Exit codes: 0 success (a match that ran, whoever won, unless
``--fail-on-success``), 1 the attacker won with ``--fail-on-success`` or an
unexpected error, 2 invalid input or settings, 3 target problem, 4 model
problem, 5 a local service failed to start, 130 interrupted.
"""

from __future__ import annotations

import logging
import signal
import sys
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from arena import __version__
from arena_core.errors import ArenaError, InvalidInputError, exit_code_for_kind
from arena_core.match_models import MatchRequest, Objective
from arena_core.service_main import configure_logging
from arena_core.settings import DEFAULT_PHRASE, ArenaSettings, load_settings

console = Console()
err_console = Console(stderr=True, soft_wrap=True)

app = typer.Typer(
    name="arena",
    help="A2A Arena: red-team AI agents over the A2A protocol.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
serve_app = typer.Typer(
    help="Run one arena service in the foreground (Ctrl-C or SIGTERM stops it).",
    no_args_is_help=True,
)
app.add_typer(serve_app, name="serve")


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


def _settings(**overrides: object) -> ArenaSettings:
    settings = load_settings(**{k: v for k, v in overrides.items() if v is not None})
    configure_logging(settings)
    return settings


def _telemetry(service: str) -> None:
    # Before the service and its agent libraries are imported (see arena_core.telemetry).
    from arena_core.telemetry import configure_telemetry

    configure_telemetry(service)


def _param_value(raw: str) -> bool | int | float | str:
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            continue
    return raw


def _params(items: list[str] | None) -> dict[str, bool | int | float | str]:
    params: dict[str, bool | int | float | str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"--param needs KEY=VALUE, got '{item}'")
        params[key.strip()] = _param_value(value)
    return params


def _request(
    target: str,
    *,
    objective: str,
    strategy: str,
    max_turns: int,
    judge: str,
    seed: int | None,
    rubric: str | None = None,
    pattern: str | None = None,
    params: list[str] | None = None,
    token_env: str | None = None,
) -> MatchRequest:
    try:
        goal = (
            Objective(kind="rubric", rubric=rubric, pattern=pattern)
            if rubric
            else Objective(phrase=objective, pattern=pattern)
        )
        return MatchRequest(
            target=target,
            objective=goal,
            strategy=strategy,
            max_turns=max_turns,
            judge=judge,
            seed=seed,
            params=_params(params),
            target_token_env=token_env,
        )
    except ValueError as exc:
        raise InvalidInputError(f"invalid match options: {exc}") from exc


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        console.print(f"a2a-arena {__version__}")
        raise typer.Exit(0)


@serve_app.command("defender")
def serve_defender_command(
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8081,
) -> None:
    """Serve the defender A2A agent (blue team)."""
    _telemetry("defender")
    from arena_defender import serve_defender

    serve_defender(_settings(), host=host, port=port)


@serve_app.command("attacker")
def serve_attacker_command(
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8082,
) -> None:
    """Serve the attacker A2A agent (red team) with its "red-team a target" skill."""
    _telemetry("attacker")
    from arena_attacker import serve_attacker

    serve_attacker(_settings(), host=host, port=port)


@serve_app.command("orchestrator")
def serve_orchestrator_command(
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8080,
) -> None:
    """Serve the orchestrator: REST API (/v1, /openapi.json), dashboard (/dashboard) and a worker."""
    _telemetry("orchestrator")
    from arena_orchestrator import serve_orchestrator

    serve_orchestrator(_settings(), host=host, port=port)


@serve_app.command("model")
def serve_model_command(
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8090,
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
    scripted_rules: Annotated[
        Path | None,
        typer.Option(help='Scripted engine: JSON file of [{"pattern", "reply"}] rules tried first.'),
    ] = None,
) -> None:
    """Serve the embedded OpenAI-compatible model (chat completions)."""
    _telemetry("model")
    from arena_model import serve_model_with_settings

    settings = _settings(
        model_engine=engine.value if engine else None,
        model_scripted_mode=scripted_mode.value if scripted_mode else None,
        model_latency_ms=latency_ms,
        model_gguf=str(gguf) if gguf else None,
        model_n_ctx=n_ctx,
        model_threads=threads,
        model_scripted_rules=str(scripted_rules) if scripted_rules else None,
    )
    serve_model_with_settings(settings, host=host, port=port)


StrategyOpt = Annotated[
    str | None,
    typer.Option(
        help="playbook, agentic, crescendo, pair, tap or goat (see docs/strategies.md; default: "
        "agentic with a hosted attacker model, else playbook)."
    ),
]
ObjectiveOpt = Annotated[str, typer.Option(help="The phrase the defender must not say.")]
RubricOpt = Annotated[
    str | None,
    typer.Option(
        help='A behaviour to provoke instead of a phrase, e.g. "reveals its system prompt" '
        "(needs --judge llm)."
    ),
]
PatternOpt = Annotated[str | None, typer.Option(help="Regular expression for --judge regex.")]
ParamOpt = Annotated[
    list[str] | None,
    typer.Option("--param", help="Strategy parameter KEY=VALUE (repeatable); see docs/strategies.md."),
]
JudgeOpt = Annotated[
    str, typer.Option(help="phrase (substring), exact, strict (asserted), regex, or llm (rubric judge).")
]
SeedOpt = Annotated[int | None, typer.Option(min=0, help="Seed for reproducible attacks.")]


@app.command()
def demo(
    max_turns: Annotated[int, typer.Option(min=1, help="Turn budget of the match.")] = 10,
    strategy: StrategyOpt = None,
    objective: ObjectiveOpt = DEFAULT_PHRASE,
    judge: JudgeOpt = "phrase",
    seed: SeedOpt = None,
    param: ParamOpt = None,
    out: Annotated[Path, typer.Option(help="Where run folders are written.")] = Path("out"),
    engine: Annotated[
        Engine, typer.Option(help="Embedded model engine; 'scripted' is a deterministic test model.")
    ] = Engine.llama,
    scripted_mode: Annotated[
        ScriptedMode, typer.Option(help="Scripted engine behaviour (with --engine scripted).")
    ] = ScriptedMode.echo,
) -> None:
    """Run a whole match locally: embedded model, defender and attacker as processes."""
    from arena.demo_command import run_demo

    _interrupt_on_sigterm()
    from arena.match_command import default_strategy

    settings = _settings()
    request = _request(
        "http://127.0.0.1",
        objective=objective,
        strategy=strategy or default_strategy(settings),
        max_turns=max_turns,
        judge=judge,
        seed=seed,
        params=param,
    )
    _check_names(request)
    try:
        result, _ = run_demo(
            settings,
            request,
            out_root=out,
            engine=engine.value,
            scripted_mode=scripted_mode.value,
            console=console,
        )
    except KeyboardInterrupt:
        err_console.print("interrupted: the local services have been stopped")
        raise typer.Exit(130) from None
    if result.outcome == "error":
        raise typer.Exit(exit_code_for_kind(result.error_kind))


@app.command()
def match(
    target: Annotated[str, typer.Option(help="URL of the A2A agent to attack (its card is fetched).")],
    attacker: Annotated[
        str | None, typer.Option(help="URL of an attacker agent to play the match (default: in-process).")
    ] = None,
    strategy: StrategyOpt = None,
    objective: ObjectiveOpt = DEFAULT_PHRASE,
    max_turns: Annotated[int, typer.Option(min=1, help="Turn budget of the match.")] = 10,
    judge: JudgeOpt = "phrase",
    seed: SeedOpt = None,
    rubric: RubricOpt = None,
    pattern: PatternOpt = None,
    param: ParamOpt = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            help=(
                "A protected target: the ARENA_TARGET_TOKEN_<NAME> variable whose value is sent as "
                "its bearer token (in the attacker's environment with --attacker)."
            )
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print only the result as JSON.")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write transcript.md and result.json here.")] = None,
    fail_on_success: Annotated[
        bool, typer.Option(help="Exit 1 if the attacker wins (for CI gates).")
    ] = False,
) -> None:
    """Red-team any A2A agent: one match, every turn shown live."""
    _telemetry("cli")
    from arena.match_command import default_strategy, run_match_command

    settings = _settings()
    request = _request(
        target,
        objective=objective,
        strategy=strategy or default_strategy(settings),
        max_turns=max_turns,
        judge=judge,
        seed=seed,
        rubric=rubric,
        pattern=pattern,
        params=param,
        token_env=token_env,
    )
    _check_names(request)
    result = run_match_command(
        settings,
        request,
        attacker_url=attacker,
        json_output=json_output,
        out_dir=out,
        console=err_console if json_output else console,
    )
    if result.outcome == "error":
        if not json_output:
            _print_error(result.error or "the match ended in an error")
        raise typer.Exit(exit_code_for_kind(result.error_kind))
    if fail_on_success and result.outcome == "attacker_won":
        raise typer.Exit(1)


@app.command()
def experiment(
    repetitions: Annotated[int, typer.Option(min=1, help="Matches per (strategy, profile) cell.")] = 3,
    max_turns: Annotated[int, typer.Option(min=1, help="Turn budget of each match.")] = 4,
    strategies: Annotated[
        str | None, typer.Option(help="Comma-separated strategies (default: all built-in).")
    ] = None,
    profiles: Annotated[
        str, typer.Option(help="Comma-separated defender profiles.")
    ] = "naive,hardened,guarded",
    objective: ObjectiveOpt = DEFAULT_PHRASE,
    judge: JudgeOpt = "phrase",
    seed: Annotated[int, typer.Option(min=0, help="Seed of the first repetition.")] = 1,
    out: Annotated[Path, typer.Option(help="Markdown report; raw JSON is written beside it.")] = Path(
        "docs/results.md"
    ),
    engine: Annotated[
        Engine, typer.Option(help="Embedded model engine; 'scripted' only checks the plumbing.")
    ] = Engine.llama,
) -> None:
    """Play every strategy against every defender profile and write docs/results.md."""
    from arena.demo_command import new_run_id
    from arena.experiment_command import command_line, current_argv, run_experiment
    from arena_attacker.strategies import STRATEGY_NAMES
    from arena_core.objective import Objective

    _interrupt_on_sigterm()
    settings = _settings()
    chosen = [s.strip() for s in strategies.split(",")] if strategies else list(STRATEGY_NAMES)
    chosen_profiles = [p.strip() for p in profiles.split(",") if p.strip()]
    goal = Objective(phrase=objective)
    for name in chosen:
        _check_names(
            _request(
                "http://127.0.0.1",
                objective=objective,
                strategy=name,
                max_turns=max_turns,
                judge=judge,
                seed=seed,
            )
        )
    try:
        run_experiment(
            settings,
            strategies=chosen,
            profiles=chosen_profiles,
            repetitions=repetitions,
            max_turns=max_turns,
            judge=judge,
            objective=goal,
            seed=seed,
            engine=engine.value,
            out=out,
            log_dir=Path("out") / f"experiment-{new_run_id()}" / "logs",
            command=command_line(current_argv()),
            console=console,
        )
    except KeyboardInterrupt:
        err_console.print("interrupted: the local services have been stopped")
        raise typer.Exit(130) from None
    console.print(f"wrote {out} and {out.with_suffix('.json')}")


@app.command()
def card(
    url: Annotated[str, typer.Argument(help="Base URL of an agent, or the URL of its card.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the raw card JSON.")] = False,
    strict: Annotated[bool, typer.Option(help="Exit 2 unless the card is a strict A2A 1.0 card.")] = False,
    timeout: Annotated[float, typer.Option(min=0.1, help="Seconds to wait for the card.")] = 10.0,
) -> None:
    """Fetch, validate and print an agent card."""
    from arena.card_command import run_card_command

    problems = run_card_command(url, json_output=json_output, timeout_s=timeout, console=console)
    if strict and problems:
        raise typer.Exit(2)


def _interrupt_on_sigterm() -> None:
    # Children must be stopped on SIGTERM too; the default handler would skip cleanup.
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _check_names(request: MatchRequest) -> None:
    # Fail on typos and impossible combinations before any process starts or request is sent.
    from arena_attacker.strategies import validate_strategy
    from arena_core.judges import get_judge

    validate_strategy(request.strategy, request.params, request.objective)
    get_judge(request.judge).check_objective(request.objective)


def _print_error(message: str) -> None:
    # Text, not markup: messages quote user input and provider errors such as "[gemini] ...".
    err_console.print(Text.assemble(("error: ", "bold red"), message), highlight=False)


def _fail(message: str, code: int) -> NoReturn:
    _print_error(message)
    sys.exit(code)


def _register_campaign_commands() -> None:
    from arena.campaign_cli import campaign_app, report

    app.add_typer(campaign_app, name="campaign")
    app.command()(report)


_register_campaign_commands()


def main() -> None:
    """Entry point of the ``arena`` console script."""
    try:
        app()
    except ArenaError as exc:
        _fail(exc.message, exc.exit_code)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except Exception as exc:
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            raise
        _fail(f"unexpected {type(exc).__name__}: {exc} (set ARENA_LOG_LEVEL=debug for details)", 1)


__all__ = ["app", "main"]
