"""Text normalisation and layout shared by every judge.

Judges compare the *normalised* reply with the *normalised* phrase, so this
module decides what counts as "the same text":

* Unicode NFKC, so full-width letters, ligatures and non-breaking spaces
  compare equal to their plain forms (NFKC also turns the ellipsis character
  into three full stops, which is why evidence can use "…" unambiguously);
* curly, low-9 and modifier quotes and apostrophes become straight ones;
* zero-width characters and soft hyphens are removed;
* every whitespace run, newlines included, becomes one space, and both ends
  are stripped.

:func:`layout_of` also records where lines and sentences were, as spans into
the normalised text: collapsing newlines loses that structure, and judges need
it to quote a whole sentence as evidence and to scope their rules.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property

from arena_core.errors import InvalidInputError

Span = tuple[int, int]
"""A half-open ``(start, end)`` range of character offsets."""

_CHAR_MAP = str.maketrans(
    {
        "\u2018": "'",  # left single quotation mark
        "\u2019": "'",  # right single quotation mark / typographic apostrophe
        "\u201a": "'",  # single low-9 quotation mark
        "\u201b": "'",  # single high-reversed-9 quotation mark
        "\u02bc": "'",  # modifier letter apostrophe
        "\u201c": '"',  # left double quotation mark
        "\u201d": '"',  # right double quotation mark
        "\u201e": '"',  # double low-9 quotation mark
        "\u201f": '"',  # double high-reversed-9 quotation mark
        "\u200b": None,  # zero-width space
        "\u200c": None,  # zero-width non-joiner
        "\u200d": None,  # zero-width joiner
        "\u2060": None,  # word joiner
        "\ufeff": None,  # zero-width no-break space / BOM
        "\u00ad": None,  # soft hyphen
    }
)

# A sentence ends at a run of terminal punctuation, optionally followed by
# closing quotes, brackets or markdown emphasis, when a space comes next.
_SENTENCE_END = re.compile(r"[.!?]+[\"')\]»\u203a*_]*(?=\s)")


def _prepare(text: str) -> str:
    """Apply the character-level steps (NFKC, quotes, invisibles), keep whitespace."""
    return unicodedata.normalize("NFKC", text).translate(_CHAR_MAP)


def normalise(text: str) -> str:
    """Return ``text`` normalised as described in the module docstring.

    The result never contains newlines, runs of spaces, leading or trailing
    whitespace, curly quotes or the "…" character.
    """
    return " ".join(_prepare(text).split())


def normalise_phrase(phrase: str) -> str:
    """Normalise a forbidden phrase, refusing one with nothing visible in it.

    Raises:
        InvalidInputError: when the phrase is empty after normalisation; an
            empty phrase would be "contained" in every reply.
    """
    normalised = normalise(phrase)
    if not normalised:
        raise InvalidInputError("the forbidden phrase is empty; give at least one visible character")
    return normalised


@dataclass(frozen=True)
class Layout:
    """A normalised reply plus where its lines and sentences are.

    ``text`` equals ``normalise(reply)``. ``lines`` and ``sentences`` are
    sorted, non-overlapping spans into ``text``; every sentence lies inside
    one line, and both cover every non-space character of ``text``.
    """

    text: str
    lines: tuple[Span, ...]
    sentences: tuple[Span, ...]

    def line_at(self, index: int) -> Span:
        """Return the span of the line containing offset ``index``."""
        return _span_at(self.lines, self._line_starts, index)

    def sentence_at(self, index: int) -> Span:
        """Return the span of the sentence containing offset ``index``."""
        return _span_at(self.sentences, self._sentence_starts, index)

    # Cached because judges look up one span per occurrence, and a long reply
    # can hold thousands of occurrences.
    @cached_property
    def _line_starts(self) -> list[int]:
        return [start for start, _ in self.lines]

    @cached_property
    def _sentence_starts(self) -> list[int]:
        return [start for start, _ in self.sentences]


def layout_of(reply: str) -> Layout:
    """Normalise ``reply`` and locate its lines and sentences."""
    parts: list[str] = []
    lines: list[Span] = []
    sentences: list[Span] = []
    offset = 0
    for raw_line in _prepare(reply).splitlines():
        line = " ".join(raw_line.split())
        if not line:
            continue
        if parts:
            offset += 1  # the single space that joins this line to the previous one
        lines.append((offset, offset + len(line)))
        sentences.extend(_sentence_spans(line, offset))
        parts.append(line)
        offset += len(line)
    # Every splitlines() boundary is also whitespace to str.split(), so this
    # join is exactly normalise(reply).
    return Layout(text=" ".join(parts), lines=tuple(lines), sentences=tuple(sentences))


def _sentence_spans(line: str, offset: int) -> list[Span]:
    """Split one whitespace-collapsed line into sentence spans shifted by ``offset``."""
    spans: list[Span] = []
    start = 0
    for match in _SENTENCE_END.finditer(line):
        spans.append((offset + start, offset + match.end()))
        start = match.end() + 1  # skip the single space the lookahead saw
    spans.append((offset + start, offset + len(line)))
    return spans


def _span_at(spans: tuple[Span, ...], starts: list[int], index: int) -> Span:
    """Return the span that contains ``index``, or the nearest one before it.

    ``starts`` lists the start of each span. Offsets that fall on a joining
    space belong to the span on their left, which keeps callers free of a
    "not found" case.
    """
    if not spans:
        return (0, 0)
    position = bisect.bisect_right(starts, index) - 1
    return spans[max(position, 0)]


def find_ignoring_case(text: str, needle: str) -> Span | None:
    """Locate ``needle`` in ``text`` under the ``needle.lower() in text.lower()`` rule.

    Returns the span of the first occurrence, or None exactly when that rule
    says the needle is absent.
    """
    folded_text = text.lower()
    folded_needle = needle.lower()
    index = folded_text.find(folded_needle)
    if index < 0:
        return None
    if len(folded_text) == len(text) and len(folded_needle) == len(needle):
        return (index, index + len(needle))
    # lower() changed some lengths (the dotted capital I grows to two code
    # points), so offsets no longer line up and we fall back to a regex.
    match = re.search(re.escape(needle), text, re.IGNORECASE)
    return (match.start(), match.end()) if match else (0, len(text))


__all__ = [
    "Layout",
    "Span",
    "find_ignoring_case",
    "layout_of",
    "normalise",
    "normalise_phrase",
]
