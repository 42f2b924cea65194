"""Fitting a conversation into a model's context window.

A long arena match grows the defender's history every turn; a small model's
context (2048 tokens by default) fills quickly, and llama.cpp refuses a prompt
that does not fit. Instead of failing the turn, the oldest non-system
messages are dropped: the system prompt (the defender's rules) and the most
recent exchange are what the answer depends on.
"""

from __future__ import annotations

from typing import Final, Protocol

# Tokens the chat template adds around each message (``<|im_start|>role\n``
# ... ``<|im_end|>\n``) and once per prompt (SmolLM2's default system line
# when none is given, plus the assistant generation prompt). Generous on
# purpose: over-trimming a little is cheaper than a refused request.
PER_MESSAGE_OVERHEAD: Final = 6
TEMPLATE_OVERHEAD: Final = 32
# Room always left for the reply, even when max_tokens is tiny.
MIN_REPLY_TOKENS: Final = 16


class TokenCounter(Protocol):
    """Counts and clips text in model tokens."""

    def count(self, text: str) -> int:
        """Number of tokens ``text`` encodes to."""
        ...

    def clip(self, text: str, max_tokens: int, *, keep_end: bool) -> str:
        """``text`` cut to at most ``max_tokens`` tokens, keeping its end or its start."""
        ...


class LlamaTokenizer(Protocol):
    """The tokenizer part of ``llama_cpp.Llama``."""

    def tokenize(self, text: bytes, add_bos: bool = ..., special: bool = ...) -> list[int]: ...

    def detokenize(
        self,
        tokens: list[int],
        prev_tokens: list[int] | None = ...,
        special: bool = ...,
    ) -> bytes: ...


class LlamaTokenCounter:
    """:class:`TokenCounter` backed by a ``llama_cpp.Llama`` (call it only
    while holding the engine's lock: the model is not thread-safe)."""

    def __init__(self, llama: LlamaTokenizer) -> None:
        self._llama = llama

    def _tokens(self, text: str) -> list[int]:
        return self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no BOS)."""
        return len(self._tokens(text)) if text else 0

    def clip(self, text: str, max_tokens: int, *, keep_end: bool) -> str:
        """``text`` cut to ``max_tokens`` tokens; a split UTF-8 sequence is dropped."""
        if max_tokens <= 0:
            return ""
        tokens = self._tokens(text)
        if len(tokens) <= max_tokens:
            return text
        kept = tokens[-max_tokens:] if keep_end else tokens[:max_tokens]
        return self._llama.detokenize(kept).decode("utf-8", errors="ignore")


def fit_to_context(
    messages: list[dict[str, str]],
    counter: TokenCounter,
    *,
    n_ctx: int,
    max_tokens: int,
) -> list[dict[str, str]]:
    """Return ``messages`` trimmed so the prompt leaves room for a reply.

    Contract: messages are returned unchanged when they fit. Otherwise system
    messages are kept (clipped to their beginnings if they alone would take
    more than half the budget), then the most recent other messages are kept
    newest-first while they fit; the first one that does not fit and
    everything older is dropped, so the kept history has no gaps. The newest
    message is always kept, clipped to its end if it alone is too long. The
    input list is never modified; order is preserved.
    """
    reserve = max(MIN_REPLY_TOKENS, min(max_tokens, n_ctx // 4))
    budget = n_ctx - reserve - TEMPLATE_OVERHEAD
    costs = [counter.count(message["content"]) + PER_MESSAGE_OVERHEAD for message in messages]
    if sum(costs) <= budget:
        return messages

    fitted = [dict(message) for message in messages]
    keep: set[int] = set()
    system_room = budget // 2
    for index, message in enumerate(messages):
        if message["role"] != "system":
            continue
        allowed = system_room - PER_MESSAGE_OVERHEAD
        if allowed <= 0:
            break  # later system messages cannot fit at all
        if costs[index] - PER_MESSAGE_OVERHEAD > allowed:
            fitted[index]["content"] = counter.clip(message["content"], allowed, keep_end=False)
            costs[index] = allowed + PER_MESSAGE_OVERHEAD
        keep.add(index)
        system_room -= costs[index]

    available = budget - sum(costs[index] for index in keep)
    newest_first = [i for i in reversed(range(len(messages))) if messages[i]["role"] != "system"]
    for position, index in enumerate(newest_first):
        if costs[index] <= available:
            keep.add(index)
            available -= costs[index]
        elif position == 0:
            allowed = max(1, available - PER_MESSAGE_OVERHEAD)
            fitted[index]["content"] = counter.clip(messages[index]["content"], allowed, keep_end=True)
            keep.add(index)
            break
        else:
            break
    return [fitted[index] for index in sorted(keep)]


__all__ = [
    "MIN_REPLY_TOKENS",
    "PER_MESSAGE_OVERHEAD",
    "TEMPLATE_OVERHEAD",
    "LlamaTokenCounter",
    "LlamaTokenizer",
    "TokenCounter",
    "fit_to_context",
]
