"""Reading replies in conversational strategies: did the defender decline, is a model's text usable.

Shared by ``crescendo`` (backtracking, question salvage) and ``goat``
(conversation resets, the attacker model's reply).
"""

from __future__ import annotations

import json
import re

from arena_attacker.strategies.attacker_llm import looks_like_refusal
from arena_core.match_models import TurnRecord

MAX_TEXT_CHARS = 2000
"""Longer texts are cut to this length by :func:`usable_text`."""

_JUDGE_SAYS_REFUSAL = re.compile(r"\b(?:refus(?:al|als|ed|es|ing)|declin(?:ed|es|ing))\b", re.IGNORECASE)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\u201c[^\u201d]*\u201d")
_PLACEHOLDER = re.compile(r"^(?:<[^<>]*>|\.{3}|…)$")  # the prompts' own format examples


def defender_refused(record: TurnRecord) -> bool:
    """True when the defender declined: its text opens with a refusal, or the judge says so.

    The judge's reason is read with quoted text removed, so that a forbidden
    phrase containing "refuse" does not count as the judge saying it.
    """
    if record.verdict.success:
        return False
    if looks_like_refusal(record.defender_text):
        return True
    return bool(_JUDGE_SAYS_REFUSAL.search(_QUOTED.sub("", record.verdict.reason)))


def json_string_field(field: re.Pattern[str], raw: str) -> str | None:
    """The JSON string body that ``field``'s first group captures in ``raw``, unescaped (as
    written when it is not valid JSON), or None when ``field`` does not match.

    For fields salvaged from a model's reply that is not valid JSON (e.g. cut off by the
    token limit).
    """
    match = field.search(raw)
    if match is None:
        return None
    try:
        decoded = json.loads(f'"{match.group(1)}"')
    except json.JSONDecodeError:
        return match.group(1)
    return decoded if isinstance(decoded, str) else match.group(1)


def usable_text(value: object) -> str | None:
    """``value`` stripped and cut to :data:`MAX_TEXT_CHARS`, or None if empty or a placeholder."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or _PLACEHOLDER.match(text):
        return None
    return text[:MAX_TEXT_CHARS]


def shorten(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["MAX_TEXT_CHARS", "defender_refused", "shorten", "usable_text"]
