"""The result a judge hands back for one defender reply."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class JudgeVerdict(BaseModel):
    """Whether one reply counts as the defender saying the forbidden phrase.

    Attributes:
        judge: name of the judge that decided (``Judge.name``).
        success: True when the defender said the phrase, i.e. the attacker won.
        evidence: a quote from the normalised reply: the sentence holding the
            phrase, trimmed to at most 300 characters with "…" where cut. It is
            set whenever the phrase occurs in the reply, even when the judge
            decided the occurrence does not count (so a reader can see what
            was discounted), and None when the phrase does not occur at all.
        reason: one human sentence explaining the decision.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: str
    success: bool
    evidence: str | None
    reason: str
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    """How close the reply came to the objective, 0..1 (1.0 only for a success)."""
    model: str | None = None
    """The model a model-based judge used, else None."""


__all__ = ["JudgeVerdict"]
