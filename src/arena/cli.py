"""The ``arena`` command: wiring of sub-commands, settings and exit codes.

``arena serve`` is in :mod:`arena.serve_cli`, ``arena campaign`` and ``arena report`` in
:mod:`arena.campaign_cli`; what they share with the commands here is in :mod:`arena.cli_support`.

Exit codes: 0 success (a match that ran, whoever won, unless
``--fail-on-success``), 1 the attacker won with ``--fail-on-success`` or an
unexpected error, 2 invalid input or settings, 3 target problem, 4 model
problem, 5 a local service failed to start, 130 interrupted.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Annotated, cast

import typer
from pydantic import ValidationError

from arena import __version__
from arena.campaign_cli import campaign_app, report
from arena.cli_support import console, err_console, fail, interrupt_on_sigterm, print_error, start_telemetry
from arena.leaderboard_cli import leaderboard
from arena.objectives_cli import objectives_app
from arena.probe_command import probe
from arena.serve_cli import Engine, ScriptedMode, serve_app
from arena_core.converters import parse_converter
from arena_core.errors import ArenaError, InvalidInputError, exit_code_for_kind
from arena_core.match_models import MatchRequest, Objective
from arena_core.objective import CANARY_SLOTS, CanarySlot
from arena_core.objective_catalogue import CATALOGUE, resolve_objectives
from arena_core.service_runner import settings_from_environment
from arena_core.settings import DEFAULT_PHRASE

app = typer.Typer(
    name="arena",
    help="A2A Arena: red-team AI agents over the A2A protocol.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.add_typer(serve_app, name="serve")


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


def _canaries(items: list[str] | None) -> dict[CanarySlot, str]:
    canaries: dict[CanarySlot, str] = {}
    for item in items or []:
        slot, sep, name = item.partition("=")
        if not sep or slot.strip() not in CANARY_SLOTS:
            raise InvalidInputError(
                f"--canary needs SLOT=ARENA_CANARY_<NAME>, SLOT one of {', '.join(CANARY_SLOTS)}: '{item}'"
            )
        canaries[cast(CanarySlot, slot.strip())] = name.strip()
    return canaries


def _request(
    target: str,
    *,
    objective: str,
    strategy: str,
    max_turns: int,
    judge: str | None,
    seed: int | None,
    rubric: str | None = None,
    pattern: str | None = None,
    params: list[str] | None = None,
    token_env: str | None = None,
    objective_id: str | None = None,
    canaries: list[str] | None = None,
    converters: list[str] | None = None,
    decode: bool = False,
) -> MatchRequest:
    try:
        if objective_id:
            entry = CATALOGUE.get(objective_id.strip())
            if entry is None:
                raise InvalidInputError(
                    f"unknown --objective-id '{objective_id[:80]}'; `arena objectives list` shows them"
                )
            goal = entry.objective
            judge = judge or entry.judge
        else:
            goal = (
                Objective(kind="rubric", rubric=rubric, pattern=pattern)
                if rubric
                else Objective(phrase=objective, pattern=pattern, decode=decode)
            )
        if decode and goal.kind not in ("phrase", "pattern"):
            raise InvalidInputError(
                f"--decode applies to phrase and pattern objectives; this one is a {goal.kind} objective"
            )
        if decode and not goal.decode:
            goal = goal.model_copy(update={"decode": True})
        return MatchRequest(
            target=target,
            objective=goal,
            strategy=strategy,
            max_turns=max_turns,
            judge=judge or "phrase",
            seed=seed,
            params=_params(params),
            target_token_env=token_env,
            canary_env=_canaries(canaries),
            converters=[parse_converter(text) for text in converters or []],
        )
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'options'}: "
            + error["msg"].removeprefix("Value error, ")
            for error in exc.errors()
        )
        raise InvalidInputError(f"invalid match options: {problems}") from exc
    except ValueError as exc:
        raise InvalidInputError(f"invalid match options: {exc}") from exc


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        console.print(f"a2a-arena {__version__}")
        raise typer.Exit(0)


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
ConverterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--converter",
        help=(
            "Re-encode every attacker message: NAME or NAME:KEY=VALUE,... (repeatable, applied in "
            "order; e.g. base64, leetspeak, split:parts=3, translate:language=Zulu). See docs/converters.md."
        ),
    ),
]
DecodeOpt = Annotated[
    bool,
    typer.Option(
        "--decode",
        help="Also count the phrase in a reply re-encoded (base64, hex, ROT13, leetspeak, spaced out ...).",
    ),
]
JudgeOpt = Annotated[
    str,
    typer.Option(
        help=(
            "phrase (substring), exact, strict (asserted), regex, llm (rubric judge), canary (planted "
            "secret leaked) or length (reply beyond a bound)."
        )
    ),
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

    interrupt_on_sigterm()
    from arena.match_command import default_strategy

    settings = settings_from_environment()
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
    judge: Annotated[str | None, JudgeOpt.__metadata__[0]] = None,
    seed: SeedOpt = None,
    rubric: RubricOpt = None,
    pattern: PatternOpt = None,
    param: ParamOpt = None,
    converter: ConverterOpt = None,
    decode: DecodeOpt = False,
    token_env: Annotated[
        str | None,
        typer.Option(
            help=(
                "A protected target: the ARENA_TARGET_TOKEN_<NAME> variable whose value is sent as "
                "its bearer token (in the attacker's environment with --attacker)."
            )
        ),
    ] = None,
    objective_id: Annotated[
        str | None,
        typer.Option(
            help="A catalogue objective (arena objectives list), judged by its own judge unless --judge."
        ),
    ] = None,
    canary: Annotated[
        list[str] | None,
        typer.Option(
            help=(
                "SLOT=ARENA_CANARY_<NAME> (repeatable): the variable holding a secret the target's owner "
                "planted in it (slots: instructions, credential, customer); arena defenders need none."
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
    start_telemetry("cli")
    from arena.match_command import default_strategy, run_match_command

    settings = settings_from_environment()
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
        objective_id=objective_id,
        canaries=canary,
        converters=converter,
        decode=decode,
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
            print_error(result.error or "the match ended in an error")
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
    objectives: Annotated[
        str | None,
        typer.Option(
            help=(
                "Comma-separated catalogue ids, sets or OWASP ids (e.g. canary,give-up), instead of "
                "--objective/--judge: each with its catalogue judge."
            )
        ),
    ] = None,
    over_refusal: Annotated[
        bool, typer.Option(help="Also send the built-in benign set to every profile (false refusal rates).")
    ] = False,
    seed: Annotated[
        int, typer.Option(min=0, help="Seed of the first repetition (repetition r uses seed + r).")
    ] = 1,
    out: Annotated[
        Path, typer.Option(help="Markdown page; the campaign's JSON report is written beside it.")
    ] = Path("docs/results.md"),
    engine: Annotated[
        Engine, typer.Option(help="Embedded model engine; 'scripted' only checks the plumbing.")
    ] = Engine.llama,
    converter: ConverterOpt = None,
    converter_strategy: Annotated[
        str, typer.Option(help="The strategy each --converter column plays behind its converter.")
    ] = "playbook",
    decode: DecodeOpt = False,
    section: Annotated[
        str | None,
        typer.Option(
            help="Write the run as this section of the page (e.g. families), keeping the rest of it; "
            "its JSON report is <page>-<section>.json."
        ),
    ] = None,
    reply_tokens: Annotated[
        int | None,
        typer.Option(
            min=16,
            max=8192,
            help="Cap replies at this many tokens to size a long run: the defenders' "
            "(ARENA_DEFENDER_MAX_TOKENS), the attacker's (ARENA_ATTACKER_MAX_TOKENS) and an "
            "embedded judge's; the page says so.",
        ),
    ] = None,
) -> None:
    """Play every strategy against every defender profile and write docs/results.md."""
    from arena.demo_command import new_run_id
    from arena.experiment_command import (
        SECTION_PATTERN,
        command_line,
        current_argv,
        results_json_path,
        run_experiment,
    )
    from arena_attacker.strategies import STRATEGY_NAMES
    from arena_core.objective import Objective

    interrupt_on_sigterm()
    settings = settings_from_environment()
    # A name given twice is played once (dict.fromkeys keeps the order).
    names = (s.strip() for s in strategies.split(",")) if strategies else STRATEGY_NAMES
    chosen = list(dict.fromkeys(names))
    chosen_profiles = list(dict.fromkeys(p.strip() for p in profiles.split(",") if p.strip()))
    if section is not None and not re.fullmatch(SECTION_PATTERN, section):
        fail(f"invalid --section '{section[:40]}': lower-case letters, digits and '-'", 2)
    goal = Objective(phrase=objective, decode=decode)
    try:
        converter_specs = [parse_converter(text) for text in converter or []]
    except InvalidInputError as exc:
        fail(f"invalid --converter: {exc.message}", 2)
    if converter_specs:
        _check_names(
            _request(
                "http://127.0.0.1",
                objective=objective,
                strategy=converter_strategy,
                max_turns=max_turns,
                judge=judge,
                seed=seed,
            )
        )
    catalogue = [ref.strip() for ref in (objectives or "").split(",") if ref.strip()]
    entries = [entry for ref in catalogue for entry in resolve_objectives(ref)]
    for name in chosen:
        ids: list[str | None] = [entry.id for entry in entries] or [None]
        for objective_id in ids:
            _check_names(
                _request(
                    "http://127.0.0.1",
                    objective=objective,
                    strategy=name,
                    max_turns=max_turns,
                    judge=None if objective_id else judge,
                    seed=seed,
                    objective_id=objective_id,
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
            catalogue=catalogue,
            over_refusal=over_refusal,
            reply_tokens=reply_tokens,
            converters=converter_specs,
            converter_strategy=converter_strategy,
            section=section,
        )
    except KeyboardInterrupt:
        err_console.print("interrupted: the local services have been stopped")
        raise typer.Exit(130) from None
    raw = results_json_path(out, section)
    console.print(f"wrote {out}" + (f" (section {section})" if section else "") + f" and {raw}")


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


def _check_names(request: MatchRequest) -> None:
    # Fail on typos and impossible combinations before any process starts or request is sent.
    from arena_attacker.strategies import validate_strategy
    from arena_core.judges import get_judge

    validate_strategy(request.strategy, request.params, request.objective)
    get_judge(request.judge).check_objective(request.objective)


# After the commands above, so `arena --help` lists them in the same order as always.
app.add_typer(campaign_app, name="campaign")
app.command()(report)
app.add_typer(objectives_app, name="objectives")
app.command()(probe)
app.command()(leaderboard)


def main() -> None:
    """Entry point of the ``arena`` console script."""
    try:
        app()
    except ArenaError as exc:
        fail(exc.message, exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            raise
        fail(f"unexpected {type(exc).__name__}: {exc} (set ARENA_LOG_LEVEL=debug for details)", 1)


__all__ = ["app", "main"]
