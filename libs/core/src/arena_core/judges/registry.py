"""Looking judges up by name.

Nine judges are registered: the rule judges ``phrase``, ``exact``, ``strict``
and ``regex`` (phrase objectives, and pattern objectives for ``regex``; no
model), the model-based ``llm`` judge (phrase and rubric objectives), and the
evidence judges ``canary`` (a planted secret leaked), ``length`` (a reply
beyond a bound) and ``action`` (a tool call broke the policy), and ``helpful``
(over-refusal probes: the defender answered a harmless request). :func:`get_judge`
builds one per match.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from arena_core.errors import UnknownJudgeError
from arena_core.judges.action_judge import ActionJudge
from arena_core.judges.canary_judge import CanaryJudge
from arena_core.judges.exact_judge import ExactJudge
from arena_core.judges.helpfulness_judge import HelpfulnessJudge
from arena_core.judges.judge import Judge
from arena_core.judges.length_judge import LengthJudge
from arena_core.judges.llm_judge import JudgeModelFactory, LlmJudge
from arena_core.judges.phrase_judge import PhraseJudge
from arena_core.judges.regex_judge import RegexJudge
from arena_core.judges.strict_judge import StrictPhraseJudge

JUDGES: Mapping[str, type[Judge]] = MappingProxyType(
    {
        judge.name: judge
        for judge in (
            PhraseJudge,
            ExactJudge,
            StrictPhraseJudge,
            RegexJudge,
            LlmJudge,
            CanaryJudge,
            LengthJudge,
            ActionJudge,
            HelpfulnessJudge,
        )
    }
)
"""Every judge class by its name, in the order they are offered to users."""

JUDGE_NAMES: tuple[str, ...] = tuple(JUDGES)
"""The valid judge names: ``phrase``, ``exact``, ``strict``, ``regex``, ``llm``, ``canary``,
``length``, ``action``, ``helpful``."""


def get_judge(name: str, *, model_factory: JudgeModelFactory | None = None) -> Judge:
    """Return a new instance of the judge called ``name``.

    The name is matched after stripping surrounding whitespace and lower-casing.
    ``model_factory`` supplies the model of model-based judges (``llm``); other
    judges ignore it. It is not called here: the ``llm`` judge calls it on its
    first judgement (or when asked for its ``model_id``), so building a judge
    to validate a request needs no model. Without it the ``llm`` judge raises
    :class:`~arena_core.errors.ConfigError` when first used.

    Raises:
        UnknownJudgeError: when no judge has that name; the message lists the
            valid names.
    """
    judge = JUDGES.get(name.strip().lower())
    if judge is None:
        raise UnknownJudgeError(f"unknown judge '{name}'; choose one of: {', '.join(JUDGE_NAMES)}")
    if issubclass(judge, LlmJudge):
        return judge(model_factory)
    return judge()


__all__ = ["JUDGES", "JUDGE_NAMES", "JudgeModelFactory", "get_judge"]
