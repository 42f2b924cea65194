"""deploy/.env.example lists every setting, and nothing that isn't one."""

from __future__ import annotations

import pytest

from arena_core.settings import ArenaSettings, load_settings
from support.env_example import ENV_EXAMPLE, example_settings


def test_every_setting_is_documented() -> None:
    # target_tokens is every ARENA_TARGET_TOKEN_<NAME> variable, documented as a pattern.
    expected = {f"ARENA_{name.upper()}" for name in ArenaSettings.model_fields if name != "target_tokens"}
    assert set(example_settings()) == expected
    assert "ARENA_TARGET_TOKEN_<NAME>" in ENV_EXAMPLE.read_text()


def test_the_example_values_are_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in example_settings().items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.defender_phrase == "I Give Up"
    assert settings.model is None
    assert settings.model_for("defender").embedded
