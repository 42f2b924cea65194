"""Looking judges up by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from arena_core.errors import UnknownJudgeError
from arena_core.judges.exact_judge import ExactJudge
from arena_core.judges.judge import Judge
from arena_core.judges.phrase_judge import PhraseJudge
from arena_core.judges.strict_judge import StrictPhraseJudge
from arena_core.llm import ChatModel

JUDGES: Mapping[str, type[Judge]] = MappingProxyType(
    {judge.name: judge for judge in (PhraseJudge, ExactJudge, StrictPhraseJudge)}
)
"""Every judge class by its name, in the order they are offered to users."""

JUDGE_NAMES: tuple[str, ...] = tuple(JUDGES)
"""The valid judge names, ``("phrase", "exact", "strict")``."""


JudgeModelFactory = Callable[[], ChatModel]


def get_judge(name: str, *, model_factory: JudgeModelFactory | None = None) -> Judge:
    """Return a new instance of the judge called ``name``.

    The name is matched after stripping surrounding whitespace and lower-casing.
    ``model_factory`` supplies the model of model-based judges (``llm``); it is
    called only when such a judge is built.

    Raises:
        UnknownJudgeError: when no judge has that name; the message lists the
            valid names.
    """
    judge = JUDGES.get(name.strip().lower())
    if judge is None:
        raise UnknownJudgeError(f"unknown judge '{name}'; choose one of: {', '.join(JUDGE_NAMES)}")
    del model_factory  # no model-based judge is registered yet
    return judge()


__all__ = ["JUDGES", "JUDGE_NAMES", "JudgeModelFactory", "get_judge"]
