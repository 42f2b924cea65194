"""How long to wait before trying again: the one backoff policy of the arena.

*Whether* to try again is a property of the error (``ArenaError.retryable``,
:mod:`arena_core.errors`); *when* is a :class:`Backoff`. Every retry loop (the
campaign worker's tries and busy attackers, the model client's calls, the CLI
following a campaign) computes its waits here, each with its own base and cap,
so that no two loops drift into different formulas.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from arena_core.errors import ArenaError, TargetError

_MAX_EXPONENT = 1023
"""2.0 ** 1024 overflows a float; past this the cap has long been reached."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff: ``base_s`` before the first retry, doubling, at most ``cap_s``.

    With ``jitter`` the wait is drawn from ``rng`` between half that step and the whole
    step ("equal jitter"): clients refused together do not come back together, yet each
    still waits at least half the step.
    """

    base_s: float
    cap_s: float
    jitter: bool = False
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not (self.base_s >= 0 and self.cap_s >= 0):
            raise ValueError(f"backoff base and cap must be >= 0, not {self.base_s!r} and {self.cap_s!r}")

    def step(self, attempt: int) -> float:
        """The un-jittered wait before retry number ``attempt`` (1-based)."""
        if attempt < 1:
            raise ValueError(f"attempts count from 1, not {attempt!r}")
        return min(self.cap_s, self.base_s * 2.0 ** min(attempt - 1, _MAX_EXPONENT))

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        step = self.step(attempt)
        if not self.jitter:
            return step
        return float(step / 2 + self.rng.uniform(0, step / 2))


def retryable_peer_failure(error: ArenaError) -> bool:
    """Whether a failure to use one of the arena's *own* services is worth another try.

    A worker asking its attacker, and the CLI following an orchestrator, talk to a peer the
    operator runs, which may be restarting or redeploying: besides the transient failures
    (``retryable``), an answer that was not what the protocol says (a card, a body, a status
    a proxy made up while the peer was away: any :class:`TargetError`) is tried again. A
    target, someone else's agent, gets no such benefit: only ``retryable`` counts for it.
    """
    return error.retryable or isinstance(error, TargetError)


__all__ = ["Backoff", "retryable_peer_failure"]
