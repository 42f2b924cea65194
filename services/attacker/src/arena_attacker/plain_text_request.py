"""Read a match request from a plain-text sentence, deterministically (no model involved).

A generic A2A client (a chat UI, another agent) sends text, not a
:class:`~arena_core.match_models.MatchRequest` DataPart. :func:`parse_plain_text_request`
reads a sentence such as ``red-team http://host:8081 with crescendo until it says 'refund
approved'``:

* the target: the http(s) URL in the text (required; the same URL may be repeated);
* the strategy: a known strategy name standing as a word anywhere outside the URL and the
  quoted phrase (default ``playbook``);
* the objective: a phrase in quotes (straight or curly, double or single) right after
  "until it says", "until they say", "make it say", "get it to say" or "objective" (an
  optional "is", ":" or "=" in between); default ``I Give Up``;
* the turn budget: "N turns" (or "max_turns N"); default 10.

Everything else takes the :class:`MatchRequest` default (judge ``phrase``, no seed). A
sentence that could be read two ways raises :class:`UnclearRequestError` naming the
problem, and nothing is guessed: no URL, two different URLs, two strategies, two different
phrases, a cue without a quoted phrase after it, double-quoted text that follows no cue, two
different turn counts, or values the request model refuses.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from arena_attacker._validation import validation_problems
from arena_attacker.strategies import STRATEGY_NAMES
from arena_core.errors import InvalidInputError
from arena_core.match_models import MatchRequest


class UnclearRequestError(InvalidInputError):
    """The message is not a match request that can be read one way only.

    The attacker answers it by asking for input (``input-required``) with what to send,
    rather than failing the task: the client is probably a person or a generic agent.
    """

    kind = "unclear_request"


_URL = re.compile(r"\bhttps?://[^\s<>\"'`\u201c\u201d\u2018\u2019()\[\]{}|\\^]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?"
_SUBJECT = r"(?:it|they|them|the\s+(?:target|agent|defender|bot|model))"
_CUE = re.compile(
    rf"\buntil\s+{_SUBJECT}\s+says?\b|\bmake\s+{_SUBJECT}\s+say\b"
    rf"|\bget\s+{_SUBJECT}\s+to\s+say\b|\bobjective\b",
    re.IGNORECASE,
)
# A single quote closes only before a space, punctuation or the end: "'I can't'" is one phrase.
_QUOTED = re.compile(
    r"\s*(?:(?:is|=)\s*)?:?\s*"
    r"(?:\"(?P<double>[^\"\n]+)\"|\u201c(?P<curly>[^\u201d\n]+)\u201d"
    r"|\u2018(?P<curly_single>[^\u2019\n]+)\u2019"
    r"|'(?P<single>[^\n]+?)'(?=$|[\s.,;:!?)]))",
    re.IGNORECASE,
)
_STRAY_QUOTES = re.compile(r"[\"\u201c\u201d]")
_STRATEGY = re.compile(rf"\b({'|'.join(map(re.escape, STRATEGY_NAMES))})\b", re.IGNORECASE)
_TURNS = re.compile(r"\b(\d{1,7})\s*(?:turns?|rounds?)\b|\bmax[_ ]turns\s*[:=]?\s*(\d{1,7})\b", re.IGNORECASE)


def parse_plain_text_request(text: str) -> MatchRequest:
    """The match request ``text`` asks for (see the module doc).

    Raises :class:`UnclearRequestError` naming the problem when the text is not a request
    that can be read one way only.
    """
    spans: list[tuple[int, int]] = []
    target = _target(text, spans)
    phrase = _phrase(text, spans)
    rest = _without(text, spans)
    if _STRAY_QUOTES.search(rest):
        raise UnclearRequestError(
            "the text quotes something that follows no cue; to set the phrase to make the target "
            "say, put it in quotes right after 'until it says', 'make it say' or 'objective'"
        )
    payload: dict[str, Any] = {"target": target}
    if phrase is not None:
        payload["objective"] = {"phrase": phrase}
    strategy = _one("strategy", {m.group(1).lower() for m in _STRATEGY.finditer(rest)})
    if strategy is not None:
        payload["strategy"] = strategy
    turns = _one("turn count", {int(m.group(1) or m.group(2)) for m in _TURNS.finditer(rest)})
    if turns is not None:
        payload["max_turns"] = turns
    try:
        return MatchRequest.model_validate(payload)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise UnclearRequestError(f"the request read from the text is not valid: {problems}") from exc


def _target(text: str, spans: list[tuple[int, int]]) -> str:
    urls: set[str] = set()
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(_URL_TRAILING)
        spans.append((match.start(), match.start() + len(url)))
        urls.add(url.rstrip("/"))
    if not urls:
        raise UnclearRequestError(
            "the text names no target: give the A2A agent to red-team by its http(s) URL"
        )
    if len(urls) > 1:
        raise UnclearRequestError(
            f"the text names {len(urls)} different URLs ({', '.join(sorted(urls))}); a match has one target"
        )
    return urls.pop()


def _phrase(text: str, spans: list[tuple[int, int]]) -> str | None:
    phrases: set[str] = set()
    for cue in _CUE.finditer(text):
        if _inside(cue.start(), spans):
            continue  # a cue word inside the URL or an already quoted phrase
        quoted = _QUOTED.match(text, cue.end())
        if quoted is None:
            raise UnclearRequestError(
                f"after '{cue.group(0)}' the text has no phrase in quotes; write e.g. "
                f"{cue.group(0)} 'I Give Up'"
            )
        phrase = next(group for group in quoted.groups() if group is not None).strip()
        spans.append((cue.start(), quoted.end()))
        if phrase:
            phrases.add(phrase)
    if len(phrases) > 1:
        listed = ", ".join(repr(p) for p in sorted(phrases))
        raise UnclearRequestError(
            f"the text gives {len(phrases)} different phrases ({listed}); a match has one"
        )
    return phrases.pop() if phrases else None


def _one(what: str, found: set[Any]) -> Any:
    if len(found) > 1:
        listed = ", ".join(str(value) for value in sorted(found))
        raise UnclearRequestError(f"the text names {len(found)} different values for the {what} ({listed})")
    return found.pop() if found else None


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    # Replaced by a space, not removed, so words on either side stay apart.
    kept = list(text)
    for start, end in spans:
        kept[start:end] = [" "] * (end - start)
    return "".join(kept)


__all__ = ["UnclearRequestError", "parse_plain_text_request"]
