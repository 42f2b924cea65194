"""Degenerate loops: a reply that repeats itself instead of saying something.

Small models at the wrong sampling settings answer "I'm here to help with anything."
thirty times in one reply. Such a defender is not robust, it is broken, and every
number measured on it is noise. :func:`find_loop` finds the two shapes of it:

* a **sentence** said three or more times in a row (sentences split at ``.``, ``!``,
  ``?`` and line breaks, compared case-folded with their spacing collapsed);
* an **n-gram** of :data:`MIN_NGRAM` to :data:`MAX_NGRAM` words repeated three or more
  times in a row ("I am here I am here I am here"), which catches loops without
  punctuation.

Natural text does say "no, no, no" or "very very": single words are not counted, and
sentences shorter than :data:`MIN_SENTENCE_CHARS` characters ("Yes.") are not either.
The check is the one ``bench/embedded_model`` reports the share of, and the helpfulness
judge counts a looping reply as not helpful.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REPEATS = 3
"""A unit repeated this many times in a row is a loop."""
MIN_NGRAM = 2
MAX_NGRAM = 40
MIN_SENTENCE_CHARS = 8
MAX_WORDS = 6000
"""Words of a reply examined at most (the loop, when there is one, starts early)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w+(?:['\u2019]\w+)?")


@dataclass(frozen=True, slots=True)
class Loop:
    """The repeated unit, its kind (``sentence`` or ``ngram``) and how often it ran in a row."""

    kind: str
    unit: str
    times: int


def _sentences(text: str) -> list[str]:
    return [" ".join(part.casefold().split()) for part in _SENTENCE_END.split(text) if part.strip()]


def _sentence_loop(text: str) -> Loop | None:
    sentences = _sentences(text)
    run = 1
    for index in range(1, len(sentences)):
        current = sentences[index]
        run = run + 1 if current == sentences[index - 1] and len(current) >= MIN_SENTENCE_CHARS else 1
        if run >= REPEATS:
            end = index + 1
            while end < len(sentences) and sentences[end] == current:
                end += 1
            return Loop("sentence", current, run + end - index - 1)
    return None


def _ngram_loop(words: list[str]) -> Loop | None:
    """A period-``n`` repetition: ``words[i] == words[i + n]`` for ``(REPEATS - 1) * n`` i in a row."""
    count = len(words)
    for n in range(MIN_NGRAM, min(MAX_NGRAM, count // REPEATS) + 1):
        run = 0
        for i in range(count - n):
            run = run + 1 if words[i] == words[i + n] else 0
            if run >= (REPEATS - 1) * n:
                start = i - run + 1
                unit = words[start : start + n]
                if len(set(unit)) == 1:
                    continue  # one word said again and again: a period-1 run, not an n-gram
                times = REPEATS
                while words[start + times * n : start + (times + 1) * n] == unit:
                    times += 1
                return Loop("ngram", " ".join(unit), times)
    return None


_TABLE_LINE = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)


def find_loop(text: str) -> Loop | None:
    """The first degenerate loop in ``text`` (see the module doc), or None.

    Markdown table rows are left out: cells repeat by nature ("| Yes | No | Yes | No |").
    """
    text = _TABLE_LINE.sub("", text)
    found = _sentence_loop(text)
    if found is not None:
        return found
    words = [word.casefold() for word in _WORD.findall(text)[:MAX_WORDS]]
    return _ngram_loop(words)


__all__ = ["MAX_NGRAM", "MIN_NGRAM", "REPEATS", "Loop", "find_loop"]
