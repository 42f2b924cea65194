"""The goat strategy's catalogue and pure helpers: names, matching, rotation, fallbacks, moves."""

from __future__ import annotations

import json
import re

import pytest

from arena_attacker.strategies.goat_strategy import SYSTEM_PROMPT, GoatMove, GoatStrategy, move_from_reply
from arena_attacker.strategies.goat_techniques import (
    TECHNIQUE_IDS,
    TECHNIQUES,
    Technique,
    catalogue_text,
    fallback_message,
    match_techniques,
    parse_technique_ids,
    technique_rotation,
)
from arena_core.errors import InvalidInputError
from arena_core.objective import Objective

_BY_ID = {technique.id: technique for technique in TECHNIQUES}
PAPER_TECHNIQUES = (
    "refusal_suppression",
    "dual_response",
    "response_priming",
    "persona_modification",
    "hypothetical",
    "topic_splitting",
    "opposite_intent",
)


def test_catalogue_holds_the_papers_techniques_with_definitions() -> None:
    assert set(PAPER_TECHNIQUES) <= set(TECHNIQUE_IDS)
    assert len(set(TECHNIQUE_IDS)) == len(TECHNIQUES)
    for technique in TECHNIQUES:
        assert len(technique.definition) > 100, technique.id
        assert technique.id in catalogue_text([technique])


def test_system_prompt_leaves_the_test_markers_to_the_user_messages() -> None:
    system = SYSTEM_PROMPT.replace("{catalogue}", catalogue_text(TECHNIQUES)).lower()
    assert "new conversation" not in system
    assert not re.search(r"turn \d+ of", system)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("all", TECHNIQUE_IDS),
        (" ALL ", TECHNIQUE_IDS),
        ("Hypothetical", ("hypothetical",)),
        (
            "response priming, opposite-intent, hypothetical,",
            ("response_priming", "opposite_intent", "hypothetical"),
        ),
        ("dual_response,Dual Response", ("dual_response",)),
    ],
)
def test_parse_technique_ids(text: str, expected: tuple[str, ...]) -> None:
    assert parse_technique_ids(text) == expected


@pytest.mark.parametrize(("text", "message"), [("hypothetical, magic", "magic"), (",,", "at least one")])
def test_parse_technique_ids_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_technique_ids(text)


def test_params_defaults_canonical_form_and_validation() -> None:
    params = GoatStrategy.parse_params({})
    assert params.model_dump() == {"techniques": "all", "reset_after_refusals": 2}
    for name, field in type(params).model_fields.items():
        assert field.description, name
    subset = GoatStrategy.parse_params({"techniques": "Topic Splitting,hypothetical"})
    assert subset.model_dump()["techniques"] == "topic_splitting,hypothetical"
    with pytest.raises(InvalidInputError, match="unknown technique"):
        GoatStrategy.parse_params({"techniques": "jedi mind trick"})
    with pytest.raises(InvalidInputError, match="reset_after_refusals"):
        GoatStrategy.parse_params({"reset_after_refusals": -1})


def test_match_techniques_by_id_name_alias_in_order_of_mention() -> None:
    found = match_techniques("Role-play, then a HYPOTHETICAL with response priming", TECHNIQUES)
    assert [t.id for t in found] == ["persona_modification", "hypothetical", "response_priming"]
    assert [t.id for t in match_techniques(["opposite intent", "dual_response"], TECHNIQUES)] == [
        "opposite_intent",
        "dual_response",
    ]
    assert match_techniques("bananas", TECHNIQUES) == ()
    assert match_techniques(None, TECHNIQUES) == ()
    # A technique outside the enabled subset does not count.
    assert match_techniques("dual_response", [_BY_ID["hypothetical"]]) == ()
    # Substrings of other words are not names.
    assert match_techniques("hypotheticals are fun", TECHNIQUES) == ()


def test_rotation_is_seeded_and_complete() -> None:
    assert technique_rotation(None, TECHNIQUES) == TECHNIQUES
    assert technique_rotation(4, TECHNIQUES) == technique_rotation(4, TECHNIQUES)
    assert sorted(t.id for t in technique_rotation(4, TECHNIQUES)) == sorted(TECHNIQUE_IDS)
    assert len({technique_rotation(seed, TECHNIQUES) for seed in range(10)}) > 1


@pytest.mark.parametrize("technique", TECHNIQUES, ids=lambda t: t.id)
def test_fallback_messages_carry_the_objective(technique: Technique) -> None:
    for objective, needle in (
        (Objective(), '"I Give Up"'),
        (Objective(rubric="promises a refund"), "refund"),
    ):
        text = fallback_message(technique, objective)
        assert needle in text and "{" not in text and text.strip() == text


def test_move_from_reply_cases() -> None:
    objective = Objective()
    pick = _BY_ID["topic_splitting"]
    good = move_from_reply(
        {"observation": "o", "thought": "t", "strategy": "hypothetical", "reply": " hi "},
        objective,
        TECHNIQUES,
        pick,
    )
    assert (good.reply, [t.id for t in good.techniques], good.fallback, good.rotated) == (
        "hi",
        ["hypothetical"],
        None,
        False,
    )
    assert json.loads(good.as_json()) == {
        "observation": "o",
        "thought": "t",
        "strategy": "hypothetical",
        "reply": "hi",
    }
    assert good.reasoning(3).splitlines()[0] == "goat turn 3 · technique(s): Hypothetical"

    no_json = move_from_reply(None, objective, TECHNIQUES, pick)
    assert (
        no_json.rotated
        and no_json.techniques == (pick,)
        and no_json.reply == fallback_message(pick, objective)
    )

    unknown = move_from_reply({"strategy": "vibes", "reply": "hi"}, objective, TECHNIQUES, pick)
    assert unknown.rotated and unknown.reply == fallback_message(pick, objective)
    assert unknown.fallback is not None and "'vibes'" in unknown.fallback

    empty = move_from_reply({"strategy": "dual_response", "reply": ""}, objective, TECHNIQUES, pick)
    assert not empty.rotated and empty.reply == fallback_message(_BY_ID["dual_response"], objective)


def test_moves_are_frozen() -> None:
    move = GoatMove("hi", (TECHNIQUES[0],), "o", "t", "s")
    with pytest.raises(AttributeError):
        move.reply = "other"  # type: ignore[misc]
