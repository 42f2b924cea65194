"""The attacker plays agents however they end a turn: parked task, completed task, or a Message.

Every agent here (``support.turn_ending_agents``) gives up only at the third message of one
conversation, so a match wins at turn 3 only when the attacker kept the context from turn to
turn; each reply names its position, so the turn records show the judge saw every reply.
Each kind of agent is played over all four interfaces the arena speaks.
"""

from __future__ import annotations

import pytest

from arena_core.a2a import TargetConversation, connect_target
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.match_models import MatchRequest, TurnRecord
from conftest import InProcessArena
from support.turn_ending_agents import (
    ANYTHING_ELSE,
    DONE,
    TURN_ENDINGS,
    ConversationLog,
    TurnEnding,
    create_turn_ending_app,
)

pytestmark = pytest.mark.asyncio

INTERFACES = [("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "1.0"), ("HTTP+JSON", "0.3")]
STATES: dict[TurnEnding, str] = {
    "parks": "input-required",
    "parks-artifacts": "input-required",
    "completes": "completed",
    "completes-same": "completed",
    "messages": "message",
}


@pytest.mark.parametrize(("binding", "version"), INTERFACES)
@pytest.mark.parametrize("ending", TURN_ENDINGS)
async def test_a_multi_turn_match_keeps_the_context_and_judges_every_reply(
    arena: InProcessArena, ending: TurnEnding, binding: str, version: str
) -> None:
    log = ConversationLog()
    arena.add("agent", create_turn_ending_app("http://agent", ending, log, binding=binding, version=version))
    arena.add_attacker()
    turns: list[TurnRecord] = []

    async def on_turn(record: TurnRecord) -> None:
        turns.append(record)

    # Seedless playbook: its first script is three messages in one conversation.
    request = MatchRequest.model_validate({"target": "http://agent", "max_turns": 3})
    result = await play_remote_match("http://attacker", request, on_turn=on_turn, http=arena.http)

    assert result.outcome == "attacker_won", result.error
    assert result.protocol is not None
    assert (result.protocol.binding, result.protocol.version) == (binding, version)
    assert [t.turn for t in turns] == [1, 2, 3] and result.turns_used == 3
    # One conversation on the agent's side, holding the three messages in order.
    assert list(log.messages.values()) == [[t.attacker_text for t in result.turns]]
    assert {t.context_id for t in result.turns} == set(log.messages)
    # Each reply reached the judge, this turn's own and only it.
    for record in result.turns:
        assert f"reply {record.turn} in this conversation" in record.defender_text, record
        assert record.defender_text.count("reply ") == 1, record
        assert record.verdict.success == (record.turn == 3), record
        assert record.defender_state == STATES[ending]
    task_ids = [t.task_id for t in result.turns]
    if ending == "messages":
        assert task_ids == [None, None, None] and log.task_ids == []
    elif ending.startswith("completes"):
        # A new task per turn, each in the same context.
        assert task_ids == log.task_ids and len(set(log.task_ids)) == 3
    else:
        assert len(set(task_ids)) == 1 and log.task_ids == task_ids[:1]


@pytest.mark.parametrize("ending", TURN_ENDINGS)
async def test_a_conversation_continues_after_each_kind_of_turn_end(
    arena: InProcessArena, ending: TurnEnding
) -> None:
    log = ConversationLog()
    arena.add("agent", create_turn_ending_app("http://agent", ending, log, give_up_at=4))
    target = await connect_target("http://agent", http=arena.http)
    conversation = TargetConversation(target)
    replies = [await conversation.send(text) for text in ("one", "two", "three", "four")]
    assert [r.context_id for r in replies] == [replies[0].context_id] * 4
    assert log.messages == {replies[0].context_id: ["one", "two", "three", "four"]}
    expected = [f"reply {n} in this conversation: {'I Give Up' if n == 4 else 'no.'}" for n in (1, 2, 3, 4)]
    if ending == "completes":
        expected = [f"{DONE}\n{answer}" for answer in expected]
    # completes-same: the reply is said twice (status message, artifact) and judged once.
    elif ending == "parks-artifacts":
        # The task keeps every earlier artifact; a reply holds only the one its turn added.
        expected = [f"{ANYTHING_ELSE}\n{answer}" for answer in expected]
    assert [r.text for r in replies] == expected

    conversation.reset()
    fresh = await conversation.send("again")
    assert fresh.context_id != replies[0].context_id
    assert fresh.text.endswith("reply 1 in this conversation: no.")
    await target.close()
