"""A private HTTP cache of agent cards, honouring ``Cache-Control``, ``ETag`` and ``Last-Modified``.

The A2A spec asks agents to serve their card with ``Cache-Control`` and a ``max-age`` and lets
them add validators; a client that plays many matches against one agent (the orchestrator
asking its attacker, the attacker asking a defender) need not fetch and parse the card for
every match. A :class:`CardCache` keeps, per card URL and per credentials (their fingerprint,
never their values), the parsed card and what RFC 9111 needs:

* ``max-age=N`` (capped at :data:`MAX_FRESH_S`): reused without a request for N seconds;
* ``no-cache``, or no ``max-age``: kept only with a validator, and revalidated on every use
  (``If-None-Match`` / ``If-Modified-Since``; a 304 reuses the parsed card);
* ``no-store``, ``Vary: *`` or a ``Vary`` on a header the arena's request does not fix, no
  validator and no ``max-age``: not kept.

:meth:`forget` drops an agent's entry: a caller does so when the agent the card sent it to
does not answer or misbehaves (:meth:`forget_after`, one rule for every caller), so the next
match reads the card again. Entries are bounded
(least recently used first out). One cache belongs to one process and is never shared
between identities; the protocol probes never use one (they test the card itself).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from a2a.types.a2a_pb2 import AgentCard

from arena_core.errors import AgentCardError, TargetProtocolError, TargetUnreachableError

MAX_FRESH_S = 3600.0
"""The longest a card is reused without asking, whatever its max-age says."""

MAX_ENTRIES = 256

STALE_CARD_ERRORS = (TargetUnreachableError, TargetProtocolError, AgentCardError)
"""The failures after which a caller reads the agent's card anew (:meth:`CardCache.forget_after`)."""

_FIXED_REQUEST_HEADERS = frozenset({"a2a-version", "accept", "accept-encoding", "authorization"})
"""Headers the card request always sends the same way per entry (authorization: per key)."""


@dataclass(slots=True)
class CachedCard:
    """One stored card with its validators and freshness."""

    card: AgentCard
    raw: dict[str, Any]
    etag: str | None
    last_modified: str | None
    fresh_until: float

    def validators(self) -> dict[str, str]:
        """The conditional request headers that revalidate this entry."""
        if self.etag is not None:
            return {"If-None-Match": self.etag}
        if self.last_modified is not None:
            return {"If-Modified-Since": self.last_modified}
        return {}

    def copy(self) -> tuple[AgentCard, dict[str, Any]]:
        """The card and its JSON, as copies the caller may change."""
        card = AgentCard()
        card.CopyFrom(self.card)
        return card, dict(self.raw)


def _directives(cache_control: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in cache_control.split(","):
        name, _, value = item.strip().partition("=")
        if name:
            found[name.strip().lower()] = value.strip().strip('"')
    return found


def freshness_s(headers: Any) -> float | None:
    """How long a response with these headers may be reused without asking: seconds (0: ask
    every time), or None when it must not be stored at all (before the validator check)."""
    directives = _directives(headers.get("cache-control", ""))
    if "no-store" in directives:
        return None
    vary = {part.strip().lower() for part in headers.get("vary", "").split(",") if part.strip()}
    if "*" in vary or not vary <= _FIXED_REQUEST_HEADERS:
        return None
    if "no-cache" in directives:
        return 0.0
    try:
        max_age = float(directives["max-age"])
    except (KeyError, ValueError):
        return 0.0
    age = headers.get("age", "0")
    try:
        already = max(0.0, float(age))
    except ValueError:
        already = 0.0
    return max(0.0, min(max_age - already, MAX_FRESH_S))


class CardCache:
    """Agent cards by card URL and credentials (see the module docstring)."""

    def __init__(
        self, *, max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._entries: OrderedDict[tuple[str, str], CachedCard] = OrderedDict()
        self._max = max_entries
        self._clock = clock
        self.hits = 0
        """Cards served without a request."""
        self.revalidated = 0
        """Cards confirmed by a 304."""

    @staticmethod
    def key(card_url: str, fingerprint: str = "") -> tuple[str, str]:
        """The entry's key: the card URL and the credentials' fingerprint ("" for none)."""
        return card_url, fingerprint

    def lookup(self, key: tuple[str, str]) -> tuple[CachedCard | None, bool]:
        """The entry (or None) and whether it is fresh (usable without a request)."""
        entry = self._entries.get(key)
        if entry is None:
            return None, False
        self._entries.move_to_end(key)
        fresh = self._clock() < entry.fresh_until
        if fresh:
            self.hits += 1
        return entry, fresh

    def store(self, key: tuple[str, str], card: AgentCard, raw: dict[str, Any], headers: Any) -> None:
        """Keep a card fetched with a 200, if its headers allow it."""
        fresh_s = freshness_s(headers)
        etag, last_modified = headers.get("etag"), headers.get("last-modified")
        if fresh_s is None or (fresh_s == 0 and etag is None and last_modified is None):
            self._entries.pop(key, None)
            return
        stored = AgentCard()
        stored.CopyFrom(card)
        self._entries[key] = CachedCard(stored, dict(raw), etag, last_modified, self._clock() + fresh_s)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def refreshed(self, key: tuple[str, str], entry: CachedCard, headers: Any) -> None:
        """A 304 confirmed ``entry``: take the new freshness (and validators) it came with."""
        self.revalidated += 1
        fresh_s = freshness_s(headers)
        if fresh_s is None:
            self._entries.pop(key, None)
            return
        entry.fresh_until = self._clock() + fresh_s
        entry.etag = headers.get("etag", entry.etag)
        entry.last_modified = headers.get("last-modified", entry.last_modified)

    def forget(self, card_url: str) -> None:
        """Drop every entry of ``card_url`` (whatever the credentials)."""
        for key in [key for key in self._entries if key[0] == card_url]:
            del self._entries[key]

    def forget_after(self, error: BaseException, card_url: str) -> bool:
        """Drop ``card_url``'s entries when ``error`` says its agent could not be reached, broke
        the protocol or showed a bad card: the card may be what is stale (the agent moved, or
        changed its interfaces). Other failures (a refusal, a timeout of the match, bad input)
        keep it. Returns whether the entries were dropped."""
        if not isinstance(error, STALE_CARD_ERRORS):
            return False
        self.forget(card_url)
        return True

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["MAX_FRESH_S", "STALE_CARD_ERRORS", "CachedCard", "CardCache", "freshness_s"]
