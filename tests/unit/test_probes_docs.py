"""docs/probes.md lists every check as the code defines it."""

from __future__ import annotations

from pathlib import Path

from arena_core.probes.catalogue_table import replace_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "probes.md"


def test_the_docs_list_every_check_as_the_code_has_it() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert replace_table(text) == text, (
        "docs/probes.md is out of date: run "
        "`uv run python -m arena_core.probes.catalogue_table --write docs/probes.md`"
    )
