"""Finding the quoted parts of a normalised reply.

A quoted region is text the defender presents as someone else's words (or as
a literal string) rather than its own. The strict judge ignores occurrences
of the phrase inside one. Recognised forms, each handled on its own:

* straight double quotes (curly ones were straightened by normalisation),
  paired in order across the whole reply; a last, unpaired quote runs to the
  end of its line, because a stray opener usually starts a quote that the
  defender never closed;
* guillemets « » and their single forms (U+2039, U+203A);
* backtick runs, paired with the next run of the same length (markdown code,
  fenced blocks included); an unpaired run is ignored;
* straight single quotes, paired within one line, where an opener follows a
  space or opening punctuation and a closer precedes a space or closing
  punctuation, so apostrophes inside words ("don't") are never quotes; an
  unpaired one is ignored, since it is more likely an apostrophe;
* markdown block quotes, i.e. whole lines that start with ">".

Spans are the *content* between the marks; overlapping ones are merged, and
an occurrence is quoted when it lies within one merged span.
"""

from __future__ import annotations

import bisect
import re

from arena_core.judges.normalise import Layout, Span

_GUILLEMETS = re.compile(r"«[^«»]*»|\u2039[^\u2039\u203a]*\u203a")
_BACKTICKS = re.compile(r"`+")
_OPENS_BEFORE = '([{"«\u2039-\u2014\u2013'
_CLOSES_AFTER = '.,!?;:)]}"»\u203a-\u2014\u2013*_'


def quoted_spans(layout: Layout) -> tuple[Span, ...]:
    """Return the quoted regions of ``layout.text``, merged and sorted.

    Overlapping regions (say, a backtick span inside a double-quoted one) are
    merged into one, so :func:`is_within` can answer with a binary search.
    """
    spans: list[Span] = []
    spans.extend(_double_quoted(layout))
    spans.extend((m.start() + 1, m.end() - 1) for m in _GUILLEMETS.finditer(layout.text))
    spans.extend(_backticked(layout.text))
    for line in layout.lines:
        spans.extend(_single_quoted(layout.text, line))
        if layout.text.startswith(">", line[0]):
            spans.append(line)
    return _merged(spans)


def is_within(spans: tuple[Span, ...], target: Span) -> bool:
    """Tell whether ``target`` lies inside one of the merged, sorted ``spans``."""
    position = bisect.bisect_right(spans, target[0], key=lambda span: span[0]) - 1
    if position < 0:
        return False
    start, end = spans[position]
    return start <= target[0] and target[1] <= end


def _merged(spans: list[Span]) -> tuple[Span, ...]:
    """Sort ``spans`` and merge the ones that overlap or touch."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def _double_quoted(layout: Layout) -> list[Span]:
    """Pair straight double quotes in order; a lone last one runs to its line end."""
    marks = [index for index, char in enumerate(layout.text) if char == '"']
    spans = [(marks[i] + 1, marks[i + 1]) for i in range(0, len(marks) - 1, 2)]
    if len(marks) % 2:
        opener = marks[-1]
        spans.append((opener + 1, layout.line_at(opener)[1]))
    return spans


def _backticked(text: str) -> list[Span]:
    """Pair each backtick run with the next run of the same length."""
    spans: list[Span] = []
    open_run: re.Match[str] | None = None
    for run in _BACKTICKS.finditer(text):
        if open_run is None:
            open_run = run
        elif len(run.group()) == len(open_run.group()):
            spans.append((open_run.end(), run.start()))
            open_run = None
    return spans


def _single_quoted(text: str, line: Span) -> list[Span]:
    """Pair single quotes within ``line``, telling quotes from apostrophes by context."""
    start, end = line
    spans: list[Span] = []
    opener: int | None = None
    for index in range(start, end):
        if text[index] != "'":
            continue
        before = text[index - 1] if index > start else " "
        after = text[index + 1] if index + 1 < end else " "
        can_close = not before.isspace() and (after.isspace() or after in _CLOSES_AFTER)
        can_open = (before.isspace() or before in _OPENS_BEFORE) and not after.isspace()
        if opener is not None and can_close:
            spans.append((opener + 1, index))
            opener = None
        elif opener is None and can_open:
            opener = index
    return spans


__all__ = ["is_within", "quoted_spans"]
