"""The checks as a Markdown table, for docs/probes.md (``python -m arena_core.probes.catalogue_table``).

``--write FILE`` replaces the table between the ``<!-- checks:start -->`` and
``<!-- checks:end -->`` markers of FILE; without it the table is printed.
tests/unit/test_probes_docs.py fails when docs/probes.md and the code disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from arena_core.probes.runner import catalogue

START = "<!-- checks:start -->"
END = "<!-- checks:end -->"


def markdown_table() -> str:
    """One row per check, in run order: id, severity, what it looks for, what to do."""
    rows = ["| Check | Severity | What it looks at | Remediation |", "| --- | --- | --- | --- |"]
    for definition in catalogue():
        cells = [
            f"`{definition.id}`",
            definition.severity.value,
            definition.description,
            definition.remediation,
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows)


def replace_table(text: str) -> str:
    """``text`` with the table between the markers replaced; ValueError without markers."""
    if START not in text or END not in text:
        msg = f"no {START} ... {END} markers"
        raise ValueError(msg)
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{markdown_table()}\n{END}{tail}"


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"] and len(argv) == 2:
        path = Path(argv[1])
        path.write_text(replace_table(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    if argv:
        print("usage: python -m arena_core.probes.catalogue_table [--write FILE]", file=sys.stderr)  # noqa: T201
        return 2
    print(markdown_table())  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
