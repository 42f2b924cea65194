"""OpenAI response shapes built from a :class:`~arena_model.engine.ChatResult`.

Everything here is a pure function from a result to JSON-ready dicts, so the
shapes can be tested without a server. The streaming shapes follow OpenAI's
``chat.completion.chunk`` sequence: a role chunk, content (or tool-call)
delta chunks, a chunk carrying ``finish_reason``, then optionally a usage
chunk with an empty ``choices`` list.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from arena_model.engine import ChatResult

# One word plus the whitespace that follows it (or a leading run of
# whitespace), so joining the pieces reproduces the text exactly.
_WORD_PIECE: Final = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True, slots=True)
class CompletionMeta:
    """The per-response envelope: id, creation time and reported model id."""

    model: str
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))


def usage_dict(result: ChatResult) -> dict[str, int]:
    """OpenAI's ``usage`` object for ``result``."""
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.total_tokens,
    }


def completion_dict(result: ChatResult, meta: CompletionMeta) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` body for ``result``."""
    message: dict[str, Any] = {"role": "assistant", "content": result.content}
    if result.tool_calls:
        message["tool_calls"] = [call.model_dump() for call in result.tool_calls]
    return {
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": result.finish_reason,
            }
        ],
        "usage": usage_dict(result),
    }


def split_words(text: str) -> list[str]:
    """Split ``text`` into word pieces whose concatenation is exactly ``text``."""
    return _WORD_PIECE.findall(text)


def completion_chunks(
    result: ChatResult, meta: CompletionMeta, *, include_usage: bool
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` sequence that streams ``result``.

    Contract: concatenating the ``delta.content`` strings gives
    ``result.content`` (or ``""``); tool calls arrive whole, one chunk each,
    with their ``index``; exactly one chunk has a non-null ``finish_reason``.
    With ``include_usage`` every chunk has ``"usage": null`` except a last
    extra chunk whose ``choices`` is empty and whose ``usage`` is set.
    """

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [
                {
                    "index": 0,
                    "delta": delta,
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
        }
        if include_usage:
            body["usage"] = None
        return body

    if result.tool_calls:
        yield chunk({"role": "assistant", "content": None})
        for index, call in enumerate(result.tool_calls):
            yield chunk({"tool_calls": [{"index": index, **call.model_dump()}]})
    else:
        yield chunk({"role": "assistant", "content": ""})
        for piece in split_words(result.content or ""):
            yield chunk({"content": piece})
    yield chunk({}, result.finish_reason)
    if include_usage:
        yield {
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [],
            "usage": usage_dict(result),
        }


def error_dict(
    message: str,
    *,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def models_dict(model_id: str, created: int) -> dict[str, Any]:
    """The ``GET /v1/models`` list with the one model this server hosts."""
    return {
        "object": "list",
        "data": [
            {
                "id": model_id,
                "object": "model",
                "created": created,
                "owned_by": "a2a-arena",
            }
        ],
    }


__all__ = [
    "CompletionMeta",
    "completion_chunks",
    "completion_dict",
    "error_dict",
    "models_dict",
    "split_words",
    "usage_dict",
]
