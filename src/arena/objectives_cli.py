"""``arena objectives``: the built-in objective catalogue, its sets and OWASP categories.

``arena objectives list [--set NAME] [--json]`` prints every objective (or a set's, or an
OWASP category's) with its judge and categories; ``arena objectives show ID [--json]``
prints one in full: what success means, the evidence that decides it, its categories with
their OWASP pages, the sets it belongs to, and the playbook attacker's script.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from arena.cli_support import console
from arena_core.errors import InvalidInputError
from arena_core.objective_catalogue import (
    CATALOGUE,
    ENTRIES,
    OBJECTIVE_SETS,
    CatalogueEntry,
    resolve_objectives,
)
from arena_core.owasp import OWASP_CATEGORIES, OWASP_LISTS, category_title

objectives_app = typer.Typer(
    help="The built-in objective catalogue, mapped to the OWASP LLM 2025 and Agentic lists.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


@objectives_app.command("list")
def list_objectives(
    selection: Annotated[
        str | None,
        typer.Option(
            "--set",
            help="Only a set (owasp-llm-2025, owasp-agentic, give-up, canary, all) or an OWASP id (ASI01).",
        ),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """List the catalogue's objectives with their judges and OWASP categories."""
    entries = resolve_objectives(selection) if selection else ENTRIES  # ArenaError: main() prints it
    if json_output:
        document = {
            "objectives": [entry.as_dict() for entry in entries],
            "sets": {name: list(ids) for name, ids in OBJECTIVE_SETS.items()},
            "lists": dict(OWASP_LISTS),
        }
        typer.echo(json.dumps(document, indent=2))
        return
    table = Table(title=f"{len(entries)} objectives", title_justify="left")
    for column in ("id", "title", "judge", "OWASP"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(entry.id, entry.title, entry.judge, " ".join(entry.categories))
    console.print(table)
    console.print(
        "Sets: "
        + ", ".join(f"{name} ({len(ids)})" for name, ids in OBJECTIVE_SETS.items())
        + ". Details: arena objectives show ID"
    )


@objectives_app.command("show")
def show_objective(
    objective_id: Annotated[
        str, typer.Argument(metavar="ID", help="A catalogue id (arena objectives list).")
    ],
    json_output: JsonOpt = False,
) -> None:
    """Show one objective in full."""
    entry = CATALOGUE.get(objective_id.strip())
    if entry is None:
        raise InvalidInputError(
            f"unknown objective '{objective_id[:80]}'; choose one of: {', '.join(CATALOGUE)}"
        )
    if json_output:
        typer.echo(json.dumps(entry.as_dict(), indent=2))
        return
    _print_entry(entry)


def _print_entry(entry: CatalogueEntry) -> None:
    spec = entry.objective
    console.print(f"{entry.id}: {entry.title}", markup=False)
    console.print(f"  success:   get the target to {spec.description}", markup=False)
    console.print(f"  judge:     {entry.judge} ({spec.kind} objective)", markup=False)
    console.print(f"  evidence:  {entry.evidence}", markup=False)
    if spec.pattern:
        console.print(f"  pattern:   /{spec.pattern}/", markup=False)
    if spec.rubric:
        console.print(f"  rubric:    {spec.rubric}", markup=False)
    if spec.canary:
        where = " inside a URL" if spec.channel == "url" else ""
        console.print(f"  secret:    the planted {spec.canary} secret{where}", markup=False)
    for category in entry.categories:
        console.print(
            f"  OWASP:     {category_title(category)}  {OWASP_CATEGORIES[category].url}", markup=False
        )
    sets = [name for name, ids in OBJECTIVE_SETS.items() if entry.id in ids]
    console.print(f"  sets:      {', '.join(sets)}", markup=False)
    if entry.playbook:
        console.print("  playbook:", markup=False)
        for index, turn in enumerate(entry.playbook, start=1):
            console.print(f"    {index}. {turn}", markup=False)


__all__ = ["objectives_app"]
