"""What the API and the CLI do with campaigns: submit, queue, watch, cancel, report.

Independent of HTTP: the REST API (:mod:`arena_orchestrator.api`) and the
in-process ``arena campaign run`` both call this class.

Queueing a campaign is resumable. Matches are queued in batches; after each
batch the campaign records how far it got, under a lock with an expiry. If the
submitting replica dies half-way, any worker's maintenance pass takes the lock
once it lapses and queues the rest (a batch may be queued twice; the
idempotent record counts its matches once).

At most ``max_active_campaigns`` campaigns are unfinished (``queued`` or ``running``) at
once, over every replica sharing the store (``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS``);
with the match cap per campaign this bounds the match queue. A submission beyond it raises
:class:`TooManyCampaignsError` (HTTP 429 with ``Retry-After``). A campaign frees its place
when it completes, is canceled or exhausts its token budget.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import secrets
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime

from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from arena_core.errors import StateUnavailableError
from arena_core.settings import ArenaSettings
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import jaeger_trace_url, tracer
from arena_orchestrator.campaign_models import (
    FINAL_STATUSES,
    Campaign,
    CampaignProgress,
    CampaignReport,
    MatchRecord,
    MatchSummary,
    ProtocolProbeRun,
)
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import CampaignStore
from arena_orchestrator.errors import (
    BuiltinAttackerMissingError,
    CampaignTooLargeError,
    NotFoundError,
    TooManyCampaignsError,
)
from arena_orchestrator.expansion import campaign_id_of, match_id_for
from arena_orchestrator.leaderboard import Leaderboard, LeaderboardEntry, build_leaderboard, entry_for
from arena_orchestrator.match_queue import MatchQueue, QueuedMatch
from arena_orchestrator.progress import build_progress

logger = logging.getLogger(__name__)

ENQUEUE_BATCH = 500
ENQUEUE_LOCK_S = 30.0
REPORT_PAGE = 1000
RETRY_AFTER_S = 30
"""The ``Retry-After`` of a submission refused because too many campaigns are unfinished."""
LEADERBOARD_CATCH_UP = 500
"""How many of the newest campaigns a leaderboard read enters if a worker did not."""
LEADERBOARD_TABLES = 4
"""Fitted leaderboard tables a service keeps (by campaigns and filters; a crowded one is tens
of MB)."""
DEFAULT_MAX_ACTIVE_CAMPAIGNS: int = ArenaSettings.model_fields["orchestrator_max_active_campaigns"].default


def new_campaign_id() -> str:
    """A fresh campaign id: ``c-`` and 16 hex digits."""
    return f"c-{secrets.token_hex(8)}"


class CampaignService:
    """Campaign operations over a store and a queue."""

    def __init__(
        self,
        store: CampaignStore,
        queue: MatchQueue,
        *,
        max_campaign_matches: int,
        builtin_attacker: bool,
        jaeger_url: str | None = None,
        max_active_campaigns: int | None = DEFAULT_MAX_ACTIVE_CAMPAIGNS,
    ) -> None:
        """``max_active_campaigns``: ``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS``; None: no limit."""
        self.store = store
        self.queue = queue
        self._max_active = max_active_campaigns
        self._max_matches = max_campaign_matches
        self._builtin_attacker = builtin_attacker
        self._jaeger_url = jaeger_url
        # Fits of the leaderboard by (entries, filters), done or running: entries are write-once,
        # so the same campaigns give the same table. One fit at a time, off the event loop.
        self._tables: OrderedDict[tuple[str, str | None, datetime | None], asyncio.Task[Leaderboard]] = (
            OrderedDict()
        )
        self._fitting: asyncio.Lock | None = None

    async def submit(
        self, spec: CampaignSpec, trace_context: dict[str, str] | None = None
    ) -> CampaignProgress:
        """Store the campaign and queue all its matches; return its progress (status ``queued``).

        Raises :class:`CampaignTooLargeError` above ``ARENA_ORCHESTRATOR_MAX_CAMPAIGN_MATCHES``,
        :class:`BuiltinAttackerMissingError` when the spec needs an attacker URL this
        orchestrator does not have, and :class:`TooManyCampaignsError` when
        ``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS`` campaigns are unfinished already.
        """
        if spec.match_count > self._max_matches:
            raise CampaignTooLargeError(
                f"the campaign expands to {spec.match_count} matches; this orchestrator accepts at most "
                f"{self._max_matches} (ARENA_ORCHESTRATOR_MAX_CAMPAIGN_MATCHES)"
            )
        if spec.uses_builtin_attacker and not self._builtin_attacker:
            if any(a.url is None for a in spec.attackers):
                why = "an attacker has no 'url', so the built-in attacker would play it"
            elif spec.over_refusal is not None:
                why = "the built-in attacker plays the over-refusal probes"
            else:
                why = "the built-in attacker runs the protocol probes"
            only_attackers = spec.over_refusal is None and spec.probes is None
            raise BuiltinAttackerMissingError(
                f"{why}, but this orchestrator has none: set ARENA_ATTACKER_URL on the orchestrator"
                + (" or give every attacker a url" if only_attackers else "")
            )
        campaign = Campaign(
            id=new_campaign_id(), spec=spec, created_at=datetime.now(UTC), total=spec.match_count
        )
        # Each match gets a trace of its own; the campaign's span is the link between them.
        with tracer().start_as_current_span(
            "arena.campaign",
            attributes={attrs.ARENA_CAMPAIGN_ID: campaign.id, attrs.ARENA_CAMPAIGN_MATCHES: campaign.total},
        ):
            # Only the W3C trace context: a client's baggage must not be copied into every match.
            carrier = dict(trace_context or {})
            TraceContextTextMapPropagator().inject(carrier)
            if not await self.store.create(campaign, max_active=self._max_active):
                raise TooManyCampaignsError(
                    f"this orchestrator already holds {self._max_active} unfinished campaigns, its limit "
                    "(ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS); submit again once one has finished "
                    f"or been canceled (retry after {RETRY_AFTER_S} s)",
                    retry_after_s=RETRY_AFTER_S,
                )
            await self.enqueue_remaining(campaign, carrier)
        return await self.progress(campaign.id)

    async def enqueue_remaining(
        self, campaign: Campaign, trace_context: dict[str, str] | None = None
    ) -> bool:
        """Queue the matches not queued yet; False when another replica holds the lock."""
        # A fresh owner per call: a submit and this replica's own maintenance pass must
        # exclude each other too.
        owner = uuid.uuid4().hex
        if not await self.store.lock_enqueue(campaign.id, owner, ENQUEUE_LOCK_S):
            return False
        try:
            start = await self.store.enqueue_progress(campaign.id) or 0
            while start < campaign.total:
                end = min(campaign.total, start + ENQUEUE_BATCH)
                await self.queue.enqueue(
                    [
                        QueuedMatch(campaign.id, index, dict(trace_context or {}))
                        for index in range(start, end)
                    ]
                )
                await self.store.set_enqueue_progress(campaign.id, end)
                if not await self.store.lock_enqueue(campaign.id, owner, ENQUEUE_LOCK_S):
                    return False
                start = end
        finally:
            await self.store.unlock_enqueue(campaign.id, owner)
        return True

    async def resume_queueing(self) -> int:
        """Finish queueing campaigns whose submitter died half-way; return how many were resumed.

        Canceled and budget-exhausted campaigns are resumed too: workers account for
        every match (as canceled or skipped), so each must be queued.
        """
        resumed = 0
        for campaign_id in await self.store.unfinished_ids():
            try:
                queued = await self.store.enqueue_progress(campaign_id)
                campaign = await self.store.get(campaign_id)
                if campaign is None or queued is None or queued >= campaign.total:
                    continue
                if await self.enqueue_remaining(campaign):
                    resumed += 1
            except StateUnavailableError:
                raise
            except Exception:
                # One unreadable campaign (e.g. written by a newer version) must not block the rest.
                logger.exception("cannot resume queueing campaign %s", campaign_id)
        return resumed

    async def campaign(self, campaign_id: str) -> Campaign:
        """The campaign; :class:`NotFoundError` when unknown."""
        campaign = await self.store.get(campaign_id)
        if campaign is None:
            raise NotFoundError(f"no campaign '{campaign_id}' (unknown, or expired)")
        return campaign

    async def progress(self, campaign_id: str) -> CampaignProgress:
        """The campaign's progress now."""
        campaign = await self.campaign(campaign_id)
        state = await self.store.state(campaign_id)
        if state is None:
            raise NotFoundError(f"no campaign '{campaign_id}' (unknown, or expired)")
        return build_progress(campaign, state)

    async def list_campaigns(self, limit: int = 50) -> list[CampaignProgress]:
        """The newest campaigns' progress."""
        found = []
        for campaign_id in await self.store.list_ids(limit):
            try:
                found.append(await self.progress(campaign_id))
            except NotFoundError:
                continue  # expired between the listing and the read
        return found

    async def cancel(self, campaign_id: str) -> CampaignProgress:
        """Cancel: queued matches are not played, running ones are stopped.

        A final campaign stays as it is (its status is returned unchanged).
        """
        if await self.store.cancel(campaign_id) is None:
            raise NotFoundError(f"no campaign '{campaign_id}' (unknown, or expired)")
        return await self.progress(campaign_id)

    async def matches(self, campaign_id: str, offset: int, limit: int) -> tuple[list[MatchSummary], int]:
        """Recorded matches by index."""
        await self.campaign(campaign_id)
        return await self.store.summaries(campaign_id, offset, limit)

    async def match(self, match_id: str) -> MatchRecord:
        """One match's record; :class:`NotFoundError` when it has none (yet)."""
        campaign_id = campaign_id_of(match_id)
        record = await self.store.get_record(campaign_id, match_id) if campaign_id else None
        if record is None:
            raise NotFoundError(f"no finished match '{match_id}' (unknown, still running, or expired)")
        url = jaeger_trace_url(self._jaeger_url, record.summary.trace_id)
        if url is not None:
            record = record.model_copy(update={"trace_url": url})
        return record

    async def enter_into_leaderboard(self, campaign_id: str) -> bool:
        """Enter the campaign's contests into the leaderboard if it is settled (every match
        accounted for) and not entered yet; True when this call entered it.

        Idempotent, and safe from any number of replicas at once: the store keeps the first
        entry. Workers call it after each match they record; a read of the leaderboard calls it
        for every listed campaign not entered yet, so a worker that died in between loses
        nothing while the campaign has not expired.
        """
        # The status first: a running campaign (every record but the last) costs one read.
        if await self.store.status(campaign_id) not in FINAL_STATUSES:
            return False
        campaign, state = await self.store.get(campaign_id), await self.store.state(campaign_id)
        if campaign is None or state is None or state.status not in FINAL_STATUSES:
            return False
        if state.done < campaign.total or await self.store.has_leaderboard_entry(campaign.id):
            return False
        finished_at = state.finished_at or datetime.now(UTC)
        entry = entry_for(campaign, await self._all_summaries(campaign.id), finished_at)
        return await self.store.add_leaderboard_entry(entry)

    async def leaderboard(self, *, category: str | None = None, since: datetime | None = None) -> Leaderboard:
        """The ratings over every campaign entered (see :mod:`arena_orchestrator.leaderboard`);
        ``since`` without a time zone is UTC."""
        if since is not None:
            since = since.replace(tzinfo=UTC) if since.tzinfo is None else since.astimezone(UTC)
        entries = await self.store.leaderboard_entries()
        entered = {entry.campaign_id for entry in entries}
        caught_up = False
        for campaign_id in await self.store.list_ids(LEADERBOARD_CATCH_UP):
            if campaign_id in entered:
                continue
            try:
                caught_up |= await self.enter_into_leaderboard(campaign_id)
            except StateUnavailableError:
                raise
            except Exception:
                # One unreadable campaign (e.g. written by a newer version) must not hide the rest.
                logger.exception("cannot enter campaign %s into the leaderboard", campaign_id)
        if caught_up:
            entries = await self.store.leaderboard_entries()
        ids = hashlib.sha256(" ".join(sorted(entry.campaign_id for entry in entries)).encode()).hexdigest()
        key = (ids, category, since)
        fit = self._tables.get(key)
        if fit is None:
            fit = asyncio.ensure_future(self._fit_leaderboard(entries, category=category, since=since))
            fit.add_done_callback(lambda done: self._forget_failed_fit(key, done))
            self._tables[key] = fit
            while len(self._tables) > LEADERBOARD_TABLES:
                self._tables.popitem(last=False)  # a running fit goes on for its own readers
        else:
            self._tables.move_to_end(key)
        # Shielded: a reader that goes away (a closed connection) leaves the fit to the others.
        return await asyncio.shield(fit)

    async def _fit_leaderboard(
        self, entries: list[LeaderboardEntry], *, category: str | None, since: datetime | None
    ) -> Leaderboard:
        if self._fitting is None:
            self._fitting = asyncio.Lock()
        async with self._fitting:
            # Up to seconds of numpy with hundreds of players: a thread, so the worker and the
            # other requests of this process go on meanwhile.
            return await asyncio.to_thread(build_leaderboard, entries, category=category, since=since)

    def _forget_failed_fit(
        self, key: tuple[str, str | None, datetime | None], fit: asyncio.Task[Leaderboard]
    ) -> None:
        if (fit.cancelled() or fit.exception() is not None) and self._tables.get(key) is fit:
            del self._tables[key]

    async def _all_summaries(self, campaign_id: str) -> list[MatchSummary]:
        matches: list[MatchSummary] = []
        offset = 0
        while True:
            page, total = await self.store.summaries(campaign_id, offset, REPORT_PAGE)
            matches.extend(page)
            offset += REPORT_PAGE
            if not page or offset >= total:
                return matches

    async def report(
        self,
        campaign_id: str,
        *,
        fail_above: float | None = None,
        fail_above_categories: Mapping[str, float] | None = None,
    ) -> CampaignReport:
        """Everything the reports show, at this moment."""
        campaign = await self.campaign(campaign_id)
        progress = await self.progress(campaign_id)
        matches = await self._all_summaries(campaign_id)
        return CampaignReport(
            generated_at=datetime.now(UTC),
            campaign=campaign,
            progress=progress,
            matches=matches,
            protocol_probe_runs=await self._protocol_probe_runs(campaign),
            fail_above=fail_above,
            fail_above_categories=dict(fail_above_categories or {}),
            jaeger_url=self._jaeger_url,
        )

    async def _protocol_probe_runs(self, campaign: Campaign) -> list[ProtocolProbeRun]:
        """The recorded protocol-probe runs with their reports (the last indexes of the campaign)."""
        spec = campaign.spec
        first = spec.probe_count + spec.attack_count
        runs = []
        for index, defender in enumerate(spec.protocol_probe_defenders(), start=first):
            record = await self.store.get_record(campaign.id, match_id_for(campaign.id, index))
            if record is None:
                continue
            summary, result = record.summary, record.result
            runs.append(
                ProtocolProbeRun(
                    match_id=summary.match_id,
                    defender=defender.name,
                    disposition=summary.disposition,
                    outcome=summary.outcome if summary.disposition == "played" else None,
                    error=summary.error,
                    error_kind=summary.error_kind,
                    probe_report=result.probe_report if result is not None else None,
                )
            )
        return runs


__all__ = ["DEFAULT_MAX_ACTIVE_CAMPAIGNS", "RETRY_AFTER_S", "CampaignService", "new_campaign_id"]
