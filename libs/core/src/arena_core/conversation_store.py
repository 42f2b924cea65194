"""Conversation history per conversation (caller and contextId), bounded in length, bytes and age.

A defender keeps what was said in each conversation so the model sees the
whole history on every turn. A conversation is known by its key, its caller's
and its A2A contextId together (:func:`arena_core.caller_scope.conversation_key`),
so one caller can never read or extend another's by naming its contextId.

The store never grows without bound: each conversation keeps at most
``max_messages`` messages and ``max_bytes`` of text (oldest dropped first), idle
conversations expire after ``ttl_s``, and at most ``max_conversations`` are held
(least recently used evicted). Nothing ever scans all conversations: expiry
happens at the cold end of an LRU order.
"""

from __future__ import annotations

import abc
import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from arena_core.llm.chat_model import Message

Clock = Callable[[], float]


class ConversationStore(abc.ABC):
    """Where a defender keeps conversation history, by conversation key (caller and contextId,
    :func:`arena_core.caller_scope.conversation_key`)."""

    @abc.abstractmethod
    async def load(self, key: str) -> list[Message]:
        """Return the kept history of conversation ``key``, oldest first ([] if none)."""

    @abc.abstractmethod
    async def append(self, key: str, messages: Sequence[Message]) -> None:
        """Append ``messages`` to conversation ``key``, then enforce the bounds."""

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Forget conversation ``key`` (no error if unknown)."""


@dataclass(slots=True)
class _Conversation:
    messages: deque[Message] = field(default_factory=deque)
    sizes: deque[int] = field(default_factory=deque)
    size: int = 0
    touched: float = 0.0


def message_size(message: Message) -> int:
    """Bytes of a message as compact JSON: the measure of the byte bound in every store."""
    return len(json.dumps(message, separators=(",", ":")).encode("utf-8"))


class InMemoryConversationStore(ConversationStore):
    """Process-local store; the embedded default when no Redis is configured."""

    def __init__(
        self,
        *,
        max_messages: int = 40,
        max_bytes: int = 64_000,
        max_conversations: int = 10_000,
        ttl_s: float = 3600.0,
        clock: Clock = time.monotonic,
    ) -> None:
        self._max_messages = max_messages
        self._max_bytes = max_bytes
        self._max_conversations = max_conversations
        self._ttl_s = ttl_s
        self._clock = clock
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()

    def __len__(self) -> int:
        return len(self._conversations)

    async def load(self, key: str) -> list[Message]:
        now = self._clock()
        self._expire(now)
        conversation = self._conversations.get(key)
        if conversation is None:
            return []
        return [dict(message) for message in conversation.messages]

    async def append(self, key: str, messages: Sequence[Message]) -> None:
        now = self._clock()
        self._expire(now)
        conversation = self._conversations.get(key)
        if conversation is None:
            conversation = _Conversation()
            self._conversations[key] = conversation
        else:
            self._conversations.move_to_end(key)
        conversation.touched = now
        for message in messages:
            size = message_size(message)
            conversation.messages.append(dict(message))
            conversation.sizes.append(size)
            conversation.size += size
        while conversation.messages and (
            len(conversation.messages) > self._max_messages or conversation.size > self._max_bytes
        ):
            conversation.messages.popleft()
            conversation.size -= conversation.sizes.popleft()
        while len(self._conversations) > self._max_conversations:
            self._conversations.popitem(last=False)

    async def delete(self, key: str) -> None:
        self._conversations.pop(key, None)

    def _expire(self, now: float) -> None:
        # The LRU order puts the stalest conversations first, so stop at the first fresh one.
        while self._conversations:
            key, oldest = next(iter(self._conversations.items()))
            if now - oldest.touched < self._ttl_s:
                return
            del self._conversations[key]


__all__ = ["Clock", "ConversationStore", "InMemoryConversationStore", "message_size"]
