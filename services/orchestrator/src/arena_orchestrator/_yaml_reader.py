"""YAML text to plain data with each value's line, on PyYAML's node graph (private to spec_source).

PyYAML's ``safe_load`` forgets where values were, silently keeps the last of two equal
keys and expands aliases without limit. Here the text is only *composed* into nodes,
and :class:`_Builder` builds the data itself: it records every line, counts expanded
values, refuses recursion and deep nesting, and reports duplicate keys and tags that
would build anything but plain values, lists and mappings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml  # type: ignore[import-untyped]

from arena_orchestrator.spec_problem import Path, SpecProblem, SpecSourceError, format_path, shorten

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (several times faster; libyaml caps
nesting at 1000 levels), else PyYAML's own (whose deep recursion is caught)."""

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


class YamlSyntaxError(SpecSourceError):
    """The text is not one well-formed YAML document (its one problem has the line)."""


@dataclass(frozen=True)
class YamlDocument:
    """A document's data, the line of each value (``values``) and of each mapping key (``keys``)."""

    data: object
    values: dict[Path, int]
    keys: dict[Path, int]


@dataclass(frozen=True)
class YamlLimits:
    """How much a document may expand to: values (keys count, aliases expanded) and nesting."""

    max_nodes: int
    max_depth: int
    what: str
    """What the document is, for messages: "a campaign never needs that many"."""


def read_yaml(text: str, limits: YamlLimits) -> YamlDocument | None:
    """The document in ``text`` (``None`` when there is none), read with ``safe_load`` semantics.

    Raises:
        YamlSyntaxError: the text is not one well-formed YAML document.
        SpecSourceError: duplicate keys, unsupported tags, recursive aliases, unreadable
            values, or a limit passed (then that is the only problem).
    """
    loader, root = _compose(text, limits.max_depth)
    try:
        if root is None:
            return None
        builder = _Builder(loader, limits)
        data = builder.build(root)
        if builder.problems:
            raise SpecSourceError(builder.problems)
        return YamlDocument(data=data, values=builder.values, keys=builder.keys)
    finally:
        loader.dispose()


def _compose(text: str, max_depth: int) -> tuple[Any, Any]:
    """A loader (for constructing scalars later) and the document's root node (``None`` if empty)."""
    loader = None
    try:
        loader = _LOADER(text)
        return loader, loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        problem = _marked_problem(exc, text)
    except yaml.reader.ReaderError as exc:
        problem = _reader_problem(exc, text)
    except yaml.YAMLError as exc:
        problem = SpecProblem(message=f"YAML syntax error: {exc}")
    except RecursionError:
        problem = SpecProblem(message=f"the document is nested too deeply (the limit is {max_depth} levels)")
    if loader is not None:
        loader.dispose()
    raise YamlSyntaxError([problem])


def _marked_problem(exc: Any, text: str) -> SpecProblem:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if mark is None:
        return SpecProblem(message=f"YAML syntax error: {problem}")
    line, column = mark.line + 1, mark.column + 1
    message = f"YAML syntax error at line {line}, column {column}: {problem}"
    context_mark = exc.context_mark
    if exc.context and exc.problem:
        if context_mark is not None and (context_mark.line, context_mark.column) != (mark.line, mark.column):
            message += f" ({exc.context} at line {context_mark.line + 1}, column {context_mark.column + 1})"
        else:
            message += f" ({exc.context})"
    lines = text.split("\n")
    line_text = lines[mark.line] if mark.line < len(lines) else ""
    indent = line_text[: len(line_text) - len(line_text.lstrip(" \t"))]
    if "\t" in indent or line_text[mark.column : mark.column + 1] == "\t":
        message += "; YAML is indented with spaces, not tabs"
    return SpecProblem(line=line, message=message)


def _reader_problem(exc: Any, text: str) -> SpecProblem:
    position = int(exc.position)
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    character = exc.character if isinstance(exc.character, int) else ord(exc.character)
    return SpecProblem(
        line=line,
        message=(
            f"YAML syntax error at line {line}, column {column}: the character U+{character:04X} "
            "is not allowed in YAML text"
        ),
    )


class _LimitError(Exception):
    """Raised inside :class:`_Builder` to stop at once."""

    def __init__(self, problem: SpecProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Invalid:
    """Marks a key that could not be read."""


_INVALID = _Invalid()


class _Builder:
    """Builds plain Python data from a composed YAML node graph, recording each value's line.

    Aliases are expanded (every visit counts toward ``max_nodes``), recursive aliases and
    nesting beyond ``max_depth`` are refused, duplicate keys and unsupported tags are
    collected in ``problems``. Scalars are built by the safe loader's own constructors.
    """

    def __init__(self, loader: Any, limits: YamlLimits) -> None:
        self.loader = loader
        self.limits = limits
        self.problems: list[SpecProblem] = []
        self.count = 0
        self.values: dict[Path, int] = {}
        self.keys: dict[Path, int] = {}
        self.active: set[int] = set()
        self.reported: set[int] = set()

    def build(self, root: Any) -> object:
        """The data of ``root``; a passed limit leaves that as the only problem."""
        try:
            return self._build(root, (), 0)
        except _LimitError as exc:
            self.problems = [exc.problem]
            return None

    def _visit(self, node: Any, path: Path, depth: int) -> None:
        self.count += 1
        if self.count > self.limits.max_nodes:
            raise _LimitError(
                SpecProblem(
                    message=(
                        f"the document holds more than {self.limits.max_nodes:,} values (keys and values, "
                        f"YAML aliases expanded); a {self.limits.what} never needs that many (a 'billion "
                        "laughs' document?)"
                    )
                )
            )
        if depth > self.limits.max_depth:
            raise _LimitError(
                SpecProblem(
                    location=format_path(path),
                    line=_line(node),
                    message=f"the document is nested more than {self.limits.max_depth} levels deep",
                )
            )

    def _problem(self, path: Path, node: Any, message: str) -> None:
        self.problems.append(SpecProblem(location=format_path(path), line=_line(node), message=message))

    def _build(self, node: Any, path: Path, depth: int) -> object:
        self._visit(node, path, depth)
        self.values.setdefault(path, _line(node))
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self.active:
            self._problem(path, node, "recursive alias: this value contains itself")
            return None
        expected = _SEQ_TAG if isinstance(node, yaml.SequenceNode) else _MAP_TAG
        if node.tag != expected:
            self._problem(path, node, f"unsupported YAML tag '{node.tag}'; use plain lists and mappings")
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [
                    self._build(child, (*path, index), depth + 1) for index, child in enumerate(node.value)
                ]
            result: dict[Any, object] = {}
            for key, key_node, value_node in self._pairs(node, path, depth):
                self.keys.setdefault((*path, key), _line(key_node))
                result[key] = self._build(value_node, (*path, key), depth + 1)
            return result
        finally:
            self.active.discard(id(node))

    def _scalar(self, node: Any, path: Path) -> object:
        if node.tag == _STR_TAG:
            return str(node.value)
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            if exc.problem and "could not determine a constructor" in exc.problem:
                message = (
                    f"unsupported YAML tag '{node.tag}'; only plain values, lists and mappings are allowed"
                )
            else:
                message = f"cannot read this value: {exc.problem or exc}"
            self._problem(path, node, message)
        except (ValueError, OverflowError) as exc:
            self._problem(path, node, f"cannot read the value '{shorten(str(node.value))}': {exc}")
        return None

    def _key(self, key_node: Any, path: Path, depth: int) -> object:
        self._visit(key_node, path, depth)
        if not isinstance(key_node, yaml.ScalarNode):
            self._problem(path, key_node, "mapping keys must be plain values, not lists or mappings")
            return _INVALID
        before = len(self.problems)
        key = self._scalar(key_node, path)
        return _INVALID if len(self.problems) > before else key

    def _pairs(self, node: Any, path: Path, depth: int) -> list[tuple[Any, Any, Any]]:
        """The effective entries of a mapping node: ``<<`` merges applied, explicit keys winning."""
        explicit: dict[Any, tuple[Any, Any]] = {}
        merged: dict[Any, tuple[Any, Any]] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                self._merge(value_node, path, depth, merged)
                continue
            key = self._key(key_node, path, depth + 1)
            if key is _INVALID:
                continue
            if key in explicit and id(key_node) not in self.reported:
                self.reported.add(id(key_node))
                first = _line(explicit[key][0])
                self._problem(
                    (*path, key),
                    key_node,
                    f"duplicate key '{key}' (first at line {first}); each key may appear once in a mapping",
                )
            explicit[key] = (key_node, value_node)
        combined = {**merged, **explicit}
        return [(key, key_node, value_node) for key, (key_node, value_node) in combined.items()]

    def _merge(self, value_node: Any, path: Path, depth: int, merged: dict[Any, tuple[Any, Any]]) -> None:
        self._visit(value_node, path, depth + 1)
        if isinstance(value_node, yaml.MappingNode):
            sources = [value_node]
        elif isinstance(value_node, yaml.SequenceNode):
            sources = list(value_node.value)
        else:
            sources = []
        if not sources or not all(isinstance(s, yaml.MappingNode) and s.tag == _MAP_TAG for s in sources):
            self._problem(path, value_node, "a '<<' merge key takes a mapping or a list of mappings")
            return
        for merge_source in sources:  # earlier sources win, as in YAML's merge key type
            if id(merge_source) in self.active:
                self._problem(path, merge_source, "recursive alias: this mapping merges itself")
                continue
            self.active.add(id(merge_source))
            try:
                for key, key_node, node in self._pairs(merge_source, path, depth + 1):
                    merged.setdefault(key, (key_node, node))
            finally:
                self.active.discard(id(merge_source))


def _line(node: Any) -> int:
    return int(node.start_mark.line) + 1


__all__ = ["YamlDocument", "YamlLimits", "YamlSyntaxError", "read_yaml"]
