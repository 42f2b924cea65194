"""Who may import whom (docs/architecture.md, "Code map"), read from the source with ``ast``.

* ``arena_core`` is a library: it imports no service package and not the ``arena`` CLI.
* No two modules of the ``arena`` CLI import each other, directly or through a cycle.
* A service package's ``__init__`` loads no a2a-sdk, so an entry point can set up telemetry first.

Every import counts, those inside functions too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "libs" / "core" / "src" / "arena_core"
CLI = REPO / "src" / "arena"
SERVICES = ("arena_attacker", "arena_defender", "arena_model", "arena_orchestrator")
APPS = (*SERVICES, "arena")


@dataclass(frozen=True)
class Import:
    """One imported module, and where the import is."""

    module: str
    path: Path
    line: int

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line} imports {self.module}"


def module_name(path: Path, package_root: Path) -> str:
    """``arena.cli`` for ``src/arena/cli.py`` (``package_root`` is the package's directory)."""
    parts = path.relative_to(package_root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(path: Path, package_root: Path) -> Iterator[Import]:
    """Every module ``path`` imports, anywhere in the file; relative imports resolved.

    ``from package import name`` yields ``package`` and ``package.name`` (``name`` may be a module).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path, package_root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            yield Import(base, path, node.lineno)
            for alias in node.names:
                yield Import(f"{base}.{alias.name}", path, node.lineno)


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def cycle_in(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None (depth-first search, three colours)."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done and (found := visit(target)):
                return found
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (found := visit(start)):
            return found
    return None


def cli_import_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], Import]]:
    """The CLI's modules and which of them each imports, with one import line per edge."""
    modules = {module_name(path, CLI): path for path in CLI.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    where: dict[tuple[str, str], Import] = {}
    for name, path in modules.items():
        for found in imports_in(path, CLI):
            if found.module in modules and found.module != name:
                graph[name].add(found.module)
                where.setdefault((name, found.module), found)
    return graph, where


def test_the_import_reader_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "mod.py").write_text(
        "import os\nfrom . import sibling\ndef later():\n    from arena_defender.server import x\n",
        encoding="utf-8",
    )
    found = {i.module for i in imports_in(package / "mod.py", package)}
    assert {"os", "pkg", "pkg.sibling", "arena_defender.server", "arena_defender.server.x"} <= found


def test_cycle_in_finds_direct_and_transitive_cycles() -> None:
    assert cycle_in({"a": {"b"}, "b": set()}) is None
    assert cycle_in({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_arena_core_imports_no_service_and_not_the_cli() -> None:
    offending = [
        str(found)
        for path in sorted(CORE.rglob("*.py"))
        for found in imports_in(path, CORE)
        if any(is_within(found.module, app) for app in APPS)
    ]
    assert not offending, "arena_core is a library; it must not import the apps built on it:\n" + "\n".join(
        dict.fromkeys(offending)
    )


def test_no_two_cli_modules_import_each_other() -> None:
    graph, where = cli_import_graph()
    assert graph.get("arena.cli"), "the CLI's modules were not found"
    cycle = cycle_in(graph)
    assert cycle is None, "the CLI's modules import each other in a cycle:\n" + "\n".join(
        str(where[edge]) for edge in itertools.pairwise(cycle)
    )


def a2a_import_chain(module: str) -> list[str] | None:
    """How ``import module`` (in a fresh interpreter) first reaches a2a-sdk: ``[module, ..., "a2a..."]``,
    or None.

    Read from ``python -X importtime``, which prints each import after the ones it caused, indented
    one step deeper; so an import's parent is the next line with less indentation.
    """
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    names = [line.rpartition("|")[2] for line in done.stderr.splitlines() if line.startswith("import time:")]
    rows = [(len(name) - len(name.lstrip()), name.strip()) for name in names[1:]]  # [0] is the header
    first = next((i for i, (_, name) in enumerate(rows) if is_within(name, "a2a")), None)
    if first is None:
        return None
    chain = [rows[first][1]]
    depth = rows[first][0]
    for indent, name in rows[first + 1 :]:
        if indent < depth:
            chain.append(name)
            depth = indent
    chain.reverse()
    return chain[: next(i for i, name in enumerate(chain) if is_within(name, "a2a")) + 1]


def test_the_chain_reader_names_who_imports_a2a() -> None:
    chain = a2a_import_chain("arena_defender.server")
    assert chain and chain[0] == "arena_defender.server" and is_within(chain[-1], "a2a"), chain


@pytest.mark.parametrize("module", [*SERVICES, *(f"{package}.main" for package in SERVICES)])
def test_a_service_package_and_its_entry_point_import_no_a2a_sdk(module: str) -> None:
    # The console script imports both before it sets up telemetry, which must precede a2a-sdk.
    chain = a2a_import_chain(module)
    assert chain is None, f"import {module} loads a2a-sdk: {' -> '.join(chain or [])}"
