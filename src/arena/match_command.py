"""``arena match``: play one match against any A2A agent."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape

from arena.cli_support import run
from arena.console_render import render_result, render_turn
from arena.transcript import write_match
from arena_attacker.match_runner import MatchRunner
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.match_models import MatchRequest, MatchResult, TurnRecord
from arena_core.settings import ArenaSettings


def default_strategy(settings: ArenaSettings) -> str:
    """``agentic`` with a hosted attacker model, else ``playbook``.

    The embedded 135M model cannot drive tool calls, so it never plays agentic
    by default.
    """
    return "agentic" if settings.hosted_model_configured("attacker") else "playbook"


async def play_match(
    settings: ArenaSettings,
    request: MatchRequest,
    *,
    attacker_url: str | None,
    console: Console | None,
) -> MatchResult:
    """Play ``request`` in-process, or on the attacker at ``attacker_url``.

    With a console, every turn is printed as it happens.
    """

    async def on_turn(record: TurnRecord) -> None:
        if console is not None:
            render_turn(console, record)

    if attacker_url:
        return await play_remote_match(
            attacker_url,
            request,
            on_turn=on_turn,
            timeout_s=settings.match_timeout_s,
            token=settings.outbound_token("attacker"),
        )
    return await MatchRunner(settings).run(request, on_turn=on_turn)


def run_match_command(
    settings: ArenaSettings,
    request: MatchRequest,
    *,
    attacker_url: str | None,
    json_output: bool,
    out_dir: Path | None,
    console: Console,
) -> MatchResult:
    """Play, render and optionally save a match; return its result."""
    if not json_output:
        where = f"attacker {attacker_url}" if attacker_url else "the in-process attacker"
        console.print(
            f"[bold]Red-teaming[/] {escape(request.target)} with [bold]{escape(request.strategy)}[/] "
            f"via {escape(where)} (objective: {escape(request.objective.label)}, "
            f"judge {escape(request.judge)}, up to {request.max_turns} turns)"
        )
    result = run(
        play_match(settings, request, attacker_url=attacker_url, console=None if json_output else console)
    )
    if json_output:
        print(result.model_dump_json(indent=2))  # noqa: T201 - machine-readable output
    else:
        render_result(console, result)
    if out_dir is not None:
        transcript, result_json = write_match(result, out_dir)
        if not json_output:
            console.print(f"wrote {transcript} and {result_json}")
    return result


__all__ = ["default_strategy", "play_match", "run_match_command"]
