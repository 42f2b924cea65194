"""InMemoryConversationStore: message, byte, count and age bounds, driven by a fake clock."""

from __future__ import annotations

import json

import pytest

from arena_core.conversation_store import InMemoryConversationStore, message_size
from arena_core.llm.chat_model import Message


class FakeClock:
    """A clock that only moves when the test says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _user(text: str) -> Message:
    return {"role": "user", "content": text}


def _texts(messages: list[Message]) -> list[str]:
    return [str(message["content"]) for message in messages]


def _store(
    clock: FakeClock | None = None,
    *,
    max_messages: int = 40,
    max_bytes: int = 64_000,
    max_conversations: int = 10_000,
    ttl_s: float = 3600.0,
) -> InMemoryConversationStore:
    return InMemoryConversationStore(
        max_messages=max_messages,
        max_bytes=max_bytes,
        max_conversations=max_conversations,
        ttl_s=ttl_s,
        clock=clock or FakeClock(),
    )


@pytest.mark.parametrize(
    "message",
    [
        {"role": "user", "content": "abc"},
        {"role": "user", "content": ""},
        {"role": "user", "content": "é🙂"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user"},
    ],
)
def test_message_size_is_compact_json_bytes(message: Message) -> None:
    # The same measure as the Redis store, which bounds the JSON it keeps.
    assert message_size(message) == len(json.dumps(message, separators=(",", ":")).encode())


@pytest.mark.asyncio
async def test_append_then_load_in_order() -> None:
    store = _store()
    await store.append("c1", [_user("a"), _user("b")])
    await store.append("c1", [_user("c")])
    assert _texts(await store.load("c1")) == ["a", "b", "c"]


@pytest.mark.asyncio
async def test_load_of_unknown_context_is_empty_and_creates_nothing() -> None:
    store = _store()
    assert await store.load("nobody") == []
    assert len(store) == 0


@pytest.mark.asyncio
async def test_contexts_are_separate() -> None:
    store = _store()
    await store.append("c1", [_user("one")])
    await store.append("c2", [_user("two")])
    assert _texts(await store.load("c1")) == ["one"]
    assert _texts(await store.load("c2")) == ["two"]


@pytest.mark.parametrize(
    ("max_messages", "appended", "kept"),
    [
        (3, ["1", "2"], ["1", "2"]),
        (3, ["1", "2", "3"], ["1", "2", "3"]),
        (3, ["1", "2", "3", "4", "5"], ["3", "4", "5"]),
        (2, ["1", "2", "3", "4", "5"], ["4", "5"]),
    ],
)
@pytest.mark.asyncio
async def test_max_messages_drops_oldest(max_messages: int, appended: list[str], kept: list[str]) -> None:
    store = _store(max_messages=max_messages)
    for text in appended:
        await store.append("c", [_user(text)])
    assert _texts(await store.load("c")) == kept


@pytest.mark.asyncio
async def test_max_messages_applies_within_one_append() -> None:
    store = _store(max_messages=2)
    await store.append("c", [_user("1"), _user("2"), _user("3")])
    assert _texts(await store.load("c")) == ["2", "3"]


def _size(text: str) -> int:
    return message_size(_user(text))


@pytest.mark.parametrize(
    ("slack", "appended", "kept"),
    [
        (0, ["a" * 10, "b" * 10, "c" * 10], ["a" * 10, "b" * 10, "c" * 10]),
        (-1, ["a" * 10, "b" * 10, "c" * 10], ["b" * 10, "c" * 10]),
    ],
    ids=["exactly-at-limit", "one-over"],
)
@pytest.mark.asyncio
async def test_max_bytes_drops_oldest(slack: int, appended: list[str], kept: list[str]) -> None:
    store = _store(max_bytes=sum(_size(t) for t in appended) + slack)
    for text in appended:
        await store.append("c", [_user(text)])
    assert _texts(await store.load("c")) == kept


@pytest.mark.asyncio
async def test_max_bytes_drops_several_and_a_single_oversized_message() -> None:
    store = _store(max_bytes=_size("c" * 15) + _size("b" * 10) - 1)
    for text in ["a" * 10, "b" * 10, "c" * 15]:
        await store.append("c", [_user(text)])
    assert _texts(await store.load("c")) == ["c" * 15]
    tiny = _store(max_bytes=_size("a") - 1)
    await tiny.append("c", [_user("a")])
    assert _texts(await tiny.load("c")) == []


@pytest.mark.asyncio
async def test_byte_accounting_follows_dropped_messages() -> None:
    # After drops the running size must shrink, or later small appends would evict too much.
    store = _store(max_messages=2, max_bytes=_size("x" * 40) + _size("w" * 10))
    for text in ["x" * 40, "y" * 40, "z" * 40, "w" * 10]:
        await store.append("c", [_user(text)])
    await store.append("c", [_user("v" * 10)])
    assert _texts(await store.load("c")) == ["w" * 10, "v" * 10]


@pytest.mark.asyncio
async def test_lru_eviction_at_max_conversations() -> None:
    clock = FakeClock()
    store = _store(clock, max_conversations=2)
    await store.append("old", [_user("1")])
    clock.now += 1
    await store.append("mid", [_user("2")])
    clock.now += 1
    await store.append("old", [_user("3")])  # touches "old": "mid" is now least recent
    clock.now += 1
    await store.append("new", [_user("4")])
    assert len(store) == 2
    assert await store.load("mid") == []
    assert _texts(await store.load("old")) == ["1", "3"]
    assert _texts(await store.load("new")) == ["4"]


@pytest.mark.asyncio
async def test_ttl_expiry_with_fake_clock() -> None:
    clock = FakeClock(now=500.0)
    store = _store(clock, ttl_s=60.0)
    await store.append("c", [_user("hello")])
    clock.now = 559.9
    assert _texts(await store.load("c")) == ["hello"]
    clock.now = 560.0
    assert await store.load("c") == []
    assert len(store) == 0


@pytest.mark.asyncio
async def test_append_refreshes_the_ttl() -> None:
    clock = FakeClock(now=0.0)
    store = _store(clock, ttl_s=60.0)
    await store.append("c", [_user("1")])
    clock.now = 50.0
    await store.append("c", [_user("2")])
    clock.now = 100.0
    assert _texts(await store.load("c")) == ["1", "2"]
    clock.now = 110.0
    assert await store.load("c") == []


@pytest.mark.asyncio
async def test_expiry_removes_only_stale_conversations() -> None:
    clock = FakeClock(now=0.0)
    store = _store(clock, ttl_s=60.0)
    await store.append("stale", [_user("s")])
    clock.now = 30.0
    await store.append("fresh", [_user("f")])
    clock.now = 70.0
    assert await store.load("stale") == []
    assert _texts(await store.load("fresh")) == ["f"]
    assert len(store) == 1


@pytest.mark.asyncio
async def test_append_after_expiry_starts_over() -> None:
    clock = FakeClock(now=0.0)
    store = _store(clock, ttl_s=10.0)
    await store.append("c", [_user("before")])
    clock.now = 10.0
    await store.append("c", [_user("after")])
    assert _texts(await store.load("c")) == ["after"]


@pytest.mark.asyncio
async def test_delete_forgets_and_unknown_delete_is_fine() -> None:
    store = _store()
    await store.append("c", [_user("1")])
    await store.append("keep", [_user("k")])
    await store.delete("c")
    await store.delete("never-seen")
    assert await store.load("c") == []
    assert _texts(await store.load("keep")) == ["k"]
    assert len(store) == 1


@pytest.mark.asyncio
async def test_append_copies_the_callers_messages() -> None:
    store = _store()
    message = _user("original")
    await store.append("c", [message])
    message["content"] = "changed by caller"
    assert _texts(await store.load("c")) == ["original"]


@pytest.mark.asyncio
async def test_load_returns_a_new_list() -> None:
    store = _store()
    await store.append("c", [_user("1"), _user("2")])
    loaded = await store.load("c")
    loaded.append(_user("injected"))
    loaded.pop(0)
    assert _texts(await store.load("c")) == ["1", "2"]


@pytest.mark.asyncio
async def test_mutating_a_loaded_message_does_not_change_the_store() -> None:
    store = _store()
    await store.append("c", [_user("original")])
    loaded = await store.load("c")
    loaded[0]["content"] = "changed by caller"
    assert _texts(await store.load("c")) == ["original"]
