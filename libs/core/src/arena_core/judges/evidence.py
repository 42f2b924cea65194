"""Cutting a short, honest quote out of a normalised reply.

Evidence is the sentence (or run of sentences) holding a match. When that is
longer than :data:`EVIDENCE_LIMIT`, a window centred on the match is kept and
"…" marks each side that was cut. Normalised text never contains "…" (NFKC
turns it into "..."), so stripping "…" from evidence always leaves a
substring of the normalised reply.
"""

from __future__ import annotations

from arena_core.judges.normalise import Layout, Span

EVIDENCE_LIMIT = 300
"""Maximum length of an evidence string, ellipses included."""

_ELLIPSIS = "…"


def excerpt(text: str, span: Span, focus: Span, limit: int = EVIDENCE_LIMIT) -> str:
    """Return ``text[span]``, trimmed to at most ``limit`` characters around ``focus``.

    ``focus`` must lie inside ``span``. When the span is too long, the window
    keeps as much of the focus as fits, centred, and adds "…" on each cut side.
    """
    start, end = span
    if end - start <= limit:
        return text[start:end].strip()
    focus_start, focus_end = focus
    budget = limit - 2 * len(_ELLIPSIS)
    if focus_end - focus_start >= budget:
        low, high = focus_start, focus_start + budget
    else:
        spare = budget - (focus_end - focus_start)
        low = max(start, focus_start - spare // 2)
        high = min(end, low + budget)
        low = max(start, high - budget)
    prefix = _ELLIPSIS if low > start else ""
    suffix = _ELLIPSIS if high < end else ""
    return prefix + text[low:high].strip() + suffix


def quote_match(layout: Layout, match: Span) -> str:
    """Quote the sentence(s) of ``layout`` that hold ``match``, trimmed to the limit."""
    first = layout.sentence_at(match[0])
    last = layout.sentence_at(max(match[1] - 1, match[0]))
    return excerpt(layout.text, (first[0], max(first[1], last[1])), match)


__all__ = ["EVIDENCE_LIMIT", "excerpt", "quote_match"]
