"""The card cache's rules: freshness from Cache-Control, validators, what is never kept."""

from __future__ import annotations

import httpx
import pytest
from a2a.types.a2a_pb2 import AgentCard

from arena_core.a2a.client.card_cache import MAX_FRESH_S, CardCache, freshness_s
from arena_core.errors import AgentCardError, InvalidInputError, TargetProtocolError, TargetUnreachableError

URL = "http://agent.test/.well-known/agent-card.json"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _headers(**values: str) -> httpx.Headers:
    return httpx.Headers({name.replace("_", "-"): value for name, value in values.items()})


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"cache_control": "public, max-age=300"}, 300.0),
        ({"cache_control": "max-age=300", "age": "100"}, 200.0),
        ({"cache_control": "max-age=999999"}, MAX_FRESH_S),
        ({"cache_control": "max-age=nonsense"}, 0.0),
        ({"cache_control": "no-cache, max-age=300"}, 0.0),
        ({}, 0.0),
        ({"cache_control": "no-store, max-age=300"}, None),
        ({"cache_control": "max-age=300", "vary": "*"}, None),
        ({"cache_control": "max-age=300", "vary": "Cookie"}, None),
        ({"cache_control": "max-age=300", "vary": "A2A-Version, Accept-Encoding"}, 300.0),
    ],
)
def test_freshness(headers: dict[str, str], expected: float | None) -> None:
    assert freshness_s(_headers(**headers)) == expected


def test_fresh_then_stale_then_refreshed() -> None:
    clock = Clock()
    cache = CardCache(clock=clock)
    key = cache.key(URL)
    cache.store(key, AgentCard(name="a"), {"name": "a"}, _headers(cache_control="max-age=60", etag='"v1"'))
    entry, fresh = cache.lookup(key)
    assert entry is not None and fresh and entry.card.name == "a"
    clock.now += 61
    entry, fresh = cache.lookup(key)
    assert entry is not None and not fresh
    assert entry.validators() == {"If-None-Match": '"v1"'}
    cache.refreshed(key, entry, _headers(cache_control="max-age=60"))
    assert cache.lookup(key)[1]
    assert (cache.hits, cache.revalidated) == (2, 1)


def test_a_copy_cannot_change_the_stored_card() -> None:
    cache = CardCache()
    key = cache.key(URL)
    cache.store(key, AgentCard(name="a"), {"name": "a"}, _headers(cache_control="max-age=60"))
    entry, _ = cache.lookup(key)
    assert entry is not None
    card, raw = entry.copy()
    card.name, raw["name"] = "changed", "changed"
    assert entry.card.name == "a" and entry.raw["name"] == "a"


def test_what_is_not_kept() -> None:
    cache = CardCache()
    key = cache.key(URL)
    cache.store(key, AgentCard(name="a"), {}, _headers(cache_control="no-store"))
    cache.store(cache.key(URL, "x"), AgentCard(name="a"), {}, _headers())  # nothing to revalidate with
    assert len(cache) == 0
    cache.store(key, AgentCard(name="a"), {}, _headers(last_modified="Tue, 01 Dec 2026 00:00:00 GMT"))
    entry, fresh = cache.lookup(key)
    assert entry is not None and not fresh
    assert entry.validators() == {"If-Modified-Since": "Tue, 01 Dec 2026 00:00:00 GMT"}


def test_credentials_are_separate_entries_and_forget_drops_them_all() -> None:
    cache = CardCache()
    for who in ("", "alice", "bob"):
        cache.store(cache.key(URL, who), AgentCard(name=who), {}, _headers(cache_control="max-age=60"))
    entry, _ = cache.lookup(cache.key(URL, "bob"))
    assert entry is not None and entry.card.name == "bob"
    cache.forget(URL)
    assert len(cache) == 0


def test_least_recently_used_goes_first() -> None:
    cache = CardCache(max_entries=2)
    fresh = _headers(cache_control="max-age=60")
    for name in ("a", "b"):
        cache.store(cache.key(f"{URL}?{name}"), AgentCard(name=name), {}, fresh)
    cache.lookup(cache.key(f"{URL}?a"))
    cache.store(cache.key(f"{URL}?c"), AgentCard(name="c"), {}, fresh)
    assert cache.lookup(cache.key(f"{URL}?b"))[0] is None
    assert cache.lookup(cache.key(f"{URL}?a"))[0] is not None


@pytest.mark.parametrize(
    ("error", "dropped"),
    [
        (TargetUnreachableError("gone"), True),
        (TargetProtocolError("broken"), True),
        (AgentCardError("bad card"), True),
        (InvalidInputError("bad request"), False),
        (TimeoutError(), False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_forget_after_drops_the_card_only_when_the_agent_failed(error: BaseException, dropped: bool) -> None:
    cache = CardCache(clock=Clock())
    cache.store(cache.key(URL), AgentCard(name="a"), {"name": "a"}, _headers(cache_control="max-age=60"))
    assert cache.forget_after(error, URL) is dropped
    assert (cache.lookup(cache.key(URL))[0] is None) is dropped
