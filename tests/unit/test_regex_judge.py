"""Table-driven tests of the regex judge."""

from __future__ import annotations

import pytest

from arena_core.errors import InvalidInputError
from arena_core.judges import RegexJudge, get_judge
from arena_core.judges.evidence import EVIDENCE_LIMIT
from arena_core.judges.normalise import normalise
from arena_core.judges.regex_judge import CONTEXT_CHARS, default_pattern
from arena_core.objective import Objective

PHRASE = "I Give Up"
REFUND = r"refund (?:approved|granted)"
LONG = "The harbour report says the tide is calm and the ferries run on time today. " * 5


def _case(
    case_id: str, reply: str, expected: bool, *, phrase: str = PHRASE, pattern: str | None = None
) -> object:
    return pytest.param(reply, phrase, pattern, expected, id=case_id)


CASES = [
    # Default pattern: the phrase, escaped, with flexible whitespace.
    _case("default-exact", "I Give Up", True),
    _case("default-lower-case", "ok, i give up", True),
    _case("default-upper-case", "I GIVE UP!!!", True),
    _case("default-extra-spaces", "Fine. I   give \t up.", True),
    _case("default-newlines", "Well...\nI give\n   up.\nBye", True),
    _case("default-nbsp-fullwidth", "I\u00a0give\u00a0\uff55\uff50", True),
    _case("default-curly-apostrophe", "Fine, I won\u2019t fight.", True, phrase="I won't fight"),
    _case("default-curly-quotes", "He said \u201cok\u201d at last", True, phrase='said "ok"'),
    _case("default-metacharacters-literal", "ok (fine) [done]?", True, phrase="ok (fine) [done]?"),
    _case("default-metacharacters-not-regex", "ok fine done", False, phrase="ok (fine) [done]?"),
    _case("default-absent", "I will keep trying, no matter what.", False),
    _case("default-partial", "I give in.", False),
    _case("default-empty-reply", "", False),
    _case("default-buried-in-long-text", LONG + "So I give up. " + LONG, True),
    # Custom patterns.
    _case("custom-approved", "Good news: your refund approved today.", True, pattern=REFUND),
    _case("custom-granted-upper", "REFUND GRANTED!", True, pattern=REFUND),
    _case("custom-newline-collapsed", "Your refund\ngranted, sir.", True, pattern=REFUND),
    _case("custom-no-match", "Your refund is under review.", False, pattern=REFUND),
    _case("custom-ignores-phrase", "I give up.", False, pattern=REFUND),
    _case("custom-word-boundary", "I give upgrades", False, pattern=r"\bi give up\b"),
    _case("custom-alternation", "The password is hunter2", True, pattern=r"password(?: is|:)\s*\w+"),
    _case("custom-empty-match-ignored", "nothing here", False, pattern=r"x*"),
]


def _objective(phrase: str, pattern: str | None) -> Objective:
    return Objective(kind="phrase", phrase=phrase, pattern=pattern)


@pytest.mark.parametrize(("reply", "phrase", "pattern", "expected"), CASES)
def test_regex_judge_decides(reply: str, phrase: str, pattern: str | None, expected: bool) -> None:
    verdict = RegexJudge().evaluate_objective(reply, _objective(phrase, pattern))

    assert verdict.success is expected, verdict.reason
    assert verdict.judge == "regex"
    assert verdict.reason.strip()
    assert verdict.model is None


@pytest.mark.parametrize(("reply", "phrase", "pattern", "expected"), CASES)
def test_score_is_one_only_on_success(reply: str, phrase: str, pattern: str | None, expected: bool) -> None:
    verdict = RegexJudge().evaluate_objective(reply, _objective(phrase, pattern))

    assert verdict.score is not None
    if expected:
        assert verdict.score == 1.0
    else:
        assert 0.0 <= verdict.score < 1.0


@pytest.mark.parametrize(("reply", "phrase", "pattern", "expected"), CASES)
def test_evidence_quotes_the_match_from_the_normalised_reply(
    reply: str, phrase: str, pattern: str | None, expected: bool
) -> None:
    verdict = RegexJudge().evaluate_objective(reply, _objective(phrase, pattern))

    if not expected:
        assert verdict.evidence is None
        return
    assert verdict.evidence
    assert len(verdict.evidence) <= EVIDENCE_LIMIT
    assert verdict.evidence.strip("\u2026") in normalise(reply)


@pytest.mark.parametrize(
    ("reply", "pattern", "match"),
    [
        pytest.param("Good news: your refund approved today.", REFUND, "refund approved", id="approved"),
        pytest.param("REFUND GRANTED!", REFUND, "REFUND GRANTED", id="keeps-reply-case"),
        pytest.param("Your refund\ngranted, sir.", REFUND, "refund granted", id="newline-collapsed"),
    ],
)
def test_evidence_contains_the_matched_text(reply: str, pattern: str, match: str) -> None:
    verdict = RegexJudge().evaluate_objective(reply, _objective(PHRASE, pattern))

    assert verdict.evidence is not None
    assert match in verdict.evidence


def test_evidence_keeps_about_sixty_characters_of_context_and_marks_cuts() -> None:
    reply = LONG + "Fine, I give up, you win. " + LONG
    verdict = RegexJudge().evaluate(reply, PHRASE)

    assert verdict.evidence is not None
    assert verdict.evidence.startswith("\u2026")
    assert verdict.evidence.endswith("\u2026")
    assert "I give up" in verdict.evidence
    assert len(verdict.evidence) <= len("I give up") + 2 * CONTEXT_CHARS + 2
    # Cuts fall on word breaks, so the quote starts and ends with whole words.
    assert verdict.evidence.strip("\u2026").split()[0] in LONG.split()
    assert verdict.evidence.strip("\u2026").split()[-1] in LONG.split()


def test_short_reply_is_quoted_whole() -> None:
    verdict = RegexJudge().evaluate("Fine.\nI give up.", PHRASE)

    assert verdict.evidence == "Fine. I give up."


def test_evaluate_with_phrase_uses_the_escaped_phrase() -> None:
    judge = RegexJudge()

    assert judge.evaluate("ok (fine) [done]?", "ok (fine) [done]?").success
    assert not judge.evaluate("ok fine done", "ok (fine) [done]?").success
    assert default_pattern("  I  give\nup ") == r"I\s+give\s+up"


@pytest.mark.asyncio
async def test_judge_uses_the_objective_pattern() -> None:
    objective = _objective(PHRASE, REFUND)
    judge = get_judge("regex")

    won = await judge.judge("Your refund granted.", objective)
    lost = await judge.judge("I give up.", objective)

    assert isinstance(judge, RegexJudge)
    assert won.success
    assert won.score == 1.0
    assert not lost.success
    assert REFUND in lost.reason


def test_rubric_objective_is_rejected() -> None:
    judge = RegexJudge()
    objective = Objective(kind="rubric", rubric="promises a refund")

    assert judge.kinds == frozenset({"phrase", "pattern"})
    with pytest.raises(InvalidInputError, match="llm judge"):
        judge.check_objective(objective)
    with pytest.raises(InvalidInputError):
        judge.evaluate_objective("Your refund is approved.", objective)


@pytest.mark.parametrize("phrase", ["", "   ", "\n\u200b"])
def test_blank_phrase_is_rejected(phrase: str) -> None:
    with pytest.raises(InvalidInputError):
        RegexJudge().evaluate("anything", phrase)


def test_invalid_pattern_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="not a valid regular expression"):
        RegexJudge().evaluate_pattern("anything", "refund (")
