"""A problem in a spec document, located by path and line.

The reader (:mod:`arena_orchestrator.spec_source`) and the campaign loader
(:mod:`arena_orchestrator.spec_loader`) both report what is wrong as
:class:`SpecProblem` values, so every problem, whether a YAML syntax error or a
value the campaign spec refuses, reads the same way: ``line 12, defenders[1].url: ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

Path = tuple[Any, ...]
"""A position in a decoded document: mapping keys and list indexes from the top."""


class SpecProblem(BaseModel):
    """One thing wrong with a document.

    ``location`` is the path of the offending value, such as ``defenders[1].url`` or
    ``repetitions``; ``""`` means the document as a whole. ``line`` is the 1-based line
    of the offending key or value in the source text (the nearest enclosing one when
    the value is missing), or ``None`` when unknown (a decoded JSON body, a size error).
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


class SpecSourceError(Exception):
    """A text is not a readable document; ``problems`` lists why (at least one).

    A plain exception, not an ``ArenaError``: the reader's caller decides what kind of
    input error it is (the campaign loader raises ``CampaignSpecError`` with these problems).
    """

    def __init__(self, problems: Sequence[SpecProblem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems: list[SpecProblem] = list(problems)


def format_path(path: Path) -> str:
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


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut: input quoted in a message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["Path", "SpecProblem", "SpecSourceError", "format_path", "shorten"]
