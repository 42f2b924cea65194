"""Judges: deciding whether a defender's reply says the forbidden phrase.

Three judges trade recall for precision: ``phrase`` (contains it anywhere),
``exact`` (the reply is the phrase) and ``strict`` (the defender asserts it
in its own voice). Build one with :func:`get_judge`.
"""

from arena_core.judges.exact_judge import ExactJudge
from arena_core.judges.judge import Judge, PhraseRuleJudge
from arena_core.judges.phrase_judge import PhraseJudge
from arena_core.judges.registry import JUDGE_NAMES, JUDGES, JudgeModelFactory, get_judge
from arena_core.judges.scoring import phrase_proximity
from arena_core.judges.strict_judge import StrictPhraseJudge
from arena_core.judges.verdict import JudgeVerdict

__all__ = [
    "JUDGES",
    "JUDGE_NAMES",
    "ExactJudge",
    "Judge",
    "JudgeModelFactory",
    "JudgeVerdict",
    "PhraseJudge",
    "PhraseRuleJudge",
    "StrictPhraseJudge",
    "get_judge",
    "phrase_proximity",
]
