"""Reading a YAML or JSON document safely, with the source line of every value.

:func:`read_document` turns text into plain Python data (``dict``, ``list``, ``str``,
``int``, ``float``, ``bool``, ``None``) plus :class:`SourceLines`, which tells where
each value and key is in the text, so that a later validation step can report its
problems at a line. Nothing here knows what the document means: the campaign loader
(:mod:`arena_orchestrator.spec_loader`) gives the data to the campaign spec.

Reading is safe on hostile input: only plain YAML values, lists and mappings are
built (``yaml.safe_load`` semantics, no Python objects), the text is bounded in size,
aliases are expanded under a node budget (the "billion laughs" document fails
cleanly), recursive aliases and deep nesting are rejected, and duplicate mapping keys,
which PyYAML silently accepts, are reported. Every problem is a :class:`SpecProblem`;
they are raised together as :class:`SpecSourceError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arena_orchestrator._yaml_reader import YamlDocument, YamlLimits, YamlSyntaxError, read_yaml
from arena_orchestrator.spec_problem import Path, SpecProblem, SpecSourceError

MAX_NODES = 100_000
"""Default limit on the values a document expands to, aliases expanded (keys count too)."""

MAX_DEPTH = 32
"""Deepest nesting of lists and mappings accepted (a campaign needs 5)."""

_JSON_START = re.compile(r"\s*\{\s*[\"}]")


@dataclass(frozen=True)
class SourceLines:
    """Where the values of a decoded document are in its source text.

    ``values`` maps the path of each value to the 1-based line where the value starts;
    ``keys`` maps the path of each mapping entry to the line of its key.
    """

    values: Mapping[Path, int] = field(default_factory=dict)
    keys: Mapping[Path, int] = field(default_factory=dict)

    def value_line(self, path: Path) -> int | None:
        """The line of the value at ``path``, else of its nearest enclosing value, else ``None``."""
        for end in range(len(path), -1, -1):
            line = self.values.get(path[:end])
            if line is not None:
                return line
        return None

    def key_line(self, path: Path) -> int | None:
        """The line of the key of the entry at ``path``, else as :meth:`value_line`."""
        line = self.keys.get(path)
        return line if line is not None else self.value_line(path)


def read_document(
    text: str | bytes, *, source: str, what: str = "document", max_bytes: int, max_nodes: int = MAX_NODES
) -> tuple[object, SourceLines]:
    """The decoded document in ``text`` and where its values are.

    ``text`` is a ``str`` or UTF-8 ``bytes`` (a leading byte-order mark is ignored).
    A document whose first value is a ``{"...`` object, or whose ``source`` (a file
    name) ends in ``.json``, is parsed as JSON (and its syntax errors reported as JSON
    errors); anything else as YAML with ``yaml.safe_load`` semantics (anchors, aliases
    and ``<<`` merge keys work, tags that would build other objects do not). Texts
    above ``max_bytes`` bytes, or expanding to more than ``max_nodes`` values, are
    rejected. ``what`` names the document in messages ("the campaign is not UTF-8
    text"). An empty document is ``None``.

    Raises:
        SpecSourceError: the syntax, encoding, size or structure problems, with their lines.
    """
    decoded = _decode(text, what, max_bytes)
    limits = YamlLimits(max_nodes=max_nodes, max_depth=MAX_DEPTH, what=what)
    if source.lower().endswith(".json") or _JSON_START.match(decoded):
        return _read_json(decoded, limits)
    document = read_yaml(decoded, limits)
    if document is None:
        return None, SourceLines()
    return document.data, _lines(document)


def _lines(document: YamlDocument) -> SourceLines:
    return SourceLines(values=document.values, keys=document.keys)


def _decode(text: str | bytes, what: str, max_bytes: int) -> str:
    if isinstance(text, str):
        if len(text) > max_bytes:  # at least one byte per character: no need to encode it all
            raise SpecSourceError([_too_big(what, len(text), max_bytes, at_least=True)])
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise SpecSourceError([_too_big(what, size, max_bytes)])
        return text.removeprefix("\ufeff")
    if not isinstance(text, bytes | bytearray):
        raise TypeError(f"{what} text must be str or bytes, not {type(text).__name__}")
    if len(text) > max_bytes:
        raise SpecSourceError([_too_big(what, len(text), max_bytes)])
    raw = bytes(text).removeprefix(b"\xef\xbb\xbf")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        message = (
            f"the {what} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start} "
            f"({exc.reason}); save the file as UTF-8"
        )
        raise SpecSourceError([SpecProblem(line=line, message=message)]) from None


def _too_big(what: str, size: int, limit: int, *, at_least: bool = False) -> SpecProblem:
    amount = f"{'at least ' if at_least else ''}{size:,} bytes"
    return SpecProblem(message=f"the {what} is {amount}, above the limit of {limit:,} bytes")


def _read_json(text: str, limits: YamlLimits) -> tuple[object, SourceLines]:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        message = f"JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        raise SpecSourceError([SpecProblem(line=exc.lineno, message=message)]) from None
    except (ValueError, RecursionError) as exc:
        raise SpecSourceError([SpecProblem(message=f"cannot read the JSON document: {exc}")]) from None
    # Lines (and duplicate keys with their place) come from the YAML reading of the same text:
    # valid JSON is YAML once tabs, which JSON forbids inside strings, are made spaces.
    try:
        document = read_yaml(text.replace("\t", " "), limits)
    except YamlSyntaxError:
        document = None  # JSON that YAML cannot read (a key over 1024 characters): no lines
    if document is not None:
        return data, _lines(document)
    if duplicates:
        raise SpecSourceError(
            [SpecProblem(message=f"duplicate key '{key}'; a key may appear only once") for key in duplicates]
        )
    return data, SourceLines()


__all__ = ["MAX_DEPTH", "MAX_NODES", "SourceLines", "read_document"]
