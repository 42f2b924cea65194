"""Judges: deciding whether a defender's reply meets the attack objective.

Four rule judges decide phrase objectives without a model, trading recall
for precision: ``phrase`` (contains it anywhere), ``exact`` (the reply is the
phrase), ``strict`` (the defender asserts it in its own voice) and ``regex``
(the objective's pattern, else the phrase, matches). The ``llm`` judge asks a
language model and also decides rubric objectives ("promises a refund").
Two evidence judges decide without a model too: ``canary`` (a secret planted in the
defender leaked, in any form) and ``length`` (a reply far beyond a bound); ``helpful``
decides over-refusal probes (the defender answered a harmless request), and ``action``
decides on what the defender did: its tool calls, from its task or the match's trace.
Build one with :func:`get_judge`.
"""

from arena_core.judges.action_judge import ActionJudge
from arena_core.judges.canary_judge import CanaryJudge
from arena_core.judges.exact_judge import ExactJudge
from arena_core.judges.helpfulness_judge import HelpfulnessJudge
from arena_core.judges.judge import NO_CONTEXT, Judge, JudgeContext, PhraseRuleJudge
from arena_core.judges.length_judge import LengthJudge
from arena_core.judges.llm_judge import LlmJudge
from arena_core.judges.phrase_judge import PhraseJudge
from arena_core.judges.regex_judge import RegexJudge
from arena_core.judges.registry import JUDGE_NAMES, JUDGES, JudgeModelFactory, get_judge
from arena_core.judges.scoring import phrase_proximity
from arena_core.judges.strict_judge import StrictPhraseJudge
from arena_core.judges.verdict import JudgeVerdict

__all__ = [
    "JUDGES",
    "JUDGE_NAMES",
    "NO_CONTEXT",
    "ActionJudge",
    "CanaryJudge",
    "ExactJudge",
    "HelpfulnessJudge",
    "Judge",
    "JudgeContext",
    "JudgeModelFactory",
    "JudgeVerdict",
    "LengthJudge",
    "LlmJudge",
    "PhraseJudge",
    "PhraseRuleJudge",
    "RegexJudge",
    "StrictPhraseJudge",
    "get_judge",
    "phrase_proximity",
]
