"""Plain-text match requests: what a sentence asks for, and what is too unclear to guess."""

from __future__ import annotations

from typing import Any

import pytest

from arena_attacker.plain_text_request import UnclearRequestError, parse_plain_text_request
from arena_core.errors import InvalidInputError
from arena_core.objective import DEFAULT_PHRASE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "red-team http://host:8081 with crescendo until it says 'refund approved'",
            {"target": "http://host:8081", "strategy": "crescendo", "phrase": "refund approved"},
        ),
        (
            "http://host:8081",
            {"target": "http://host:8081", "strategy": "playbook", "phrase": DEFAULT_PHRASE},
        ),
        (
            "Please attack HTTPS://agent.example/a2a/. Use GOAT, 5 turns.",
            {"target": "HTTPS://agent.example/a2a", "strategy": "goat", "max_turns": 5},
        ),
        (
            'make the agent say "I am free" -- target http://10.1.2.3:9000/ (tap)',
            {"target": "http://10.1.2.3:9000", "strategy": "tap", "phrase": "I am free"},
        ),
        (
            "objective: “Refund approved” on http://h:1 with pair, max_turns=7",
            {"target": "http://h:1", "strategy": "pair", "phrase": "Refund approved", "max_turns": 7},
        ),
        # An apostrophe inside single quotes does not end the phrase.
        ("test http://h:1 until it says 'I can't refuse'.", {"phrase": "I can't refuse"}),
        # Words of the URL or the phrase are not read as a strategy or a cue.
        (
            "red-team http://goat:8081/tap until it says 'the objective is playbook'",
            {"target": "http://goat:8081/tap", "strategy": "playbook", "phrase": "the objective is playbook"},
        ),
        # The same URL, phrase or strategy twice is still one.
        (
            "crescendo http://h:1/ — yes http://h:1, crescendo, until it says 'x' or make it say 'x'",
            {"target": "http://h:1", "strategy": "crescendo", "phrase": "x"},
        ),
        # Apostrophes elsewhere are plain text.
        ("let's red-team http://h:1, it's a test", {"target": "http://h:1", "max_turns": 10}),
    ],
)
def test_a_sentence_is_read_into_a_request(text: str, expected: dict[str, Any]) -> None:
    request = parse_plain_text_request(text)
    read = {
        "target": request.target,
        "strategy": request.strategy,
        "phrase": request.objective.phrase,
        "max_turns": request.max_turns,
    }
    assert {key: read[key] for key in expected} == expected
    assert request.judge == "phrase" and request.seed is None and request.target_token_env is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("hello, what can you do?", "names no target"),
        ("red-team localhost:8081", "names no target"),
        ("red-team ftp://host/agent", "names no target"),
        ("compare http://a:1 and http://b:2", "2 different URLs"),
        ("red-team http://h:1 with pair or tap", "strategy (pair, tap)"),
        ("red-team http://h:1 until it says I Give Up", "no phrase in quotes"),
        ("red-team http://h:1 objective 'a' and make it say 'b'", "2 different phrases"),
        ('red-team http://h:1 "I Give Up"', "follows no cue"),
        ("red-team http://h:1 in 5 turns, no, 6 turns", "turn count (5, 6)"),
        ("red-team http://h:1 in 0 turns", "max_turns"),
    ],
)
def test_an_unclear_sentence_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(UnclearRequestError) as caught:
        parse_plain_text_request(text)
    assert problem in caught.value.message
    assert caught.value.kind == "unclear_request" and isinstance(caught.value, InvalidInputError)
