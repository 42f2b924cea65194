"""Looking judges up by name."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from arena_core.errors import UnknownJudgeError
from arena_core.judges.exact_judge import ExactJudge
from arena_core.judges.judge import Judge
from arena_core.judges.phrase_judge import PhraseJudge
from arena_core.judges.strict_judge import StrictPhraseJudge

JUDGES: Mapping[str, type[Judge]] = MappingProxyType(
    {judge.name: judge for judge in (PhraseJudge, ExactJudge, StrictPhraseJudge)}
)
"""Every judge class by its name, in the order they are offered to users."""

JUDGE_NAMES: tuple[str, ...] = tuple(JUDGES)
"""The valid judge names, ``("phrase", "exact", "strict")``."""


def get_judge(name: str) -> Judge:
    """Return a new instance of the judge called ``name``.

    The name is matched after stripping surrounding whitespace and lower-casing.

    Raises:
        UnknownJudgeError: when no judge has that name; the message lists the
            valid names.
    """
    judge = JUDGES.get(name.strip().lower())
    if judge is None:
        raise UnknownJudgeError(f"unknown judge '{name}'; choose one of: {', '.join(JUDGE_NAMES)}")
    return judge()


__all__ = ["JUDGES", "JUDGE_NAMES", "get_judge"]
