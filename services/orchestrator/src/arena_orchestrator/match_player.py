"""Who plays a match for a worker: an attacker agent over A2A (or, in the CLI, in-process).

A campaign's protocol-probe runs (``probes:``; jobs with a ``probe``) are played by the same
players: the attacker's ``probe`` skill runs the checks, and :func:`probe_result` records the
run as a :class:`~arena_core.match_models.MatchResult` (no turns, the report in
``probe_report``), so storing it once, counting and reporting it need nothing new.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import httpx

from arena_core.a2a.client.attacker import RemoteProbe, play_remote_match, run_remote_probe
from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.egress_guard import EgressGuard
from arena_core.errors import ConfigError, InvalidInputError
from arena_core.match_models import MatchResult, Outcome
from arena_core.probes.model import ProbeReport, Severity
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
        # Attackers' cards, reused between matches as their Cache-Control allows (the card of
        # every match's attacker was fetched and parsed anew: 14% of the orchestrator's CPU).
        self._cards = CardCache()

    async def play(self, job: MatchJob) -> MatchResult:
        url = job.attacker_url or self._default
        if url is None:
            raise ConfigError("the built-in attacker is not configured here: set ARENA_ATTACKER_URL")
        if job.probe is not None:
            # Only the operator's attacker runs protocol probes (a campaign names no attacker for them).
            started = datetime.now(UTC)
            remote = await run_remote_probe(
                url,
                job.probe,
                http=self._http,
                timeout_s=job.timeout_s + _REMOTE_TIMEOUT_MARGIN_S,
                token=self._token,
                card_cache=self._cards,
            )
            return probe_result(job, remote, started)
        return await play_remote_match(
            url,
            job.request,
            http=self._http,
            timeout_s=job.timeout_s + _REMOTE_TIMEOUT_MARGIN_S,
            guard=self._guard if job.attacker_url else None,
            token=None if job.attacker_url else self._token,
            card_cache=self._cards,
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


def probe_outcome(report: ProbeReport, fail_on: Severity) -> Outcome:
    """``attacker_won`` when ``report`` has a finding at ``fail_on`` or above, or a check errored
    (:meth:`~arena_core.probes.model.ProbeReport.fails`); ``defended`` otherwise."""
    return "attacker_won" if report.fails(fail_on) else "defended"


def probe_result(job: MatchJob, remote: RemoteProbe, started: datetime) -> MatchResult:
    """The result of protocol-probe ``job``: its report and :func:`probe_outcome`, or, when the
    run could not start, an ``error`` with the kind and message the attacker's task failed with."""
    if job.probe is None:
        raise ValueError(f"{job.match_id} is not a protocol-probe run")
    report = remote.report
    if report is None:
        kind = remote.error_kind or InvalidInputError.kind
        return error_result(job, kind, remote.error or "the probe run did not start", started)
    request = job.request
    return MatchResult(
        match_id=job.match_id,
        target=request.target,
        target_name=report.agent_name,
        objective=request.objective,
        strategy=request.strategy,
        judge=request.judge,
        seed=request.seed,
        max_turns=request.max_turns,
        outcome=probe_outcome(report, job.probe.fail_on),
        started_at=report.started_at,
        finished_at=report.finished_at,
        duration_ms=max(0.0, (report.finished_at - report.started_at).total_seconds() * 1000),
        probe_report=report,
    )


__all__ = ["MatchPlayer", "RemoteAttackerPlayer", "error_result", "probe_outcome", "probe_result"]
