"""``arena leaderboard``: the orchestrator's ratings of attackers and defenders, in the terminal.

It reads ``GET /v1/leaderboard`` (:mod:`arena_orchestrator.leaderboard`) from the orchestrator
``--orchestrator`` or ``ARENA_ORCHESTRATOR_URL`` names. Player names come from remote agents (an
attacker's model name is what its agent said), so they are printed with control characters
shown as ``\\xNN`` and never read as markup.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from arena.campaign_cli import _required_client
from arena.cli_support import console
from arena_core.errors import InvalidInputError
from arena_core.objective import CATEGORY_PATTERN

if TYPE_CHECKING:  # numpy comes with the ratings: imported when the command runs, not with the CLI
    from arena_orchestrator.leaderboard import Leaderboard, RatedPlayer

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _shown(text: str) -> Text:
    return Text(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


def _category(value: str | None) -> str | None:
    if value is None:
        return None
    category = value.strip().upper()
    if not re.fullmatch(CATEGORY_PATTERN, category):
        raise InvalidInputError(
            f"--category takes an OWASP id such as LLM07:2025 or ASI01, got '{value[:80]}'"
        )
    return category


def _since(value: str | None) -> str | None:
    """An ISO date or date-time, checked here so a typo is a clear message, not a 422."""
    if value is None:
        return None
    text = value.strip()
    for parse in (date.fromisoformat, datetime.fromisoformat):
        try:
            return parse(text).isoformat()
        except ValueError:
            continue
    raise InvalidInputError(
        f"--since takes a date such as 2026-12-01 (or a date and time), got '{value[:80]}'"
    )


def leaderboard(
    orchestrator: Annotated[
        str | None, typer.Option(help="Orchestrator URL (default: ARENA_ORCHESTRATOR_URL).")
    ] = None,
    category: Annotated[
        str | None,
        typer.Option(help="Only matches on objectives of this OWASP category, e.g. LLM01:2025."),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only campaigns finished on or after this date (UTC), e.g. 2026-12-01.")
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON.")] = False,
) -> None:
    """Rate every attacker and defender across the orchestrator's campaigns (Bradley-Terry, 95%
    bootstrap intervals): who holds best, who finds most, and how sure that is."""
    with _required_client(orchestrator) as client:
        board = client.leaderboard(category=_category(category), since=_since(since))
    if json_output:
        print(board.model_dump_json(indent=2))  # noqa: T201 - machine-readable output
        return
    render_leaderboard(board)


def render_leaderboard(board: Leaderboard) -> None:
    """The two tables and what they were fitted on."""
    scope = [f"category {board.category}" if board.category else "all categories"]
    if board.since:
        scope.append(f"since {board.since:%Y-%m-%d %H:%M} UTC")
    console.print(
        f"Leaderboard ({', '.join(scope)}): {board.matches} matches from {board.campaigns} campaigns"
    )
    if board.matches == 0:
        console.print("No settled campaign has played matches yet.")
        return
    console.print(_table("Attackers (higher finds more)", board.attackers))
    console.print(_table("Defenders (higher holds better)", board.defenders))
    console.print(
        "Ratings on a chess scale centred on 1000: 100 points more is a 64% chance for the stronger "
        f"side. Intervals: 95%, {board.bootstrap_rounds} bootstrap rounds over matches."
    )
    if board.unrated_attackers or board.unrated_defenders:
        console.print(
            f"Not rated: {board.unrated_attackers} attackers and {board.unrated_defenders} defenders "
            "beyond the most played of each side, with their matches."
        )


def _table(title: str, players: list[RatedPlayer]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("player")
    for column in ("rating", "95% interval", "won", "lost"):
        table.add_column(column, justify="right")
    for rank, player in enumerate(players, start=1):
        table.add_row(
            str(rank),
            _shown(player.name),
            f"{player.rating:.0f}",
            f"{player.low:.0f} to {player.high:.0f}",
            str(player.wins),
            str(player.losses),
        )
    return table


__all__ = ["leaderboard", "render_leaderboard"]
