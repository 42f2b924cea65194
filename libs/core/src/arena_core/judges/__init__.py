"""Judges: deciding whether a defender's reply says the forbidden phrase.

Three judges trade recall for precision: ``phrase`` (contains it anywhere),
``exact`` (the reply is the phrase) and ``strict`` (the defender asserts it
in its own voice). Build one with :func:`get_judge`.
"""

from arena_core.judges.exact_judge import ExactJudge
from arena_core.judges.judge import Judge
from arena_core.judges.phrase_judge import PhraseJudge
from arena_core.judges.registry import JUDGE_NAMES, JUDGES, get_judge
from arena_core.judges.strict_judge import StrictPhraseJudge
from arena_core.judges.verdict import JudgeVerdict

__all__ = [
    "JUDGES",
    "JUDGE_NAMES",
    "ExactJudge",
    "Judge",
    "JudgeVerdict",
    "PhraseJudge",
    "StrictPhraseJudge",
    "get_judge",
]
