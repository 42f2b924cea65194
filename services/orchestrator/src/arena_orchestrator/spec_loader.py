"""Reading a campaign spec from YAML or JSON text, with every problem located by line.

:func:`load_campaign_spec` turns the text of a campaign file (YAML or JSON)
into a validated :class:`~arena_orchestrator.campaign_spec.CampaignSpec`.
:func:`parse_campaign_object` validates an already decoded document (a JSON
request body). Both raise :class:`CampaignSpecError`, which lists every problem
found, each with where it is (``defenders[1].url``) and, when the text is
known, the 1-based line of the offending key or value.

The text is read by :mod:`arena_orchestrator.spec_source` (safe YAML/JSON with a
line for every value); the spec's validation errors are located from their
structured data alone (pydantic's ``loc``, ``type`` and ``ctx``, see
:data:`~arena_orchestrator.campaign_spec.FIELD_PATH`), never from their wording,
so rewording a message cannot move the line it is reported at.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Mapping, Sequence
from pathlib import Path as FilePath
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from arena_core.errors import ArenaError, InvalidInputError
from arena_core.objective_datasets import load_behaviours
from arena_core.settings import TARGET_TOKEN_ENV_PATTERN
from arena_orchestrator.campaign_spec import FIELD_PATH, MAX_OBJECTIVES, NAME_PATTERN, CampaignSpec
from arena_orchestrator.spec_problem import Path, SpecProblem, SpecSourceError, format_path, shorten
from arena_orchestrator.spec_source import MAX_NODES, SourceLines, read_document

MAX_CAMPAIGN_BYTES = 1_000_000
"""Default size limit of a campaign's text, in bytes (UTF-8)."""

_EXPLAINED_TYPES = ("value_error", "assertion_error")
"""Error types whose ``ctx["error"]`` is the validator's own exception, message unprefixed."""


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


def load_campaign_spec(
    text: str | bytes,
    *,
    source: str = "<campaign>",
    max_bytes: int = MAX_CAMPAIGN_BYTES,
    max_nodes: int = MAX_NODES,
    base_dir: FilePath | None = None,
) -> CampaignSpec:
    """Read and validate a campaign from YAML or JSON text.

    ``text`` is a ``str`` or UTF-8 ``bytes``, read as
    :func:`~arena_orchestrator.spec_source.read_document` says (JSON when it starts
    with a ``{"...`` object or ``source`` ends in ``.json``, else YAML with
    ``yaml.safe_load`` semantics). ``source`` names the text in messages (a file
    name). Texts above ``max_bytes`` bytes, or expanding to more than ``max_nodes``
    values, are rejected before validation. ``base_dir``, the campaign file's folder on the
    machine running ``arena campaign run``, is where an ``objectives_from`` dataset is read
    (:func:`with_dataset_objectives`); without it such a campaign is refused.

    Raises:
        CampaignSpecError: listing every problem with its location and line.
    """
    try:
        data, lines = read_document(
            text, source=source, what="campaign", max_bytes=max_bytes, max_nodes=max_nodes
        )
    except SpecSourceError as exc:
        raise CampaignSpecError(source, exc.problems) from None
    if isinstance(data, dict) and "objectives_from" in data:
        data = with_dataset_objectives(data, base_dir, source=source, lines=lines)
    return parse_campaign_object(data, source=source, lines=lines)


def with_dataset_objectives(
    data: dict[str, Any], base_dir: FilePath | None, *, source: str, lines: SourceLines
) -> dict[str, Any]:
    """``data`` with the behaviours of its ``objectives_from`` file appended to its objectives.

    The file is read from ``base_dir`` (the campaign file's folder) on the machine that runs
    ``arena campaign run``, which submits the objectives inline: an orchestrator (``base_dir``
    None) never reads a path a campaign names.

    Raises:
        CampaignSpecError: the field is malformed, the file cannot be read, or read here.
    """
    where = ("objectives_from",)

    def problem(message: str, *path: str) -> CampaignSpecError:
        location = ".".join((*where, *path))
        return CampaignSpecError(
            source, [SpecProblem(location=location, line=lines.value_line((*where, *path)), message=message)]
        )

    raw = data["objectives_from"]
    if base_dir is None:
        raise problem(
            "objectives_from names a file on the machine that runs `arena campaign run`, which reads it "
            "and submits its objectives inline; an orchestrator does not read files a campaign names"
        )
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
        raise problem("objectives_from takes {path: FILE.csv or FILE.jsonl, limit: N, categories: [...]}")
    unknown = sorted(set(raw) - {"path", "limit", "categories"})
    if unknown:
        raise problem(f"unknown key(s) {', '.join(map(str, unknown))}; it takes path, limit and categories")
    limit = raw.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise problem("limit must be a positive whole number", "limit")
    categories = raw.get("categories", [])
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise problem("categories must be a list of category names", "categories")
    try:
        behaviours = load_behaviours(base_dir / raw["path"], categories=categories, limit=limit)
    except ArenaError as exc:
        raise problem(exc.message, "path") from None
    listed = data.get("objectives", [])
    objectives = list(listed) if isinstance(listed, list) else [listed]
    if len(objectives) + len(behaviours) > MAX_OBJECTIVES:
        raise problem(
            f"the file adds {len(behaviours)} objectives to {len(objectives)}, over the {MAX_OBJECTIVES} "
            "a campaign may hold: set 'limit' or 'categories'"
        )
    rest = {key: value for key, value in data.items() if key != "objectives_from"}
    return {**rest, "objectives": [*objectives, *(b.objective_fields() for b in behaviours)]}


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
                f"got {_describe(data)}"
            )
        raise CampaignSpecError(source, [SpecProblem(line=line, message=message)])
    try:
        return CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise CampaignSpecError(source, validation_problems(exc, data, lines or SourceLines())) from None


def validation_problems(
    error: ValidationError, data: Mapping[Any, Any], lines: SourceLines
) -> list[SpecProblem]:
    """The problems of ``CampaignSpec``'s validation ``error`` on ``data``, each at its line.

    Where a problem is comes from each error's ``loc``, ``type`` and ``ctx`` only: a
    missing field is located at its enclosing mapping's line, an unknown field at its
    key, anything else at the deepest value of ``loc + ctx[FIELD_PATH]`` that ``data``
    holds. The alternatives of a union (``loc`` naming a member after the value) make
    one problem.
    """
    problems: list[SpecProblem] = []
    unions: dict[tuple[Path, int | None], list[ErrorDetails]] = {}
    for details in error.errors(include_url=False):
        path = _error_path(details)
        known = _known_depth(data, path)
        at = path[:known]
        if details["type"] == "missing":
            at, line = path, lines.value_line(at)
        elif details["type"] == "extra_forbidden":
            at, line = path, lines.key_line(path)
        elif path[known : known + 1] == ("[key]",):
            line = lines.key_line(at)
        else:
            line = lines.value_line(at)
            if known < len(path) and FIELD_PATH not in _ctx(details):
                unions.setdefault((at, line), []).append(details)
                continue
        problems.append(SpecProblem(location=format_path(at), line=line, message=_message(details)))
    for (at, line), members in unions.items():
        problems.append(SpecProblem(location=format_path(at), line=line, message=_union_message(members)))
    return problems


def _ctx(details: ErrorDetails) -> dict[str, Any]:
    return dict(details.get("ctx") or {})


def _error_path(details: ErrorDetails) -> Path:
    """The error's ``loc``, plus the value a model validator named in ``ctx[FIELD_PATH]``."""
    return (*details["loc"], *_ctx(details).get(FIELD_PATH, ()))


def _known_depth(data: object, path: Path) -> int:
    """How many leading items of ``path`` name values that exist in ``data``."""
    current = data
    for count, item in enumerate(path):
        in_mapping = isinstance(current, Mapping) and not isinstance(item, bool) and item in current
        in_list = isinstance(current, list) and type(item) is int and 0 <= item < len(current)
        if not (in_mapping or in_list):
            return count
        current = current[item]  # type: ignore[index]
    return len(path)


# Messages ---------------------------------------------------------------------------------------


def _message(details: ErrorDetails) -> str:
    kind, loc, value, ctx = details["type"], details["loc"], details.get("input"), _ctx(details)
    if kind == "missing":
        return f"missing required field '{loc[-1]}'"
    if kind == "extra_forbidden":
        return _unknown_field(tuple(loc))
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == NAME_PATTERN:
        return (
            f"'{shorten(str(value))}' is not a valid name: use 1 to 64 letters, digits, '_', '.', "
            "'+' or '-', starting with a letter or digit"
        )
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == TARGET_TOKEN_ENV_PATTERN:
        return (
            f"'{shorten(str(value))}' is not allowed: {loc[-1]} must name a variable "
            "ARENA_TARGET_TOKEN_<NAME> (capitals, digits and '_') set on the attacker; "
            "the token itself never goes in the campaign"
        )
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of fields, got {_describe(value)}"
    if kind == "list_type":
        return f"expected a list, got {_describe(value)}"
    if kind in _EXPLAINED_TYPES and "error" in ctx:
        return str(ctx["error"])
    return details["msg"]


def _union_message(members: list[ErrorDetails]) -> str:
    """One message for a value no member of a union accepts: "Input should be a valid boolean, ...\""""
    messages = list(dict.fromkeys(_message(e) for e in members))
    lead = "Input should be "
    if len(messages) > 1 and all(m.startswith(lead) for m in messages):
        choices = [m.removeprefix(lead) for m in messages]
        if all(c.startswith("a valid ") for c in choices):
            choices = [choices[0]] + [c.removeprefix("a valid ") for c in choices[1:]]
        text = lead + ", ".join(choices[:-1]) + " or " + choices[-1]
    else:
        text = "; ".join(messages)
    return f"{text}, got {_describe(members[0].get('input'))}"


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


def _describe(value: object) -> str:
    """What a value is, for "got ..." in messages: ``a string ('x')``, ``a list``, ``an empty value``."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})" if abs(value) < 10**20 else "an integer"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ('{shorten(value)}')"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"


__all__ = [
    "MAX_CAMPAIGN_BYTES",
    "CampaignSpecError",
    "load_campaign_spec",
    "parse_campaign_object",
    "validation_problems",
]
