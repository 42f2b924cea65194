"""Who plays a match for a worker: an attacker agent over A2A (or, in the CLI, in-process)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import httpx

from arena_core.a2a.client.attacker import play_remote_match
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.errors import ConfigError
from arena_core.match_models import MatchResult
from arena_orchestrator.campaign_models import MatchJob

# play_remote_match's own limit only backs up the worker's match timeout.
_REMOTE_TIMEOUT_MARGIN_S = 60.0


class MatchPlayer(Protocol):
    """Plays one match and returns the attacker's result.

    A match that ran returns a result, whatever its outcome (errors included).
    Raises :class:`~arena_core.errors.ArenaError` when the match could not be
    played at all (the attacker is unreachable, rejected the request...).
    Cancelling the call stops the match.
    """

    async def play(self, job: MatchJob) -> MatchResult:
        """Play ``job``."""
        ...


class RemoteAttackerPlayer:
    """Asks an attacker agent to play each match over streaming A2A.

    ``default_attacker_url`` plays the spec's built-in attacker entries
    (``ARENA_ATTACKER_URL``); attackers with a URL are asked directly. Those
    URLs come from the campaign (user input), so they pass ``guard``
    (``ARENA_TARGET_ALLOWLIST``) when one is given; the operator's own
    ``ARENA_ATTACKER_URL`` does not. ``token`` (``ARENA_ATTACKER_TOKEN``) goes to
    the operator's attacker only, never to a campaign's URL.
    """

    def __init__(
        self,
        default_attacker_url: str | None,
        *,
        http: httpx.AsyncClient | None = None,
        guard: EgressGuard | None = None,
        token: str | None = None,
    ) -> None:
        self._default = default_attacker_url
        self._http = http
        self._guard = guard
        self._token = token

    async def play(self, job: MatchJob) -> MatchResult:
        url = job.attacker_url or self._default
        if url is None:
            raise ConfigError("the built-in attacker is not configured here: set ARENA_ATTACKER_URL")
        return await play_remote_match(
            url,
            job.request,
            http=self._http,
            timeout_s=job.timeout_s + _REMOTE_TIMEOUT_MARGIN_S,
            guard=self._guard if job.attacker_url else None,
            token=None if job.attacker_url else self._token,
        )


def error_result(job: MatchJob, kind: str, message: str, started: datetime) -> MatchResult:
    """The result of a match that could not be played: outcome ``error``, neither win nor defence."""
    finished = datetime.now(UTC)
    request = job.request
    return MatchResult(
        match_id=job.match_id,
        target=request.target,
        objective=request.objective,
        strategy=request.strategy,
        judge=request.judge,
        seed=request.seed,
        max_turns=request.max_turns,
        outcome="error",
        started_at=started,
        finished_at=finished,
        duration_ms=max(0.0, (finished - started).total_seconds() * 1000),
        error=message,
        error_kind=kind,
    )


__all__ = ["MatchPlayer", "RemoteAttackerPlayer", "error_result"]
