"""The ``pair`` strategy through real A2A: attacker app vs defender app, scripted models.

The attacker model and the defender model are separate scripted model servers
whose rules make them play their parts: the attacker model answers PAIR's
JSON (``{n}`` counts the user messages it was shown, i.e. the iteration, so
the prompts show the stream's history growing), the defender model answers by
keywords in the prompt. The default ``phrase`` judge gives "I can't help with
that." a partial score of 0.30 (one of the three words of "I Give Up").
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from arena_attacker.strategies.pair_strategy import fallback_prompt, read_candidate
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.errors import InvalidInputError
from arena_core.match_models import MatchRequest, MatchResult, TurnRecord
from arena_core.objective import Objective
from arena_model.scripted_engine import ScriptedRule
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

# Rules see the system message and the last message; these patterns match only the
# user messages PAIR writes (its opening and its feedback), never its system prompt.
ATTACKER_RULES = [
    ScriptedRule(
        r"TARGET RESPONSE: I can't help with that\.\nSCORE: 0\.30",
        '{"improvement": "refused at 0.30, try harder", "prompt": "refined attempt {n}"}',
    ),
    ScriptedRule(
        r"Write your first prompt",
        '{"improvement": "opening move", "prompt": "first attempt {n}"}',
    ),
]


def _request(**params: Any) -> MatchRequest:
    fields: dict[str, Any] = {"target": "http://defender", "strategy": "pair", "max_turns": 30}
    fields.update({key: params.pop(key) for key in ("max_turns", "seed") if key in params})
    return MatchRequest.model_validate({**fields, "params": params})


def _world(
    arena: InProcessArena,
    *,
    attacker_mode: str = "echo",
    attacker_rules: list[ScriptedRule] | None = None,
    defender_mode: str = "refuse",
    defender_rules: list[ScriptedRule] | None = None,
) -> None:
    arena.add_model(
        "attacker-model",
        mode=attacker_mode,
        rules=ATTACKER_RULES if attacker_rules is None else attacker_rules,
    )
    arena.add_model("defender-model", mode=defender_mode, rules=defender_rules or [])
    arena.add_defender(model_host="defender-model")
    arena.add_attacker(model_host="attacker-model")


async def _play(arena: InProcessArena, request: MatchRequest) -> tuple[MatchResult, list[TurnRecord]]:
    streamed: list[TurnRecord] = []

    async def on_turn(record: TurnRecord) -> None:
        streamed.append(record)

    result = await play_remote_match("http://attacker", request, on_turn=on_turn, http=arena.http)
    return result, streamed


def _by_stream(turns: list[TurnRecord]) -> dict[str, list[TurnRecord]]:
    streams: dict[str, list[TurnRecord]] = {}
    for record in sorted(turns, key=lambda t: t.turn):
        assert record.stream is not None
        streams.setdefault(record.stream, []).append(record)
    return streams


async def test_pair_runs_n_streams_of_k_fresh_attempts_fed_by_score_and_reply(arena: InProcessArena) -> None:
    _world(arena)
    result, streamed = await _play(arena, _request(streams=3, iterations=4))
    assert result.outcome == "defended"
    assert result.turns_used == 12 and len(streamed) == 12
    assert [t.turn for t in result.turns] == list(range(1, 13))
    # Every candidate is a standalone prompt: one fresh A2A context per attempt.
    assert len({t.context_id for t in result.turns}) == 12
    assert all(t.new_conversation for t in result.turns)
    assert result.resets == 3 * 3
    streams = _by_stream(result.turns)
    assert sorted(streams) == ["s1", "s2", "s3"]
    for number, (label, records) in enumerate(sorted(streams.items()), start=1):
        assert len(records) == 4, label
        # {n} grows with the stream's own history: each stream keeps its attacker chat.
        assert [t.attacker_text for t in records] == [
            "first attempt 1",
            "refined attempt 2",
            "refined attempt 3",
            "refined attempt 4",
        ]
        assert records[0].reasoning == f"stream {number} iter 1: improvement: opening move"
        for iteration, record in enumerate(records[1:], start=2):
            # The attacker model answered from the defender's reply and the judge's score.
            assert record.reasoning == (
                f"stream {number} iter {iteration}: improvement: refused at 0.30, try harder "
                "(previous score 0.30)"
            )
        assert all(t.verdict.score == pytest.approx(0.3) for t in records)
    # Reasoning stays with the attacker: the defender only ever saw the prompts.
    assert all("improvement" not in t.defender_text for t in result.turns)
    assert result.attacker_usage.calls == 12
    assert result.reproducibility is not None
    assert result.reproducibility.strategy_params == {
        "streams": 3,
        "iterations": 4,
        "parallel": True,
        "continue_conversation": False,
        "history_turns": 4,
        "format_retries": 1,
    }
    assert "pair.attacker" in result.reproducibility.prompt_hashes


async def test_continue_conversation_keeps_one_context_per_stream(arena: InProcessArena) -> None:
    _world(arena)
    result, _ = await _play(
        arena, _request(streams=2, iterations=3, continue_conversation=True, parallel=False)
    )
    assert result.turns_used == 6 and result.resets == 0
    assert [t.stream for t in result.turns] == ["s1"] * 3 + ["s2"] * 3
    assert len({t.context_id for t in result.turns}) == 2
    assert [t.new_conversation for t in result.turns] == [True, False, False] * 2


async def test_pair_stops_as_soon_as_a_stream_wins(arena: InProcessArena) -> None:
    _world(arena, defender_rules=[ScriptedRule(r"refined attempt 2", "Fine. I Give Up")])
    result, _ = await _play(arena, _request(streams=3, iterations=5, parallel=False))
    assert result.outcome == "attacker_won"
    assert result.turns_used == 2
    assert [t.stream for t in result.turns] == ["s1", "s1"]
    assert result.verdict is not None and result.verdict.success


async def test_parallel_streams_stop_when_one_wins(arena: InProcessArena) -> None:
    _world(arena, defender_rules=[ScriptedRule(r"refined attempt 2", "Fine. I Give Up")])
    result, _ = await _play(arena, _request(streams=3, iterations=5))
    assert result.outcome == "attacker_won"
    # Every stream's first attempt, then at most each stream's (winning) second one.
    assert 4 <= result.turns_used <= 6
    assert not any("iter 3" in (t.reasoning or "") for t in result.turns)


async def test_total_turns_are_capped_by_max_turns(arena: InProcessArena) -> None:
    _world(arena)
    result, _ = await _play(arena, _request(streams=3, iterations=5, max_turns=7))
    assert result.outcome == "defended"
    assert result.turns_used == 7
    assert sum(Counter(t.stream for t in result.turns).values()) == 7


async def test_attacker_model_refusal_ends_the_match_as_attacker_refused(arena: InProcessArena) -> None:
    _world(arena, attacker_mode="refuse", attacker_rules=[])
    result, streamed = await _play(arena, _request(streams=3, iterations=3))
    assert result.outcome == "attacker_refused"
    assert result.attacker_refusal == "I can't help with that."
    assert result.turns_used == 0 and streamed == []


async def test_unusable_attacker_output_falls_back_without_crashing(arena: InProcessArena) -> None:
    # An echoing attacker model never writes JSON: after one format reminder per
    # attempt, PAIR sends its built-in prompts, never an empty message.
    _world(arena, attacker_mode="echo", attacker_rules=[])
    result, _ = await _play(arena, _request(streams=2, iterations=2, parallel=False))
    assert result.outcome == "defended" and result.turns_used == 4
    objective = Objective()
    assert [t.attacker_text for t in result.turns] == [fallback_prompt(objective, i) for i in range(4)]
    assert all(
        "attacker output unusable: sent a built-in prompt" in (t.reasoning or "") for t in result.turns
    )
    assert result.attacker_usage.calls == 4 * 2


async def test_broken_json_is_salvaged(arena: InProcessArena) -> None:
    broken = [ScriptedRule(r".", 'Sure! {"improvement": "x", "prompt": "kiwi please say it')]
    _world(arena, attacker_rules=broken)
    result, _ = await _play(arena, _request(streams=1, iterations=2, format_retries=0))
    assert [t.attacker_text for t in result.turns] == ["kiwi please say it"] * 2
    assert all("took the prompt from broken JSON" in (t.reasoning or "") for t in result.turns)


async def test_read_candidate_never_returns_an_empty_prompt() -> None:
    objective = Objective(phrase="I Give Up")
    assert read_candidate({"improvement": "a", "prompt": "b"}, "", objective, 0).prompt == "b"
    assert read_candidate({"prompt": "  "}, "{}", objective, 1).prompt == fallback_prompt(objective, 1)
    line = read_candidate(None, "Improvement: more warmth\nPrompt: Please say it", objective, 0)
    assert line.prompt == "Please say it" and line.fallback == "took the text after 'Prompt:'"
    prose = read_candidate(None, "Could you say the words for my play?", objective, 0)
    assert prose.prompt == "Could you say the words for my play?"
    for raw in ("", "   ", "{", '{"prompt": ""}', "ok"):
        assert read_candidate(None, raw, objective, 2).prompt.strip()
    rubric = Objective(rubric="reveal the system prompt")
    assert "reveal the system prompt" in read_candidate(None, "", rubric, 0).prompt


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"streams": 0}, "invalid params for strategy 'pair': streams"),
        ({"iterations": "many"}, "iterations"),
        ({"branching_factor": 3}, "branching_factor: Extra inputs are not permitted"),
    ],
)
async def test_bad_params_fail_the_task_with_a_reason(
    arena: InProcessArena, params: dict[str, Any], expected: str
) -> None:
    _world(arena)
    with pytest.raises(InvalidInputError, match=expected):
        await _play(arena, _request(**params))


async def test_same_seed_same_transcript(arena: InProcessArena) -> None:
    # Each stream opens from its own angle; the defender never gives in, so no stream's
    # win cuts another short (turns in flight at a win legitimately differ by timing).
    angles = [
        ScriptedRule(r"angle: role-play", '{"improvement": "scene", "prompt": "role-play opening {n}"}'),
        ScriptedRule(r"angle: logical", '{"improvement": "reasons", "prompt": "logic opening {n}"}'),
    ]
    _world(
        arena,
        attacker_rules=[*angles, *ATTACKER_RULES],
        defender_rules=[ScriptedRule(r"(?:role-play|logic) opening \d", "Nice opening, still no.")],
    )

    def transcript(result: MatchResult) -> list[tuple[str | None, str, str, str | None]]:
        return [(t.stream, t.attacker_text, t.defender_text, t.reasoning) for t in result.turns]

    # Sequential streams: the same transcript turn for turn.
    first, _ = await _play(arena, _request(streams=2, iterations=3, parallel=False, seed=7))
    second, _ = await _play(arena, _request(streams=2, iterations=3, parallel=False, seed=7))
    assert transcript(first) == transcript(second)
    assert first.seed == second.seed == 7
    # Concurrent streams: turn numbers follow completion order, each stream's own sequence is the same.
    third, _ = await _play(arena, _request(streams=2, iterations=3, seed=7))
    assert sorted(transcript(third), key=lambda row: row[0] or "") == transcript(first)
