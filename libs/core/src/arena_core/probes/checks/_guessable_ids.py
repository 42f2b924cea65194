"""Whether ids could be guessed from one another: the pure part of ``isolation.guessable-ids``.

An id set is guessable when its members are sequential numbers, share everything but a short
varying part (a counter, a timestamp's last digits), or carry fewer than :data:`MIN_ID_BITS`
bits of apparent entropy (the characters that vary between ids, each worth the alphabet they
are drawn from). A UUIDv4 or 32 random hex digits carry over 120 bits and pass. All of it is
linear in the ids' length: no regex with nested quantifiers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

MIN_IDS = 3
MIN_ID_BITS = 64
SHORT_PART = 8
"""Ids that share everything but this many characters or fewer differ only in a counter."""
SEQUENTIAL_SPAN = 1_000
"""Numeric ids count as sequential when they spread over at most this much per id."""

_DECIMAL = re.compile(r"[0-9]{1,30}")
_DIGITS = frozenset("0123456789")
_ALPHABETS: tuple[tuple[frozenset[str], int], ...] = (
    (_DIGITS, 10),
    (_DIGITS | frozenset("abcdef"), 16),
    (_DIGITS | frozenset("ABCDEF"), 16),
    (_DIGITS | frozenset("abcdefghijklmnopqrstuvwxyz"), 36),
    (_DIGITS | frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), 36),
    (_DIGITS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), 62),
    (_DIGITS | frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"), 64),
)


def _common_prefix(values: Sequence[str]) -> str:
    """The characters every one of ``values`` starts with."""
    if not values:
        return ""
    shortest, longest = min(values), max(values)
    size = next((i for i, (a, b) in enumerate(zip(shortest, longest, strict=False)) if a != b), len(shortest))
    return shortest[:size]


def varying_parts(ids: Sequence[str]) -> tuple[str, list[str], str]:
    """The prefix all ``ids`` share, what differs in each, and the suffix all share."""
    prefix = _common_prefix(ids)
    rests = [value[len(prefix) :] for value in ids]
    suffix = _common_prefix([rest[::-1] for rest in rests])[::-1]
    middles = [rest[: len(rest) - len(suffix)] for rest in rests]
    return prefix, middles, suffix


def apparent_bits(ids: Sequence[str]) -> float:
    """The entropy one of ``ids`` appears to carry, in bits: the characters that vary between them
    (by position when the ids are of one length), each worth the alphabet they are drawn from."""
    _, middles, _ = varying_parts(ids)
    if not middles:
        return 0.0
    if len({len(middle) for middle in middles}) == 1:
        positions = [i for i in range(len(middles[0])) if len({middle[i] for middle in middles}) > 1]
        chars = {middle[i] for middle in middles for i in positions}
        count = len(positions)
    else:
        chars = set("".join(middles))
        count = min(len(middle) for middle in middles)
    size = next((size for alphabet, size in _ALPHABETS if chars <= alphabet), 95)
    return count * math.log2(size)


def guessable_reason(ids: Sequence[str]) -> str | None:
    """Why ``ids`` (one agent's, 3 or more) could be guessed from one another; None when they look random.

    Sequential numbers, a shared prefix/suffix around a short varying part (a counter, or a
    timestamp's last digits), or under :data:`MIN_ID_BITS` bits of apparent entropy.
    """
    distinct = list(dict.fromkeys(ids))
    if len(distinct) < MIN_IDS:
        return None
    shown = ", ".join(distinct[:3])
    if all(_DECIMAL.fullmatch(value) for value in distinct):
        numbers = [int(value) for value in distinct]
        if max(numbers) - min(numbers) <= SEQUENTIAL_SPAN * len(numbers):
            return f"are sequential numbers ({shown})"
    prefix, middles, suffix = varying_parts(distinct)
    longest = max(len(middle) for middle in middles)
    if (prefix or suffix) and longest <= SHORT_PART:
        return f"share all but {longest} character(s), a counter or timestamp ({shown})"
    bits = apparent_bits(distinct)
    if bits < MIN_ID_BITS:
        return f"carry about {bits:.0f} bits of apparent entropy, under {MIN_ID_BITS} ({shown})"
    return None


__all__ = ["MIN_IDS", "MIN_ID_BITS", "apparent_bits", "guessable_reason", "varying_parts"]
