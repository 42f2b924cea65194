"""The campaign worker: takes matches from the queue and has attackers play them.

Each orchestrator replica runs one :class:`CampaignWorker`, which plays up to
``concurrency`` matches at once (asyncio tasks). For each delivery:

1. rebuild the job from the campaign spec (the queue carries only an index);
2. skip it if it already has a record (a redelivery), record it ``canceled``
   or ``skipped`` if the campaign was canceled or ran out of token budget;
3. wait for a concurrency lease (campaign-wide and per defender, shared by all
   replicas through the store). A lease this worker releases wakes one of its own
   deliveries waiting for that campaign at once (one lease, one waiter: the longest
   waiting for the same defender, else the longest waiting). Leases released by other
   replicas are found by one asker per campaign and defender on each worker, which asks
   the store again after a wait that grows from :data:`SLOT_WAIT_S` to
   :data:`SLOT_WAIT_MAX_S` (jittered) and, once it has a lease, hands the asking to the
   next waiting delivery, which asks at once; the others only wait to be woken (a
   delivery waiting for its own match, leased by another delivery of it, asks for
   itself). Many
   waiting deliveries used to poll the store four times a second each: the scaling
   benchmark measured that as most of four orchestrators' CPU;
4. play it through the :class:`~arena_orchestrator.match_player.MatchPlayer`,
   retrying infrastructure failures with exponential backoff, then recording
   them as errors (an error is neither a win nor a defence). An attacker that
   refuses the match because it is full (``attacker_busy``,
   ``ARENA_ATTACKER_MAX_ACTIVE_MATCHES``) played nothing: the match is offered
   again after a backoff (jittered, at least :data:`BUSY_MIN_BACKOFF_S`), not
   charged to its attempts, for at most its match timeout in all, and only then
   recorded as an ``attacker_busy`` error;
5. store the record (idempotent), then acknowledge the delivery.

A keep-alive loop renews the deliveries and leases of running matches and
stops matches whose campaign was canceled (the attacker's task is canceled
too). Every half visibility timeout the worker reclaims deliveries that a dead
worker left idle; a maintenance loop finishes queueing campaigns whose
submitter died. Each try counts in the store, across workers: a match whose
workers keep dying, or whose player keeps failing, ends as an error after
``match_attempts``. Two deliveries of one match (a reclaim racing a slow
worker) never play at once: the second waits on the first's lease and then
finds its record.

Stopping (:meth:`CampaignWorker.stop`, :meth:`CampaignWorker.shutdown`): the
worker takes no new match and starts no new try; running matches get
``shutdown_grace_s`` (from the stop) to finish and be recorded, their deliveries
and leases still renewed. A graceful stop (``hand_back=True``: SIGTERM) then
hands every match it cannot finish back to the queue, so another replica takes
it at once: matches it received but never started, matches waiting for a lease
or between tries at once, and those still running when the grace is over. A
try cut short by the shutdown is not charged to the match's attempts (the
queue entry counts it in ``handbacks``); a try that failed before stays
charged. A plain stop leaves those deliveries unacknowledged instead, as a
crashed worker would: another replica (or this one, restarted) takes them over
after the visibility timeout, the interrupted try counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import socket
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import UTC, datetime

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind

from arena_core.errors import ArenaError, AttackerBusyError, StateUnavailableError, is_retryable_kind
from arena_core.match_models import MatchResult
from arena_core.retry import Backoff, retryable_peer_failure
from arena_core.telemetry import attributes as attrs
from arena_core.telemetry.spans import current_trace_id, tracer
from arena_orchestrator.campaign_models import (
    MAX_PLAYER_FIELD,
    Campaign,
    Disposition,
    MatchJob,
    MatchRecord,
    MatchSummary,
)
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_store import SlotRequest
from arena_orchestrator.expansion import defender_caps, job_for
from arena_orchestrator.match_player import MatchPlayer, error_result
from arena_orchestrator.match_queue import Delivery, HandBack

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
BUSY_MIN_BACKOFF_S = 0.25
"""Shortest wait before offering a match again to an attacker that said it was busy."""
_JITTER = random.SystemRandom()
SLOT_WAIT_S = 0.25
"""The first wait of a delivery for a lease before it asks the store again."""
SLOT_WAIT_MAX_S = 2.0
"""The longest wait between asks: how long a lease another replica released may stay unused."""
SLOT_WAIT_IDLE_S = 10.0
"""How long a waiting delivery that is not its worker's asker (see :meth:`CampaignWorker._play_and_record`)
waits before asking anyway: a safety net only, as an asker or a release normally wakes it first."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """How a worker behaves. See ``ARENA_ORCHESTRATOR_*`` in deploy/.env.example."""

    concurrency: int = 16
    visibility_timeout_s: float = 60.0
    match_attempts: int = 3
    retry_backoff_s: float = 2.0
    """The wait before a match's second try; it doubles for each further one (at most
    :data:`MAX_BACKOFF_S`)."""
    block_ms: int = 1000
    shutdown_grace_s: float = 25.0
    """After a stop, how long running matches may still take to finish (``ARENA_SHUTDOWN_GRACE_S``)."""

    @property
    def retry_backoff(self) -> Backoff:
        """The wait between two tries of a match: the same for every worker (no jitter), so
        a try comes back when the logs say it will."""
        return Backoff(self.retry_backoff_s, MAX_BACKOFF_S)

    @property
    def keep_alive_s(self) -> float:
        """How often running deliveries and leases are renewed: well inside the timeout."""
        return max(0.2, self.visibility_timeout_s / 4)


def consumer_name() -> str:
    """A name for this worker in the consumer group: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@dataclass
class _Running:
    delivery: Delivery
    job: MatchJob | None = None
    task: asyncio.Task[None] | None = None
    play: asyncio.Task[MatchResult] | None = None
    canceled: bool = False
    leased: bool = False
    """True once this delivery holds the match's leases: only then does the keep-alive renew them
    (a delivery waiting on another's lease must not keep a dead worker's lease alive)."""
    in_try: bool = False
    """A try is under way (counted by ``mark_running``, not yet failed): cutting it short at
    shutdown must not charge it to the match."""


class _Stopping(Exception):  # noqa: N818 - a signal within the worker, not an error
    """Raised where a match waits (for a lease, between tries) once the worker is stopping."""


class CampaignWorker:
    """Plays queued matches until :meth:`stop` is called."""

    def __init__(
        self,
        service: CampaignService,
        player: MatchPlayer,
        config: WorkerConfig,
        *,
        name: str | None = None,
    ) -> None:
        self._service = service
        self._store = service.store
        self._queue = service.queue
        self._player = player
        self._config = config
        self.name = name or consumer_name()
        self._running: dict[str, _Running] = {}
        self._campaigns: OrderedDict[str, Campaign] = OrderedDict()
        self._slot_waiters: dict[str, deque[tuple[str, asyncio.Future[object]]]] = {}
        """Per campaign, this worker's deliveries waiting for a lease, oldest first: each
        one's defender, and the future that wakes it."""
        self._slot_askers: set[tuple[str, str]] = set()
        """The (campaign, defender) pairs for which one of this worker's waiting deliveries asks the
        store again now and then; the other deliveries waiting for the same pair wait to be woken."""
        self._leases_released = 0
        """Leases this worker released so far (any campaign): a delivery whose ask for a lease
        overlapped a release asks again at once instead of waiting (its answer may predate it)."""
        self._stopping = asyncio.Event()
        self._slots_free = asyncio.Event()
        self._next_reclaim = 0.0
        self._hand_back = False
        self._stop_deadline: float | None = None
        self._wake_keep_alive = asyncio.Event()
        self._drained = asyncio.Event()
        self._started = False
        self._finished = asyncio.Event()

    @property
    def active(self) -> int:
        """Matches held right now."""
        return len(self._running)

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` or :meth:`shutdown` was called."""
        return self._stopping.is_set()

    def stop(self, *, hand_back: bool = False) -> None:
        """Stop taking new matches; :meth:`run` then drains and returns (see the module doc).

        Running matches get ``shutdown_grace_s`` from the first call to finish. With
        ``hand_back`` (a graceful shutdown) the matches this worker cannot finish go back to the
        queue for another worker at once, an interrupted try uncharged; without it they are
        left unacknowledged, as a crashed worker leaves them. A later call may turn
        ``hand_back`` on, never off. Idempotent.
        """
        self._hand_back = self._hand_back or hand_back
        if self._stop_deadline is None:
            self._stop_deadline = time.monotonic() + self._config.shutdown_grace_s
        self._stopping.set()
        self._slots_free.set()
        self._wake_keep_alive.set()  # a pass now: stops the matches of a campaign canceled just before

    async def shutdown(self) -> None:
        """Stop gracefully (``stop(hand_back=True)``) and wait until :meth:`run` has drained.

        Returns at once when the worker never ran. Takes ``shutdown_grace_s`` at most, plus
        the time to hand matches back and to cancel the attackers' tasks of those cut short.
        """
        self.stop(hand_back=True)
        if self._started:
            await self._finished.wait()

    async def run(self) -> None:
        """Take and play matches until stopped; then drain (see the module doc)."""
        self._started = True
        keep_alive = asyncio.create_task(self._keep_alive_loop(), name="keep-alive")
        maintenance = asyncio.create_task(self._maintenance_loop(), name="maintenance")
        try:
            while not self._stopping.is_set():
                free = self._config.concurrency - len(self._running)
                if free <= 0:
                    self._slots_free.clear()
                    await self._slots_free.wait()
                    continue
                try:
                    deliveries = await self._take(free)
                except StateUnavailableError as exc:
                    logger.warning("match queue unavailable: %s", exc)
                    await self._pause(1.0)
                    continue
                if self._stopping.is_set():
                    # Received while stopping (the read was already waiting): not started.
                    await self._give_back([HandBack(d) for d in deliveries])
                    break
                for delivery in deliveries:
                    self._start(delivery)
        finally:
            self.stop()  # also when run() itself was cancelled: the same grace applies
            try:
                await _cancel_loops({maintenance})
                # Running matches keep their deliveries and leases renewed while they finish.
                await self._drain()
            finally:
                self._drained.set()
                await _cancel_loops({keep_alive})
                self._finished.set()

    async def _take(self, free: int) -> list[Delivery]:
        # Reclaiming happens here, not in a loop of its own, so that the worker never
        # holds more than ``concurrency`` deliveries.
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_reclaim:
            self._next_reclaim = loop.time() + self._reclaim_interval_s
            min_idle_ms = int(self._config.visibility_timeout_s * 1000)
            reclaimed = await self._queue.reclaim(self.name, min_idle_ms, free)
            for delivery in reclaimed:
                logger.info("took over match %s from a silent worker", delivery.match)
            if reclaimed:
                return reclaimed
        block_ms = min(self._config.block_ms, max(10, int(self._reclaim_interval_s * 1000)))
        return await self._queue.receive(self.name, free, block_ms)

    @property
    def _reclaim_interval_s(self) -> float:
        return max(0.5, self._config.visibility_timeout_s / 2)

    def _start(self, delivery: Delivery) -> None:
        if delivery.delivery_id in self._running:
            return
        running = _Running(delivery)
        self._running[delivery.delivery_id] = running
        running.task = asyncio.create_task(self._handle(running), name=f"match-{delivery.delivery_id}")

    async def _drain(self) -> None:
        """Give running matches the rest of the grace; hand back (or abandon) what is left."""
        held = [r for r in self._running.values() if r.task is not None]
        if not held:
            return
        deadline = self._stop_deadline if self._stop_deadline is not None else time.monotonic()
        remaining = max(0.0, deadline - time.monotonic())
        logger.info("stopping: %d match(es) running get %.1f s to finish", len(held), remaining)
        _, pending = await asyncio.wait([r.task for r in held if r.task is not None], timeout=remaining)
        if not pending:
            return
        cut = [r for r in held if r.task in pending]
        # Handed back before the plays are cancelled: cancelling waits for the attackers to
        # confirm, and the process may be killed meanwhile. A delivery recorded in between is
        # harmless (the copy finds its record); one handed back waits on this worker's lease
        # until the cancelled play releases it, so a match never plays twice at once.
        await self._give_back([HandBack(r.delivery, interrupted=r.in_try) for r in cut])
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _give_back(self, items: list[HandBack]) -> None:
        """Hand deliveries back to the queue when stopping gracefully; else leave them pending."""
        if not items:
            return
        if not self._hand_back:
            logger.info(
                "stopping: %d match(es) left to be taken over after the visibility timeout", len(items)
            )
            return
        try:
            handed = await self._queue.hand_back(self.name, items)
        except StateUnavailableError as exc:
            # Left pending: another worker takes them over after the visibility timeout.
            logger.warning("could not hand %d match(es) back: %s", len(items), exc)
            return
        except Exception:
            logger.exception("could not hand %d match(es) back", len(items))
            return
        logger.info("stopping: handed %d match(es) back to the queue for another worker", handed)

    async def _wait_for_slot(self, job: MatchJob, seconds: float) -> None:
        """Wait ``seconds`` at most; less when this worker releases a lease of the job's campaign
        and wakes this delivery (see :meth:`_wake_slot_waiter`), or when the worker stops."""
        freed: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        waiter = (job.cell.defender, freed)
        waiters = self._slot_waiters.setdefault(job.campaign_id, deque())
        waiters.append(waiter)
        stopping: asyncio.Future[object] = asyncio.ensure_future(self._stopping.wait())
        either: set[asyncio.Future[object]] = {stopping, freed}
        try:
            await asyncio.wait(either, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            freed.cancel()
            with contextlib.suppress(ValueError):
                waiters.remove(waiter)
            if not waiters and self._slot_waiters.get(job.campaign_id) is waiters:
                del self._slot_waiters[job.campaign_id]

    def _lease_released(self, job: MatchJob) -> None:
        """The job's lease was just released here: wake one waiting delivery to take it."""
        self._leases_released += 1
        self._wake_slot_waiter(job)

    def _wake_slot_waiter(self, job: MatchJob) -> None:
        """Wake one of this worker's deliveries waiting for a lease of the job's campaign (one lease
        fits one match): the longest waiting for the same defender, which can use both the
        campaign's slot and the defender's; else the longest waiting of the campaign, which can use
        the campaign's slot if its own defender has room."""
        waiters = self._slot_waiters.get(job.campaign_id)
        if not waiters:
            return
        chosen = next((w for w in waiters if w[0] == job.cell.defender and not w[1].done()), None)
        if chosen is None:
            chosen = next((w for w in waiters if not w[1].done()), None)
        if chosen is not None:
            waiters.remove(chosen)
            chosen[1].set_result(None)

    def _hand_asking_over(self, job: MatchJob) -> None:
        """The delivery asking for leases of the job's campaign and defender stops asking: wake the
        next waiting one, which asks at once (another lease may be free too) and then in its place."""
        self._slot_askers.discard((job.campaign_id, job.cell.defender))
        self._wake_slot_waiter(job)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    async def _campaign(self, campaign_id: str) -> Campaign | None:
        campaign = self._campaigns.get(campaign_id)
        if campaign is None:
            campaign = await self._store.get(campaign_id)
            if campaign is None:
                return None
            self._campaigns[campaign_id] = campaign
            while len(self._campaigns) > 256:
                self._campaigns.popitem(last=False)
        return campaign

    async def _handle(self, running: _Running) -> None:
        delivery = running.delivery
        try:
            campaign = await self._campaign(delivery.match.campaign_id)
            if campaign is None or not 0 <= delivery.match.index < campaign.total:
                # Expired or unknown: nothing can ever be recorded for it.
                await self._queue.ack([delivery.delivery_id])
                return
            job = job_for(campaign, delivery.match.index, delivery.match.trace_context)
            running.job = job
            if not await self._store.has_record(job.campaign_id, job.match_id):
                await self._play_and_record(campaign, job, running)
            await self._queue.ack([delivery.delivery_id])
        except _Stopping:
            # Waiting for a lease or for the next try when the worker stopped: nothing is cut short,
            # except a try waiting for a busy attacker (``in_try``), which played nothing.
            await self._give_back([HandBack(delivery, interrupted=running.in_try)])
        except asyncio.CancelledError:
            # Still running when the grace ended: already handed back by _drain (or, on a plain
            # stop, left pending and taken over after the visibility timeout).
            raise
        except StateUnavailableError as exc:
            logger.warning("match %s handed back, state unavailable: %s", delivery.delivery_id, exc)
        except Exception:
            # One broken match must not stop the worker. Left unacknowledged, it is tried
            # again after the visibility timeout; its attempt count ends the loop.
            logger.exception("match %s failed unexpectedly; it will be retried", delivery.delivery_id)
        finally:
            self._running.pop(delivery.delivery_id, None)
            self._slots_free.set()

    async def _play_and_record(self, campaign: Campaign, job: MatchJob, running: _Running) -> None:
        spec = campaign.spec
        slots = SlotRequest(
            campaign_cap=spec.concurrency,
            defender=job.cell.defender,
            defender_cap=defender_caps(spec).get(job.cell.defender),
        )
        wait_s = SLOT_WAIT_S
        asker = (job.campaign_id, job.cell.defender)
        asking = False
        try:
            while True:
                released_before = self._leases_released
                status = await self._store.status(job.campaign_id)
                if status is None:
                    return
                if status in ("canceled", "budget_exhausted"):
                    disposition: Disposition = "canceled" if status == "canceled" else "skipped"
                    await self._record(campaign, job, None, disposition, attempts=0)
                    return
                grant = await self._store.acquire_slots(job, slots, self._config.visibility_timeout_s)
                if grant == "taken":
                    running.leased = True
                    if not await self._store.has_record(job.campaign_id, job.match_id):
                        break
                    # Another worker recorded it while this one waited.
                    await self._store.release_slots(job)
                    self._lease_released(job)
                    running.leased = False
                    return
                if grant == "held" and await self._store.has_record(job.campaign_id, job.match_id):
                    return
                # "full": no room yet. "held": another delivery of this match is being played;
                # wait for its record (or for its lease to lapse if its worker died).
                # Only a delivery told "full" asks for room on behalf of the others; one that waits
                # for its own match ("held") asks for itself.
                if grant == "full" and not asking and asker not in self._slot_askers:
                    self._slot_askers.add(asker)
                    asking = True
                elif grant == "held" and asking:
                    self._hand_asking_over(job)
                    asking = False
                # A lease released here while this one asked woke no one for it: ask again at once.
                if self._leases_released == released_before:
                    if asking or grant == "held":
                        await self._wait_for_slot(job, wait_s * _JITTER.uniform(0.5, 1.0))
                        wait_s = min(SLOT_WAIT_MAX_S, wait_s * 2)
                    else:
                        await self._wait_for_slot(job, SLOT_WAIT_IDLE_S)
                if self._stopping.is_set():
                    raise _Stopping
        finally:
            if asking:
                self._hand_asking_over(job)
        try:
            if self._stopping.is_set():
                raise _Stopping  # no new match starts once stopping (the lease goes back below)
            with _match_span(job) as span:
                result, attempts = await self._play_with_retries(job, running)
                outcome = result.outcome if result else "canceled"
                span.set_attributes({attrs.ARENA_OUTCOME: outcome, attrs.ARENA_ATTEMPT: attempts})
                if result is not None and result.error_kind:
                    span.set_attribute(attrs.ARENA_ERROR_KIND, result.error_kind)
                if result is None:
                    await self._record(campaign, job, None, "canceled", attempts=attempts)
                else:
                    await self._record(campaign, job, result, "played", attempts=attempts)
        finally:
            with contextlib.suppress(StateUnavailableError):
                await self._store.release_slots(job)
            self._lease_released(job)

    async def _play_with_retries(self, job: MatchJob, running: _Running) -> tuple[MatchResult | None, int]:
        """Play until a result worth keeping; None when the campaign was canceled meanwhile, or is gone."""
        info = json.dumps({"worker": self.name, "attacker": job.attacker_url, "since": _now().isoformat()})
        limit = self._config.match_attempts
        # Tries that stopping workers cut short and handed back are not the match's fault.
        uncharged = running.delivery.match.handbacks
        attempt = 0
        while True:
            if running.canceled:
                return None, attempt
            if self._stopping.is_set():
                raise _Stopping
            running.in_try = True
            # Counted in the store across workers: a match whose worker keeps dying ends too.
            attempt = await self._store.mark_running(job, info)
            if attempt < 1:
                # The campaign's state is gone (expired or deleted): nothing is left to play for.
                return None, 0
            attempt = max(1, attempt - uncharged)
            started = _now()
            if attempt > limit:
                message = (
                    f"gave up after {limit} attempt(s): the workers playing it stopped or crashed "
                    "before it finished"
                )
                return error_result(job, "attempts_exhausted", message, started), attempt
            result, retryable = await self._play_admitted(job, running, started)
            if result is None:
                return None, attempt
            if not retryable or attempt >= limit:
                return result, attempt
            running.in_try = False  # this try failed: it stays charged
            delay = self._config.retry_backoff.delay(attempt)
            logger.info(
                "match %s: %s (%s); try %d of %d failed, next in %.1f s",
                job.match_id,
                result.error_kind,
                result.error,
                attempt,
                limit,
                delay,
            )
            await self._pause(delay)

    async def _play_admitted(
        self, job: MatchJob, running: _Running, started: datetime
    ) -> tuple[MatchResult | None, bool]:
        """:meth:`_play_once`, offered again after a backoff while the attacker answers that it is
        busy. Those refusals played nothing, so they stay within one try (one attempt); after the
        match timeout in all the refusal is the result (an ``attacker_busy`` error, not retried)."""
        loop = asyncio.get_running_loop()
        give_up_at = loop.time() + job.timeout_s
        refusals = 0
        while True:
            result, retryable = await self._play_once(job, running, started)
            if result is None or result.error_kind != AttackerBusyError.kind:
                return result, retryable
            refusals += 1
            delay = _busy_backoff(self._config.retry_backoff_s, refusals)
            if loop.time() + delay > give_up_at:
                message = f"{result.error} (still refused after {job.timeout_s:g} s, the match timeout)"
                return result.model_copy(update={"error": message}), False
            logger.info(
                "match %s: the attacker is busy (%s); offered again in %.2f s",
                job.match_id,
                result.error,
                delay,
            )
            # In steps of the keep-alive period: a cancel it notices ends the wait.
            until = loop.time() + delay
            while not running.canceled and not self._stopping.is_set() and loop.time() < until:
                await self._pause(min(self._config.keep_alive_s, until - loop.time()))
            if running.canceled:
                return None, False
            if self._stopping.is_set():
                raise _Stopping

    async def _play_once(
        self, job: MatchJob, running: _Running, started: datetime
    ) -> tuple[MatchResult | None, bool]:
        """One try: ``(result, worth retrying)``; ``(None, False)`` when canceled meanwhile."""
        running.play = asyncio.create_task(self._player.play(job), name=f"play-{job.match_id}")
        if running.canceled:  # the cancel may have landed while mark_running was awaited
            running.play.cancel()
        timeout = asyncio.timeout(job.timeout_s)
        try:
            async with timeout:
                result = await running.play
            # Reported: the attacker played and says what failed (at the target, its model, its
            # state); only a transient failure is worth another try, never the target's own fault.
            return result, result.outcome == "error" and is_retryable_kind(result.error_kind)
        except asyncio.CancelledError:
            if running.canceled:
                return None, False
            raise
        except TimeoutError:
            if not timeout.expired():
                raise
            message = f"the match did not finish within {job.timeout_s:g} s (match_timeout_s)"
            return error_result(job, "match_timeout", message, started), False
        except ArenaError as exc:
            # Raised, not reported: the attacker itself (or the state) failed, not the match.
            if running.canceled:
                return None, False
            return error_result(job, exc.kind, exc.message, started), retryable_peer_failure(exc)
        except Exception as exc:
            if running.canceled:
                return None, False
            if timeout.expired():
                message = f"the match did not finish within {job.timeout_s:g} s (match_timeout_s)"
                return error_result(job, "match_timeout", message, started), False
            logger.exception("match %s: the player failed", job.match_id)
            return error_result(job, "internal_error", f"{type(exc).__name__}: {exc}", started), False
        finally:
            running.play = None

    async def _record(
        self,
        campaign: Campaign,
        job: MatchJob,
        result: MatchResult | None,
        disposition: Disposition,
        *,
        attempts: int,
    ) -> None:
        usage = (result.attacker_usage + result.defender_usage) if result else None
        summary = MatchSummary(
            match_id=job.match_id,
            index=job.index,
            repetition=job.repetition,
            cell=job.cell,
            disposition=disposition,
            outcome=result.outcome if result else None,
            turns_used=result.turns_used if result else 0,
            duration_ms=result.duration_ms if result else 0.0,
            tokens=usage.total_tokens if usage else 0,
            error=result.error if result else None,
            error_kind=result.error_kind if result else None,
            attempts=attempts,
            trace_id=current_trace_id(),
            finished_at=_now(),
            # Who played, for the leaderboard (arena_orchestrator.ratings): the attacker's model
            # and the defender's built-in profile, as the result says.
            attacker_model=(
                result.attacker_model[:MAX_PLAYER_FIELD] if result and result.attacker_model else None
            ),
            defender_profile=(
                result.defender_profile[:MAX_PLAYER_FIELD] if result and result.defender_profile else None
            ),
        )
        record = MatchRecord(
            campaign_id=job.campaign_id,
            summary=summary,
            result=result,
            attacker_url=job.attacker_url,
            worker=self.name,
        )
        written = await self._store.record(record, max_tokens=campaign.spec.budget.max_tokens)
        if not written:
            logger.info("match %s already had a record; this one was discarded", job.match_id)
            return
        try:
            # The last record settles the campaign: enter it into the leaderboard now, before
            # the campaign can expire (a leaderboard read catches up on any left out here).
            await self._service.enter_into_leaderboard(job.campaign_id)
        except StateUnavailableError as exc:
            logger.warning("campaign %s: not entered into the leaderboard yet: %s", job.campaign_id, exc)
        except Exception:
            logger.exception("campaign %s: entering it into the leaderboard failed", job.campaign_id)

    async def _keep_alive_loop(self) -> None:
        # Runs until the worker has drained: matches finishing during the grace stay renewed.
        while not self._drained.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake_keep_alive.wait(), self._config.keep_alive_s)
            self._wake_keep_alive.clear()
            if self._drained.is_set():
                return
            try:
                await self._keep_alive()
            except StateUnavailableError as exc:
                logger.warning("keep-alive failed: %s", exc)
            except Exception:
                logger.exception("keep-alive failed")

    async def _keep_alive(self) -> None:
        held = list(self._running.values())
        if not held:
            return
        await self._queue.keep_alive(self.name, [r.delivery.delivery_id for r in held])
        statuses: dict[str, str | None] = {}
        for running in held:
            job = running.job
            if job is None:
                continue
            if running.leased:
                await self._store.renew_slots(job, self._config.visibility_timeout_s)
            if job.campaign_id not in statuses:
                statuses[job.campaign_id] = await self._store.status(job.campaign_id)
            if statuses[job.campaign_id] == "canceled":
                running.canceled = True
                # Every pass, until the play is over: a cancel must not be lost to a race.
                if running.play is not None and not running.play.done():
                    running.play.cancel()

    async def _maintenance_loop(self) -> None:
        interval = max(0.5, self._config.visibility_timeout_s / 2)
        while not self._stopping.is_set():
            try:
                await self._service.resume_queueing()
                await self._queue.prune_consumers()
            except StateUnavailableError as exc:
                logger.warning("maintenance pass failed: %s", exc)
            except Exception:
                logger.exception("maintenance pass failed")
            await self._pause(interval)


def _match_span(job: MatchJob) -> contextlib.AbstractContextManager[Span]:
    """The root span of a match's trace, linked to its campaign's span.

    Everything the match causes (the attacker's task, the defender's turns, model calls)
    joins this trace through ``traceparent``; the campaign's context came through the queue.
    """
    campaign = trace.get_current_span(propagate.extract(job.trace_context)).get_span_context()
    return tracer().start_as_current_span(
        "arena.match",
        context=otel_context.Context(),
        kind=SpanKind.INTERNAL,
        links=[Link(campaign)] if campaign.is_valid else [],
        attributes={
            attrs.ARENA_CAMPAIGN_ID: job.campaign_id,
            attrs.ARENA_MATCH_ID: job.match_id,
            attrs.ARENA_ATTACKER: job.cell.attacker,
            attrs.ARENA_DEFENDER: job.cell.defender,
            attrs.ARENA_OBJECTIVE: job.cell.objective,
            attrs.ARENA_STRATEGY: job.request.strategy,
            attrs.ARENA_JUDGE: job.request.judge,
        },
    )


async def _cancel_loops(loops: set[asyncio.Task[None]]) -> None:
    """Cancel background loops and wait for them to end.

    The loops end by themselves once stopping; cancelling hurries a pass along. (Python 3.11
    can lose a cancel inside redis-py's wait_for: hence the retries.)
    """
    pending = loops
    for _ in range(50):
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.2)
        if not pending:
            return


def _now() -> datetime:
    return datetime.now(UTC)


def _busy_backoff(base_s: float, refusals: int) -> float:
    """The wait after the ``refusals``-th busy answer: exponential from ``base_s`` (at least
    BUSY_MIN_BACKOFF_S, at most MAX_BACKOFF_S), jittered down by up to half so that workers
    refused together do not come back together."""
    backoff = Backoff(max(BUSY_MIN_BACKOFF_S, base_s), MAX_BACKOFF_S, jitter=True, rng=_JITTER)
    return backoff.delay(refusals)


__all__ = ["BUSY_MIN_BACKOFF_S", "MAX_BACKOFF_S", "CampaignWorker", "WorkerConfig", "consumer_name"]
