"""Live console rendering of matches with rich (CLI only, never in services)."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from arena.transcript import verdict_mark
from arena_core.judges.action_judge import describe_call
from arena_core.match_models import MatchResult, TurnRecord

_OUTCOME_STYLE = {
    "attacker_won": "bold red",
    "defended": "bold green",
    "attacker_refused": "bold magenta",
    "error": "bold yellow",
}
_OUTCOME_TEXT = {
    "attacker_won": "ATTACKER WON",
    "defended": "DEFENDED",
    "attacker_refused": "ATTACKER MODEL REFUSED TO PLAY (not a defence)",
    "error": "ERROR",
}


def render_turn(console: Console, record: TurnRecord) -> None:
    """Print one turn as a panel: attacker, defender, verdict."""
    body = Text()
    if record.reasoning:
        body.append(f"{record.reasoning}\n", style="dim italic")
    if record.strategy_text is not None and (record.part is None or record.part.startswith("1/")):
        body.append("strategy ✎ ", style="dim")
        body.append(f"{record.strategy_text}\n", style="dim")
    body.append("attacker ▶ " + (f"(part {record.part}) " if record.part else ""), style="bold red")
    body.append(f"{record.attacker_text}\n")
    for attachment in record.attachments:
        body.append(
            f"  📎 {attachment.kind} part {attachment.name} ({len(attachment.content)} chars)\n", style="dim"
        )
    body.append("defender ◀ ", style="bold blue")
    body.append(record.defender_text or "(empty reply)")
    for call in record.actions:
        body.append("\n  ⚙ ", style="bold blue")
        body.append(describe_call(call), style="yellow" if call.status == "ok" else "dim")
        if call.error:
            body.append(f": {call.error}", style="dim")
    verdict = record.verdict
    mark = verdict_mark(verdict.judge, verdict.success)
    style = "red" if verdict.success else "green"
    subtitle = Text.assemble((f"{verdict.judge} judge: ", "dim"), (mark, style))
    title = f"turn {record.turn}" + (" · new conversation" if record.new_conversation else "")
    title += f" · {record.duration_ms / 1000:.1f}s"
    console.print(Panel(body, title=title, title_align="left", subtitle=subtitle, subtitle_align="right"))


def render_result(console: Console, result: MatchResult) -> None:
    """Print the verdict and the match figures.

    Every value is wrapped in :class:`Text`: replies and errors are hostile
    input and must never be interpreted as console markup.
    """
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    table.add_row("outcome", Text(_OUTCOME_TEXT[result.outcome], style=_OUTCOME_STYLE[result.outcome]))
    if result.verdict is not None:
        table.add_row("judge", Text(f"{result.verdict.judge}: {result.verdict.reason}"))
        if result.verdict.evidence:
            table.add_row("evidence", Text(f"“{result.verdict.evidence}”"))
    if result.error:
        table.add_row("error", Text(result.error, style="yellow"))
    if result.attacker_refusal:
        table.add_row("refusal", Text(result.attacker_refusal[:300], style="magenta"))
    table.add_row("objective", Text(result.objective.label))
    table.add_row("target", Text(f"{result.target_name or '?'} at {result.target}"))
    table.add_row("strategy", Text(f"{result.strategy} (seed {result.seed})"))
    table.add_row("turns", Text(f"{result.turns_used} of {result.max_turns}, {result.resets} reset(s)"))
    if result.protocol is not None:
        table.add_row("protocol", Text(f"A2A {result.protocol.version} over {result.protocol.binding}"))
    models = f"attacker {result.attacker_model or 'none (scripted playbook)'}"
    models += f", defender {result.defender_model or 'not reported'}"
    table.add_row("models", Text(models))
    tokens = f"attacker {result.attacker_usage.total_tokens}, defender {result.defender_usage.total_tokens}"
    table.add_row("tokens", Text(tokens))
    table.add_row("time", Text(f"{result.duration_ms / 1000:.1f}s"))
    console.print(Panel(table, title="match result", title_align="left"))


__all__ = ["render_result", "render_turn"]
