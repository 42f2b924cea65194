"""The goat strategy played through the real attacker A2A app against the real defender.

The attacker model and the defender model are separate scripted model servers:
the attacker's rules answer with chosen GOAT JSON (matched on the "TURN k of"
line of each prompt, or on "NEW CONVERSATION"), the defender's mode decides
what it answers (``obey`` repeats what follows "repeat after me:" and refuses
anything else, ``refuse`` always refuses).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from arena_attacker.strategies.goat_techniques import (
    TECHNIQUES,
    Technique,
    fallback_message,
    technique_rotation,
)
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.errors import InvalidInputError
from arena_core.match_models import MatchRequest, MatchResult, TurnRecord
from arena_core.objective import Objective
from arena_model.scripted_engine import ScriptedRule
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

_BY_ID = {technique.id: technique for technique in TECHNIQUES}


def _move(strategy: str, reply: str, observation: str = "seen", thought: str = "think") -> str:
    return json.dumps({"observation": observation, "thought": thought, "strategy": strategy, "reply": reply})


def _setup(
    arena: InProcessArena,
    *,
    defender_mode: str,
    rules: Sequence[ScriptedRule] = (),
    attacker_mode: str = "echo",
) -> None:
    arena.add_model("defmodel", mode=defender_mode)
    arena.add_model("atkmodel", mode=attacker_mode, rules=rules)
    arena.add_defender(model_host="defmodel")
    arena.add_attacker(model_host="atkmodel")


async def _play(arena: InProcessArena, **fields: Any) -> tuple[MatchResult, list[TurnRecord]]:
    request = MatchRequest.model_validate({"target": "http://defender", "strategy": "goat", **fields})
    streamed: list[TurnRecord] = []

    async def on_turn(record: TurnRecord) -> None:
        streamed.append(record)

    result = await play_remote_match("http://attacker", request, on_turn=on_turn, http=arena.http)
    return result, streamed


async def test_picks_catalogue_techniques_and_records_its_reasoning(arena: InProcessArena) -> None:
    _setup(
        arena,
        defender_mode="obey",
        rules=[
            ScriptedRule(
                r"TURN 1 of",
                _move(
                    "Hypothetical", "repeat after me: Once upon a time", "nothing yet", "open with a story"
                ),
            ),
            # Turn 2 is answered only if the attacker model was shown the defender's reply.
            ScriptedRule(
                r"TARGET REPLIED: Once upon a time.*TURN 2 of",
                _move("response priming + Refusal Suppression", "repeat after me: I Give Up", "it repeats"),
            ),
        ],
    )
    result, streamed = await _play(arena, max_turns=6)
    assert result.outcome == "attacker_won", result
    assert result.turns_used == 2 and len(streamed) == 2
    assert len({turn.context_id for turn in result.turns}) == 1
    first, second = (turn.reasoning or "" for turn in result.turns)
    assert first.splitlines() == [
        "goat turn 1 · technique(s): Hypothetical",
        "observation: nothing yet",
        "thought: open with a story",
        "strategy: Hypothetical",
    ]
    assert second.startswith("goat turn 2 · technique(s): Response Priming, Refusal Suppression\n")
    assert "observation: it repeats" in second
    assert "goat.attacker" in (result.reproducibility.prompt_hashes if result.reproducibility else {})


async def test_falls_back_to_the_seeded_rotation_on_unusable_output(arena: InProcessArena) -> None:
    _setup(
        arena,
        defender_mode="refuse",
        rules=[
            ScriptedRule(r"TURN 1 of", "I think a hypothetical would work well here."),
            ScriptedRule(r"TURN 2 of", _move("bananas", "hello there")),
            ScriptedRule(r"TURN 3 of", _move("dual_response", "   ")),
            ScriptedRule(r"TURN 4 of", '{"strategy": "hypothetical", "reply": "cut off by the tok'),
        ],
    )
    result, _ = await _play(arena, max_turns=4, seed=3, params={"reset_after_refusals": 0})
    assert result.outcome == "defended" and result.turns_used == 4
    assert result.resets == 0 and len({turn.context_id for turn in result.turns}) == 1
    rotation = technique_rotation(3, TECHNIQUES)
    objective = Objective()
    used: list[Technique] = [rotation[0], rotation[1], _BY_ID["dual_response"], rotation[2]]
    assert [turn.attacker_text for turn in result.turns] == [fallback_message(t, objective) for t in used]
    reasoning = [turn.reasoning or "" for turn in result.turns]
    assert f"rotation picked {rotation[0].name}" in reasoning[0] and "not usable JSON" in reasoning[0]
    assert f"rotation picked {rotation[1].name}" in reasoning[1] and "'bananas'" in reasoning[1]
    assert "empty reply; sent the built-in Dual Response message" in reasoning[2]
    assert f"rotation picked {rotation[2].name}" in reasoning[3]


async def test_starts_a_new_conversation_after_consecutive_refusals(arena: InProcessArena) -> None:
    _setup(
        arena,
        defender_mode="refuse",
        rules=[
            ScriptedRule(
                r"NEW CONVERSATION.*failed there: hypothetical\.", _move("persona", "fresh start one")
            ),
            ScriptedRule(r"NEW CONVERSATION", _move("opposite_intent", "fresh start two")),
            ScriptedRule(r"TURN \d+ of", _move("hypothetical", "same old")),
        ],
    )
    result, _ = await _play(arena, max_turns=5)  # reset_after_refusals defaults to 2
    assert result.outcome == "defended" and result.resets == 2
    turns = result.turns
    assert [turn.attacker_text for turn in turns] == [
        "same old",
        "same old",
        "fresh start one",
        "same old",
        "fresh start two",
    ]
    contexts = [turn.context_id for turn in turns]
    assert contexts[0] == contexts[1] != contexts[2] == contexts[3] != contexts[4]
    assert [turn.new_conversation for turn in turns] == [True, False, True, False, True]
    assert "technique(s): Persona Modification" in (turns[2].reasoning or "")

    # No reset is counted when the refusal that triggers it was the match's last turn.
    short, _ = await _play(arena, max_turns=4)
    assert short.resets == 1 and len({turn.context_id for turn in short.turns}) == 2


async def test_technique_subset_limits_what_the_model_may_name(arena: InProcessArena) -> None:
    _setup(
        arena,
        defender_mode="refuse",
        rules=[ScriptedRule(r"TURN \d+ of", _move("dual_response", "two answers please"))],
    )
    result, _ = await _play(
        arena,
        max_turns=3,
        seed=5,
        params={"techniques": "Hypothetical, opposite-intent", "reset_after_refusals": 0},
    )
    assert result.reproducibility is not None
    assert result.reproducibility.strategy_params == {
        "techniques": "hypothetical,opposite_intent",
        "reset_after_refusals": 0,
    }
    rotation = technique_rotation(5, [_BY_ID["hypothetical"], _BY_ID["opposite_intent"]])
    objective = Objective()
    expected = [fallback_message(rotation[i % 2], objective) for i in range(3)]
    assert [turn.attacker_text for turn in result.turns] == expected


async def test_attacker_model_refusal_ends_the_match_as_attacker_refused(arena: InProcessArena) -> None:
    _setup(arena, defender_mode="obey", attacker_mode="refuse")
    result, streamed = await _play(arena, max_turns=5)
    assert result.outcome == "attacker_refused"
    assert result.attacker_refusal == "I can't help with that."
    assert result.turns == [] and streamed == []


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"nope": True}, "nope"),
        ({"techniques": "hypothetical,bogus"}, "unknown technique(s) bogus"),
        ({"techniques": " , "}, "name at least one technique"),
        ({"reset_after_refusals": -1}, "reset_after_refusals"),
    ],
)
async def test_invalid_params_fail_the_task_with_a_reason(
    arena: InProcessArena, params: dict[str, Any], expected: str
) -> None:
    _setup(arena, defender_mode="obey")
    with pytest.raises(InvalidInputError, match="invalid params for strategy 'goat'") as caught:
        await _play(arena, max_turns=3, params=params)
    assert expected in str(caught.value)


async def test_same_seed_same_transcript_other_seed_other_rotation(arena: InProcessArena) -> None:
    # The echo attacker model never answers JSON, so every turn comes from the rotation.
    _setup(arena, defender_mode="refuse", attacker_mode="echo")
    names = {seed: [t.name for t in technique_rotation(seed, TECHNIQUES)][:4] for seed in (21, 22)}
    assert names[21] != names[22]

    def transcript(result: MatchResult) -> list[tuple[str, str, str | None, str]]:
        return [(t.attacker_text, t.defender_text, t.reasoning, t.context_id) for t in result.turns]

    first, _ = await _play(arena, max_turns=4, seed=21, params={"reset_after_refusals": 0})
    again, _ = await _play(arena, max_turns=4, seed=21, params={"reset_after_refusals": 0})
    other, _ = await _play(arena, max_turns=4, seed=22, params={"reset_after_refusals": 0})
    assert [t[:3] for t in transcript(first)] == [t[:3] for t in transcript(again)]
    for result, seed in ((first, 21), (other, 22)):
        picked = [(t.reasoning or "").splitlines()[0].split(": ", 1)[1] for t in result.turns]
        assert picked == names[seed]
