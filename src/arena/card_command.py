"""``arena card URL``: fetch, validate and print an agent card."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena_core.a2a.card_validation import card_problems_v1
from arena_core.a2a.client.card_resolver import choose_interface, fetch_agent_card


async def _fetch(url: str, timeout_s: float) -> tuple[Any, dict[str, Any]]:
    async with httpx.AsyncClient(timeout=timeout_s) as http:
        return await fetch_agent_card(url, http)


def run_card_command(url: str, *, json_output: bool, timeout_s: float, console: Console) -> list[str]:
    """Print the card at ``url``; return its strict-1.0 problems ([] when valid)."""
    card, raw = asyncio.run(_fetch(url, timeout_s))
    problems = card_problems_v1(raw)
    if json_output:
        print(json.dumps(raw, indent=2))  # noqa: T201 - machine-readable output
        return problems
    interface = choose_interface(card)
    table = Table(title=Text(f"{card.name} {card.version}"), show_header=False, title_justify="left")
    table.add_column(style="dim")
    table.add_column()
    table.add_row("description", Text(card.description))
    for item in card.supported_interfaces:
        chosen = "  ← arena uses this" if item == interface else ""
        table.add_row(
            "interface",
            Text(f"{item.protocol_binding} {item.protocol_version or '(no version)'} {item.url}{chosen}"),
        )
    table.add_row("streaming", str(card.capabilities.streaming))
    for skill in card.skills:
        table.add_row("skill", Text(f"{skill.id}: {skill.name} — {skill.description}"))
        for example in skill.examples[:3]:
            table.add_row("", Text(f"e.g. {example}"))
    console.print(table)
    if problems:
        console.print("[yellow]not a strict A2A 1.0 card:[/]")
        for problem in problems:
            console.print(Text(f"  - {problem}"))
    else:
        console.print("[green]valid A2A 1.0 agent card[/]")
    return problems


__all__ = ["run_card_command"]
