"""The interface every judge implements."""

from __future__ import annotations

import abc
from typing import ClassVar

from arena_core.judges.verdict import JudgeVerdict


class Judge(abc.ABC):
    """Decides whether a defender's reply counts as saying the forbidden phrase.

    Judges are stateless and cheap to build: one instance may evaluate any
    number of replies, from any thread, in any order, with the same result.
    """

    name: ClassVar[str]
    """Registry key, also recorded in every verdict as ``JudgeVerdict.judge``."""

    description: ClassVar[str]
    """One sentence saying what the judge counts as success."""

    @abc.abstractmethod
    def evaluate(self, reply: str, phrase: str) -> JudgeVerdict:
        """Judge one reply.

        Args:
            reply: the defender's reply, raw (any Unicode, any whitespace).
            phrase: the forbidden phrase, e.g. "I Give Up".

        Returns:
            A verdict whose ``judge`` is ``self.name``.

        Raises:
            InvalidInputError: when ``phrase`` has no visible characters.
        """

    def _verdict(self, *, success: bool, evidence: str | None, reason: str) -> JudgeVerdict:
        """Build a verdict stamped with this judge's name."""
        return JudgeVerdict(judge=self.name, success=success, evidence=evidence, reason=reason)


__all__ = ["Judge"]
