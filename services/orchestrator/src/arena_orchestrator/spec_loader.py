"""Reading a campaign spec from YAML or JSON text, with every problem located by line.

:func:`load_campaign_spec` turns the text of a campaign file (YAML or JSON)
into a validated :class:`~arena_orchestrator.campaign_spec.CampaignSpec`.
:func:`parse_campaign_object` validates an already decoded document (a JSON
request body). Both raise :class:`CampaignSpecError`, which lists every problem
found, each with where it is (``defenders[1].url``) and, when the text is
known, the 1-based line of the offending key or value.

Reading is safe on hostile input: only plain YAML values, lists and mappings
are built (``yaml.safe_load`` semantics, no Python objects), the text is
bounded in size, aliases are expanded under a node budget (the "billion
laughs" document fails cleanly), recursive aliases and deep nesting are
rejected, and duplicate mapping keys, which PyYAML silently accepts, are
reported.
"""

from __future__ import annotations

import difflib
import json
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, get_args, get_origin

import yaml  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from arena_core.errors import InvalidInputError
from arena_core.settings import TARGET_TOKEN_ENV_PATTERN
from arena_orchestrator.campaign_spec import NAME_PATTERN, CampaignSpec

MAX_CAMPAIGN_BYTES = 1_000_000
"""Default size limit of a campaign's text, in bytes (UTF-8)."""

MAX_NODES = 100_000
"""Default limit on the values a document expands to, aliases expanded (keys count too)."""

MAX_DEPTH = 32
"""Deepest nesting of lists and mappings accepted (a campaign needs 5)."""

Path = tuple[Any, ...]
"""A position in a decoded document: mapping keys and list indexes from the top."""

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when PyYAML was built with it (several times faster; libyaml caps
nesting at 1000 levels), else PyYAML's own (whose deep recursion is caught)."""

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_JSON_START = re.compile(r"\s*\{\s*[\"}]")
_STRIPPED_PREFIXES = ("Value error, ", "Assertion failed, ")
_DUPLICATE_LABEL = re.compile(r"two (attackers|defenders|objectives) are called '(.*)';")


class SpecProblem(BaseModel):
    """One thing wrong with a campaign document.

    ``location`` is the path of the offending field, such as ``defenders[1].url`` or
    ``repetitions``; ``""`` means the document as a whole. ``line`` is the 1-based line
    of the offending key or value in the source text (the nearest enclosing one when
    the field is missing), or ``None`` when unknown (a decoded JSON body, a size error).
    ``str(problem)`` is ``"line 12, defenders[1].url: <message>"``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    location: str = ""
    line: int | None = None
    message: str

    def __str__(self) -> str:
        prefix: list[str] = []
        if self.line is not None and not re.search(rf"\bline {self.line}\b", self.message):
            prefix.append(f"line {self.line}")
        if self.location:
            prefix.append(self.location)
        return f"{', '.join(prefix)}: {self.message}" if prefix else self.message


class CampaignSpecError(InvalidInputError):
    """A campaign document could not be read or is not a valid campaign.

    ``problems`` lists every problem found (at least one), sorted by line.
    ``str(error)`` is one readable multi-line text naming the source, e.g.::

        campaign.yaml: 2 problems:
          line 3, repetitions: Input should be greater than or equal to 1
          line 12, defenders[1].url: defender url must be an http(s) URL ...
    """

    kind = "invalid_campaign"

    def __init__(self, source: str, problems: Sequence[SpecProblem]) -> None:
        unique = list(dict.fromkeys(problems)) or [SpecProblem(message="the campaign is invalid")]
        ordered = sorted(unique, key=lambda p: (p.line is None, p.line or 0))
        count = f"{len(ordered)} problem{'' if len(ordered) == 1 else 's'}"
        super().__init__(f"{source}: {count}:\n" + "\n".join(f"  {p}" for p in ordered))
        self.source = source
        self.problems: list[SpecProblem] = ordered

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.source, self.problems))


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


def load_campaign_spec(
    text: str | bytes,
    *,
    source: str = "<campaign>",
    max_bytes: int = MAX_CAMPAIGN_BYTES,
    max_nodes: int = MAX_NODES,
) -> CampaignSpec:
    """Read and validate a campaign from YAML or JSON text.

    ``text`` is a ``str`` or UTF-8 ``bytes`` (a leading byte-order mark is ignored).
    A document whose first value is a ``{"...`` object, or whose ``source`` ends in
    ``.json``, is parsed as JSON (and its syntax errors reported as JSON errors);
    anything else as YAML with ``yaml.safe_load`` semantics (anchors, aliases and
    ``<<`` merge keys work, tags that would build other objects do not). ``source``
    names the text in messages (a file name). Texts above ``max_bytes`` bytes, or
    expanding to more than ``max_nodes`` values, are rejected before validation.

    Raises:
        CampaignSpecError: listing every problem with its location and line.
    """
    decoded = _decode(text, source, max_bytes)
    data, lines = _read_document(decoded, source, max_nodes)
    return parse_campaign_object(data, source=source, lines=lines)


def parse_campaign_object(
    data: object, *, source: str = "<campaign>", lines: SourceLines | None = None
) -> CampaignSpec:
    """Validate an already decoded campaign document (e.g. a JSON request body).

    ``data`` must be a mapping of campaign fields. ``lines``, when the document was
    read from text, gives problems their line numbers; without it lines are ``None``.

    Raises:
        CampaignSpecError: listing every problem, with locations such as ``defenders[1].url``.
    """
    if not isinstance(data, Mapping):
        line = lines.value_line(()) if lines else None
        if data is None:
            message = "the campaign is empty; it needs at least 'name', 'attackers' and 'defenders'"
        else:
            message = (
                "the top level must be a mapping of campaign fields (name, attackers, defenders, ...), "
                f"got {_kind(data)}"
            )
        raise CampaignSpecError(source, [SpecProblem(line=line, message=message)])
    try:
        return CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise CampaignSpecError(source, _validation_problems(exc, data, lines or SourceLines())) from None


# Text to document ----------------------------------------------------------------------


def _decode(text: str | bytes, source: str, max_bytes: int) -> str:
    if isinstance(text, str):
        if len(text) > max_bytes:  # at least one byte per character: no need to encode it all
            raise CampaignSpecError(source, [_too_big(len(text), max_bytes, at_least=True)])
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise CampaignSpecError(source, [_too_big(size, max_bytes)])
        return text.removeprefix("\ufeff")
    if not isinstance(text, bytes | bytearray):
        raise TypeError(f"campaign text must be str or bytes, not {type(text).__name__}")
    if len(text) > max_bytes:
        raise CampaignSpecError(source, [_too_big(len(text), max_bytes)])
    raw = bytes(text).removeprefix(b"\xef\xbb\xbf")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        byte = raw[exc.start]
        message = (
            f"the campaign is not UTF-8 text: byte 0x{byte:02x} at offset {exc.start} ({exc.reason}); "
            "save the file as UTF-8"
        )
        raise CampaignSpecError(source, [SpecProblem(line=line, message=message)]) from None


def _too_big(size: int, limit: int, *, at_least: bool = False) -> SpecProblem:
    amount = f"{'at least ' if at_least else ''}{size:,} bytes"
    return SpecProblem(message=f"the campaign is {amount}, above the limit of {limit:,} bytes")


def _read_document(text: str, source: str, max_nodes: int) -> tuple[object, SourceLines]:
    """The decoded document and where its values are; raises on syntax and structure problems."""
    if source.lower().endswith(".json") or _JSON_START.match(text):
        return _read_json(text, source, max_nodes)
    loader, root = _compose(text, source)
    try:
        if root is None:
            return None, SourceLines()
        builder = _Builder(loader, max_nodes)
        data = builder.build(root, source)
        if builder.problems:
            raise CampaignSpecError(source, builder.problems)
        return data, builder.source_lines()
    finally:
        loader.dispose()


def _read_json(text: str, source: str, max_nodes: int) -> tuple[object, SourceLines]:
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
        raise CampaignSpecError(source, [SpecProblem(line=exc.lineno, message=message)]) from None
    except (ValueError, RecursionError) as exc:
        raise CampaignSpecError(
            source, [SpecProblem(message=f"cannot read the JSON document: {exc}")]
        ) from None
    # Lines (and duplicate keys with their place) come from the YAML reading of the same text:
    # valid JSON is YAML once tabs, which JSON forbids inside strings, are made spaces.
    try:
        loader, root = _compose(text.replace("\t", " "), source)
    except CampaignSpecError:
        root = None
        loader = None
    try:
        if root is not None:
            builder = _Builder(loader, max_nodes)
            builder.build(root, source)
            if builder.problems:
                raise CampaignSpecError(source, builder.problems)
            return data, builder.source_lines()
    finally:
        if loader is not None:
            loader.dispose()
    if duplicates:
        problems = [
            SpecProblem(message=f"duplicate key '{key}'; a key may appear only once") for key in duplicates
        ]
        raise CampaignSpecError(source, problems)
    return data, SourceLines()


def _compose(text: str, source: str) -> tuple[Any, Any]:
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
        problem = SpecProblem(message=f"the document is nested too deeply (the limit is {MAX_DEPTH} levels)")
    if loader is not None:
        loader.dispose()
    raise CampaignSpecError(source, [problem])


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
    nesting beyond :data:`MAX_DEPTH` are refused, duplicate keys and unsupported tags are
    collected in ``problems``. Scalars are built by the safe loader's own constructors.
    """

    def __init__(self, loader: Any, max_nodes: int) -> None:
        self.loader = loader
        self.max_nodes = max_nodes
        self.problems: list[SpecProblem] = []
        self.count = 0
        self.values: dict[Path, int] = {}
        self.keys: dict[Path, int] = {}
        self.active: set[int] = set()
        self.reported: set[int] = set()

    def build(self, root: Any, source: str) -> object:
        try:
            return self._build(root, (), 0)
        except _LimitError as exc:
            raise CampaignSpecError(source, [exc.problem]) from None

    def source_lines(self) -> SourceLines:
        return SourceLines(values=self.values, keys=self.keys)

    def _visit(self, node: Any, path: Path, depth: int) -> None:
        self.count += 1
        if self.count > self.max_nodes:
            raise _LimitError(
                SpecProblem(
                    message=(
                        f"the document holds more than {self.max_nodes:,} values (keys and values, YAML "
                        "aliases expanded); a campaign never needs that many (a 'billion laughs' document?)"
                    )
                )
            )
        if depth > MAX_DEPTH:
            raise _LimitError(
                SpecProblem(
                    location=_format_path(path),
                    line=_line(node),
                    message=f"the document is nested more than {MAX_DEPTH} levels deep",
                )
            )

    def _problem(self, path: Path, node: Any, message: str) -> None:
        self.problems.append(SpecProblem(location=_format_path(path), line=_line(node), message=message))

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
            self._problem(path, node, f"cannot read the value '{_shorten(str(node.value))}': {exc}")
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


# Validation errors to problems --------------------------------------------------------------


def _validation_problems(
    exc: ValidationError, data: Mapping[Any, Any], lines: SourceLines
) -> list[SpecProblem]:
    problems: list[SpecProblem] = []
    unions: dict[tuple[Path, int | None], list[ErrorDetails]] = {}
    for error in exc.errors(include_url=False):
        loc: Path = tuple(error["loc"])
        known, _ = _walk(data, loc)
        kind = error["type"]
        message = _message(error)
        if kind == "missing":
            path, line = loc, lines.value_line(loc[:known])
        elif kind == "extra_forbidden":
            path, line = loc, lines.key_line(loc)
        elif loc[known : known + 1] == ("[key]",):
            path, line = loc[:known], lines.key_line(loc[:known])
        else:
            path = _refine(loc[:known], message, data)
            line = lines.value_line(path)
            if known < len(loc):  # a union member's tag follows the value's path
                unions.setdefault((path, line), []).append(error)
                continue
        problems.append(SpecProblem(location=_format_path(path), line=line, message=message))
    for (path, line), errors in unions.items():
        problems.append(SpecProblem(location=_format_path(path), line=line, message=_union_message(errors)))
    return problems


def _message(error: ErrorDetails) -> str:
    kind, loc, value = error["type"], error["loc"], error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return f"missing required field '{loc[-1]}'"
    if kind == "extra_forbidden":
        return _unknown_field(tuple(loc))
    if kind == "string_pattern_mismatch":
        if ctx.get("pattern") == NAME_PATTERN:
            return (
                f"'{_shorten(str(value))}' is not a valid name: use 1 to 64 letters, digits, '_', '.' "
                "or '-', starting with a letter or digit"
            )
        if ctx.get("pattern") == TARGET_TOKEN_ENV_PATTERN:
            return (
                f"'{_shorten(str(value))}' is not allowed: bearer_token_env must name a variable "
                "ARENA_TARGET_TOKEN_<NAME> (capitals, digits and '_') set on the attacker; "
                "the token itself never goes in the campaign"
            )
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of fields, got {_kind(value)}"
    if kind == "list_type":
        return f"expected a list, got {_kind(value)}"
    message = error["msg"]
    for prefix in _STRIPPED_PREFIXES:
        message = message.removeprefix(prefix)
    return message


def _union_message(errors: list[ErrorDetails]) -> str:
    messages = list(dict.fromkeys(_message(e) for e in errors))
    lead = "Input should be "
    if len(messages) > 1 and all(m.startswith(lead) for m in messages):
        choices = [m.removeprefix(lead) for m in messages]
        if all(c.startswith("a valid ") for c in choices):
            choices = [choices[0]] + [c.removeprefix("a valid ") for c in choices[1:]]
        text = lead + ", ".join(choices[:-1]) + " or " + choices[-1]
    else:
        text = "; ".join(messages)
    return f"{text}, got {_kind(errors[0].get('input'))}"


def _unknown_field(loc: Path) -> str:
    name = str(loc[-1])
    model = _model_at(loc[:-1])
    if model is None:
        return f"unknown field '{name}'"
    fields = list(model.model_fields)
    close = difflib.get_close_matches(name, fields, n=1, cutoff=0.6)
    if close:
        return f"unknown field '{name}'; did you mean '{close[0]}'?"
    return f"unknown field '{name}'; the fields are: {', '.join(fields)}"


def _refine(path: Path, message: str, data: Mapping[Any, Any]) -> Path:
    """A finer path for errors the spec's model validators raise on a whole mapping."""
    if path == ():
        duplicate = _DUPLICATE_LABEL.match(message)
        if duplicate:
            return _duplicate_label_path(data, duplicate.group(1), duplicate.group(2))
        budget = data.get("budget")
        if message.startswith("the campaign expands to") and isinstance(budget, Mapping):
            return ("budget", "max_matches") if "max_matches" in budget else ("budget",)
    if len(path) == 2 and path[0] == "objectives" and message.startswith(("unknown judge", "judge '")):
        item = _get(data, path)
        if isinstance(item, Mapping) and "judge" in item:
            return (*path, "judge")
    return path


def _duplicate_label_path(data: Mapping[Any, Any], what: str, label: str) -> Path:
    items = data.get(what)
    if not isinstance(items, list):
        return ()
    seen = False
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        if what == "attackers":
            item_label = item.get("name") or str(item.get("strategy", "playbook")).strip()
            field_name = "name" if item.get("name") else "strategy"
        elif what == "objectives":
            fallback = "rubric" if item.get("rubric") else "phrase"
            item_label = item.get("name") or (fallback if len(items) == 1 else f"{fallback}-{index + 1}")
            field_name = "name"
        else:
            item_label, field_name = item.get("name"), "name"
        if item_label != label:
            continue
        if seen:
            return (what, index, field_name) if field_name in item else (what, index)
        seen = True
    return (what,)


def _walk(data: object, path: Path) -> tuple[int, object]:
    """How many leading items of ``path`` name values that exist in ``data``, and the last one."""
    current = data
    for count, item in enumerate(path):
        found, child = _child(current, item)
        if not found:
            return count, current
        current = child
    return len(path), current


def _child(value: object, item: object) -> tuple[bool, object]:
    if isinstance(value, Mapping) and not isinstance(item, bool) and item in value:
        return True, value[item]
    if isinstance(value, list) and type(item) is int and 0 <= item < len(value):
        return True, value[item]
    return False, None


def _get(data: object, path: Path) -> object:
    count, value = _walk(data, path)
    return value if count == len(path) else None


def _model_at(path: Path) -> type[BaseModel] | None:
    """The spec model that validates the mapping at ``path``, if any."""
    annotation: Any = CampaignSpec
    for item in path:
        annotation = _step(annotation, item)
        if annotation is None:
            return None
    for candidate in _candidates(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _candidates(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _candidates(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [c for arg in get_args(annotation) for c in _candidates(arg)]
    return [annotation]


def _step(annotation: Any, item: object) -> Any:
    for candidate in _candidates(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            if isinstance(item, str) and item in candidate.model_fields:
                return candidate.model_fields[item].annotation
        elif get_origin(candidate) is list and isinstance(item, int):
            return get_args(candidate)[0]
        elif get_origin(candidate) is dict and isinstance(item, str):
            return get_args(candidate)[1]
    return None


def _format_path(path: Path) -> str:
    """``("defenders", 1, "url")`` as ``defenders[1].url``."""
    text = ""
    for item in path:
        if type(item) is int:
            text += f"[{item}]"
        elif isinstance(item, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", item):
            text += f".{item}" if text else item
        else:
            text += f"[{json.dumps(item) if isinstance(item, str) else item!r}]"
    return text


def _kind(value: object) -> str:
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})" if abs(value) < 10**20 else "an integer"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ('{_shorten(value)}')"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "MAX_CAMPAIGN_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "CampaignSpecError",
    "SourceLines",
    "SpecProblem",
    "load_campaign_spec",
    "parse_campaign_object",
]
