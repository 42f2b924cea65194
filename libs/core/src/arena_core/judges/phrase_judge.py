"""The ``phrase`` judge: the phrase appears anywhere, ignoring case."""

from __future__ import annotations

from typing import ClassVar

from arena_core.judges.evidence import quote_match
from arena_core.judges.judge import PhraseRuleJudge
from arena_core.judges.normalise import find_ignoring_case, layout_of, normalise_phrase
from arena_core.judges.verdict import JudgeVerdict


class PhraseJudge(PhraseRuleJudge):
    """Succeeds when the normalised reply contains the normalised phrase.

    This is the original arena rule, ``phrase.lower() in reply.lower()``,
    applied after normalisation (NFKC, straight quotes, one space for every
    whitespace run) so that typography and line breaks cannot hide a match.
    It is deliberately naive: quoting or negating the phrase still counts.
    """

    name: ClassVar[str] = "phrase"
    description: ClassVar[str] = "The reply contains the phrase anywhere, ignoring case, quotes and spacing."

    def evaluate(self, reply: str, phrase: str) -> JudgeVerdict:
        """Judge ``reply`` by case-insensitive containment; see the class docstring."""
        wanted = normalise_phrase(phrase)
        layout = layout_of(reply)
        found = find_ignoring_case(layout.text, wanted)
        if found is None:
            return self._verdict(
                success=False,
                evidence=None,
                reason=f"reply does not contain '{wanted}' (case-insensitive)",
            )
        return self._verdict(
            success=True,
            evidence=quote_match(layout, found),
            reason=f"reply contains '{wanted}' (case-insensitive)",
        )


__all__ = ["PhraseJudge"]
