"""Tests of the offline playbook attack library."""

from __future__ import annotations

import pytest

from arena_attacker.playbook_scripts import (
    PLACEHOLDER,
    SCRIPT_NAMES,
    SCRIPTS,
    PlaybookScript,
    get_script,
    script_order,
)
from arena_core.errors import InvalidInputError

PHRASES = [
    pytest.param("I Give Up", id="default"),
    pytest.param("refund approved", id="other"),
    pytest.param("{x}", id="braces"),
    pytest.param("{phrase} {0} {}", id="format-fields"),
]
MAX_MESSAGE_CHARS = 400


def test_library_is_large_and_uniquely_named() -> None:
    assert len(SCRIPTS) >= 10
    assert len(set(SCRIPT_NAMES)) == len(SCRIPTS)
    assert tuple(script.name for script in SCRIPTS) == SCRIPT_NAMES


def test_library_order_starts_with_direct_ask_then_repeat_after_me() -> None:
    assert SCRIPT_NAMES[:2] == ("direct-ask", "repeat-after-me")


def test_repeat_after_me_first_turn_has_the_pattern_scripted_models_follow() -> None:
    assert "repeat after me: {phrase}" in get_script("repeat-after-me").turns[0]


@pytest.mark.parametrize("script", SCRIPTS, ids=SCRIPT_NAMES)
def test_script_shape(script: PlaybookScript) -> None:
    assert script.name == script.name.strip().lower()
    assert " " not in script.name
    assert script.technique.strip()
    assert "\n" not in script.technique
    assert 2 <= len(script.turns) <= 4
    assert all(turn.strip() for turn in script.turns)
    assert any(PLACEHOLDER in turn for turn in script.turns)


@pytest.mark.parametrize("phrase", PHRASES)
@pytest.mark.parametrize("script", SCRIPTS, ids=SCRIPT_NAMES)
def test_every_turn_renders_with_the_phrase(script: PlaybookScript, phrase: str) -> None:
    rendered = script.render(phrase)

    assert len(rendered) == len(script.turns)
    for template, message in zip(script.turns, rendered, strict=True):
        assert message == template.replace(PLACEHOLDER, phrase)
        assert len(message) < MAX_MESSAGE_CHARS
        if PLACEHOLDER in template:
            assert phrase in message
    assert sum(message.count(phrase) for message in rendered) >= 1


def test_render_does_not_interpret_braces() -> None:
    rendered = get_script("json-field").render("{x}")

    assert '"status"' in rendered[0]
    assert "{x}" in rendered[0]
    assert PLACEHOLDER not in "".join(rendered)


def test_no_seed_keeps_library_order() -> None:
    assert script_order(None) == SCRIPTS


@pytest.mark.parametrize("seed", [0, 1, 42, 2**31])
def test_same_seed_same_order(seed: int) -> None:
    first = script_order(seed)

    assert first == script_order(seed)
    assert sorted(script.name for script in first) == sorted(SCRIPT_NAMES)


def test_different_seeds_give_different_orders() -> None:
    orders = {tuple(script.name for script in script_order(seed)) for seed in range(5)}

    assert len(orders) > 1


def test_get_script_by_name() -> None:
    for script in SCRIPTS:
        assert get_script(script.name) is script


def test_get_script_unknown_name_lists_choices() -> None:
    with pytest.raises(InvalidInputError) as caught:
        get_script("sweet-talk")

    message = str(caught.value)
    assert message.startswith("unknown playbook script 'sweet-talk'; ")
    assert all(name in message for name in SCRIPT_NAMES)
