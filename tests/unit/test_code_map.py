"""docs/architecture.md's code map names only files and folders that exist.

The map is how a new engineer finds their way in; a row that names a moved or deleted module sends
them nowhere. Each row's first path sets the folder its bare file names (``prompts.py``) are read in;
``.../`` stands for the package folder of the last full path (``libs/core/src/arena_core``), and
``services/<name>/.../`` for that service's package folder.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

_CODE = re.compile(r"`([^`]+)`")
_BARE = re.compile(r"^[\w*]+(?:\.py|/)$")
_FULL = ("libs/", "services/", "src/")


def _code_map_rows() -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Code map", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| where")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _package_of(path: str) -> str:
    """The package folder a full path lies in (``libs/core/src/arena_core``, ``src/arena``)."""
    parts = path.split("/")
    if parts[0] == "src":
        return "/".join(parts[:2])
    return "/".join(parts[:4])


def _resolve(token: str, package: str | None) -> str:
    if token.startswith(".../"):
        assert package is not None, f"{token!r} comes before any full path"
        return f"{package}/{token[4:]}"
    service = re.match(r"^services/(\w+)/\.\.\./(.*)$", token)
    if service:
        return f"services/{service[1]}/src/arena_{service[1]}/{service[2]}"
    return token


def _named_paths() -> list[tuple[str, str]]:
    """(what the row says, the path it stands for) for every file or folder the map names."""
    named: list[tuple[str, str]] = []
    package: str | None = None
    for where, what in _code_map_rows():
        folder: str | None = None
        for token in _CODE.findall(where):
            if token.startswith(_FULL):
                path = _resolve(token, package)
                package = _package_of(path)
            elif token.startswith(".../"):
                path = _resolve(token, package)
            elif _BARE.match(token) and folder is not None:
                path = f"{folder}/{token}"
            else:
                continue
            named.append((token, path))
            if folder is None:
                folder = path.rstrip("/") if path.endswith("/") else path.rsplit("/", 1)[0]
        for token in _CODE.findall(what):
            if _BARE.match(token) and folder is not None:
                named.append((token, f"{folder}/{token}"))
    return named


def test_the_code_map_names_many_paths() -> None:
    assert len(_named_paths()) > 60


def test_every_path_in_the_code_map_exists() -> None:
    missing = [f"{token} ({path})" for token, path in _named_paths() if not list(ROOT.glob(path.rstrip("/")))]
    assert not missing, "docs/architecture.md's code map names paths that do not exist: " + ", ".join(missing)


def test_every_module_is_in_the_code_map() -> None:
    """Each production module is named, or lies in a folder the map names."""
    named = {found for _, path in _named_paths() for found in ROOT.glob(path.rstrip("/"))}
    unnamed = [
        str(module.relative_to(ROOT))
        for package in ("libs/core/src/arena_core", "services", "src/arena")
        for module in sorted((ROOT / package).rglob("*.py"))
        if module.name != "__init__.py" and module not in named and not named.intersection(module.parents)
    ]
    assert not unnamed, "modules missing from docs/architecture.md's code map: " + ", ".join(unnamed)
