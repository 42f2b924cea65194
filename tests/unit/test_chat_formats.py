"""Chat formats for GGUF files without a template of their own (Gemma 3 270M from PyPI)."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import cast

import pytest

from arena_model.chat_formats import GEMMA_TURNS, chat_format_for, gemma_turns_prompt
from arena_model.llama_cpp_engine import install_chat_format


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"general.architecture": "gemma3", "tokenizer.chat_template": "{{ messages }}"}, None),
        ({"general.architecture": "gemma3"}, GEMMA_TURNS),
        ({"general.architecture": "gemma2", "tokenizer.chat_template": ""}, GEMMA_TURNS),
        ({"general.architecture": "llama"}, None),
        ({}, None),
    ],
)
def test_the_format_follows_the_file(metadata: dict[str, str], expected: str | None) -> None:
    assert chat_format_for(metadata) == expected


def test_the_system_message_opens_the_first_user_turn() -> None:
    prompt = gemma_turns_prompt(
        [
            {"role": "system", "content": "Never say the phrase."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Say it."},
        ]
    )
    assert prompt == (
        "<start_of_turn>user\nNever say the phrase.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nSay it.<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_a_system_message_is_never_dropped() -> None:
    alone = gemma_turns_prompt([{"role": "system", "content": "Rules."}])
    assert alone == "<start_of_turn>user\nRules.<end_of_turn>\n<start_of_turn>model\n"
    model_first = gemma_turns_prompt(
        [
            {"role": "system", "content": "Rules."},
            {"role": "assistant", "content": "Welcome."},
            {"role": "user", "content": "Hi"},
        ]
    )
    assert model_first.startswith("<start_of_turn>user\nRules.<end_of_turn>\n<start_of_turn>model\nWelcome.")
    assert model_first.count("Rules.") == 1


def test_other_roles_speak_as_the_user() -> None:
    prompt = gemma_turns_prompt([{"role": "tool", "content": "Tool result: 3"}])
    assert prompt == "<start_of_turn>user\nTool result: 3<end_of_turn>\n<start_of_turn>model\n"


class _LoadedModel:
    """What install_chat_format reads and sets on a loaded ``llama_cpp.Llama``."""

    def __init__(self, metadata: dict[str, str]) -> None:
        self.metadata = metadata
        self.chat_format = "llama-2"
        self.chat_handler: object = None


def test_a_gemma_file_without_a_template_gets_the_gemma_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    # llama-cpp-python's formatter module, reduced to what the engine uses: the handler the
    # engine installs is the formatter itself here, so its prompt and stop can be read.
    formats = types.ModuleType("llama_cpp.llama_chat_format")
    formats.ChatFormatterResponse = lambda prompt, stop: (prompt, stop)  # type: ignore[attr-defined]
    formats.chat_formatter_to_chat_completion_handler = lambda formatter: formatter  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_chat_format", formats)

    gemma = _LoadedModel({"general.architecture": "gemma3"})
    assert install_chat_format(gemma) == GEMMA_TURNS  # type: ignore[arg-type]
    handler = cast(Callable[..., tuple[str, list[str]]], gemma.chat_handler)
    prompt, stop = handler([{"role": "system", "content": "Rules."}, {"role": "user", "content": "Hi"}])
    assert prompt == "<start_of_turn>user\nRules.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    assert stop == ["<end_of_turn>"]
    other = _LoadedModel({"general.architecture": "llama", "tokenizer.chat_template": "{{ x }}"})
    assert install_chat_format(other) == "llama-2"  # type: ignore[arg-type]
    assert other.chat_handler is None
