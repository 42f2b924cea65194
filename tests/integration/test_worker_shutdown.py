"""Graceful shutdown of the campaign worker (SIGTERM): finish what fits in the grace, hand back the rest.

Real components: :class:`CampaignWorker` and :class:`CampaignService` over :class:`MemoryCampaignStore`
+ :class:`MemoryMatchQueue` and over :class:`RedisCampaignStore` + :class:`RedisMatchQueue` on a real
redis-server (tests taking ``world`` run on both). The only doubles are players (the attacker boundary)
that hang until a gate opens, fail, or defend.

The visibility timeout is long (60 s) unless a test is about renewals: a match another worker plays
within the test's few seconds was handed back, never reclaimed. Waiting is a poll of observable state
with a deadline, never a sleep hoping something happened.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import pytest_asyncio

from arena_core.errors import TargetUnreachableError
from arena_core.match_models import MatchResult
from arena_core.redis_state.keys import MATCH_QUEUE_GROUP
from arena_orchestrator.campaign_models import MatchJob, MatchRecord
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.match_player import error_result
from arena_orchestrator.match_queue import HandBack, MatchQueue, QueuedMatch
from arena_orchestrator.worker import CampaignWorker, WorkerConfig
from support.campaign_backends import Backend, open_backend
from support.worker_runs import Waits, World, one_cell_spec, running, world_fixtures

pytestmark = pytest.mark.asyncio

DEADLINE_S = 10.0
CONFIG = WorkerConfig(
    concurrency=8,
    visibility_timeout_s=60.0,
    match_attempts=3,
    retry_backoff_s=0.0,
    block_ms=100,
    shutdown_grace_s=30.0,
)
CAMPAIGN_TTL_S = 600


# --- worlds (support.worker_runs.World) -----------------------------------------------------------------

world, redis_world = world_fixtures(CONFIG, campaign_ttl_s=CAMPAIGN_TTL_S)


@pytest_asyncio.fixture(params=["memory", "redis"])
async def queue_pair(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[Backend]:
    async with open_backend(request, redis_namespace, campaign_ttl_s=CAMPAIGN_TTL_S) as backend:
        yield backend


# --- campaigns, players, waiting ------------------------------------------------------------------------


def make_spec(**fields: Any) -> CampaignSpec:
    """One cell (playbook vs defender d) unless ``fields`` say otherwise."""
    return one_cell_spec(**{"name": "shutdown", "concurrency": 8, **fields})


def defended(job: MatchJob) -> MatchResult:
    played = {"outcome": "defended", "error": None, "error_kind": None, "duration_ms": 1.0}
    return error_result(job, "", "", datetime.now(UTC)).model_copy(update=played)


Script = Callable[[MatchJob, int], Awaitable[MatchResult]]
"""Plays ``job`` for the n-th time (1-based, counted over every worker)."""


class Player:
    """A :class:`MatchPlayer` running ``script``; counts plays, running plays and cancellations."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.plays: Counter[int] = Counter()
        self.active = 0
        self.canceled: list[int] = []

    async def play(self, job: MatchJob) -> MatchResult:
        self.plays[job.index] += 1
        self.active += 1
        try:
            return await self.script(job, self.plays[job.index])
        except asyncio.CancelledError:
            self.canceled.append(job.index)
            raise
        finally:
            self.active -= 1


def first_play_waits_for(gate: asyncio.Event) -> Script:
    """The first play of each match waits for ``gate`` (forever if it stays shut); later ones defend."""

    async def script(job: MatchJob, n: int) -> MatchResult:
        if n == 1:
            await gate.wait()
        return defended(job)

    return script


WAITS = Waits(DEADLINE_S)
eventually, finished = WAITS.eventually, WAITS.finished


async def holds(value: bool) -> bool:
    return value


async def records(service: CampaignService, campaign_id: str) -> dict[int, MatchRecord]:
    summaries, _ = await service.matches(campaign_id, 0, 1000)
    found: dict[int, MatchRecord] = {}
    for summary in summaries:
        record = await service.match(summary.match_id)
        found[summary.index] = record
    return found


async def shut_down(worker: CampaignWorker, timeout_s: float = DEADLINE_S) -> float:
    """``await worker.shutdown()`` with a deadline; returns how long it took."""
    started = time.monotonic()
    await asyncio.wait_for(worker.shutdown(), timeout_s)
    return time.monotonic() - started


async def pending_of(world: World, consumer: str) -> list[dict[str, Any]]:
    assert world.clients is not None
    entries: list[dict[str, Any]] = await world.clients.commands.xpending_range(
        world.clients.keys.match_queue, MATCH_QUEUE_GROUP, "-", "+", 100, consumer
    )
    return entries


# --- finish within the grace ------------------------------------------------------------------------------


async def test_running_matches_finish_within_the_grace_and_no_new_one_starts(world: World) -> None:
    gate = asyncio.Event()
    player = Player(first_play_waits_for(gate))
    first = await world.service.submit(make_spec(repetitions=2))
    w1 = world.worker(player, "w1")
    async with running(w1) as runs:
        await eventually(lambda: holds(player.active == 2), "w1 plays both matches")
        stopping = asyncio.create_task(w1.shutdown())
        await eventually(lambda: holds(w1.stopping), "w1 is stopping")
        # A match queued now is not w1's to take.
        later = await world.service.submit(make_spec(repetitions=1, name="later"))
        assert not stopping.done(), "shutdown() returned while matches were still running"
        gate.set()
        await asyncio.wait_for(stopping, DEADLINE_S)
        assert runs["w1"].done(), "run() still going after shutdown() returned"
    done = await finished(world.service, first.id)
    assert (done.status, done.counts.defended) == ("completed", 2)
    for record in (await records(world.service, first.id)).values():
        assert (record.worker, record.summary.attempts) == ("w1", 1)
    assert player.plays == Counter({0: 1, 1: 1}) and player.canceled == []
    assert (await world.service.progress(later.id)).done == 0, "a match was started after shutdown()"

    async with running(world.worker(player, "w2", other=True)):
        done_later = await finished(world.service, later.id)
    assert done_later.counts.defended == 1
    assert await world.service.queue.depth() == 0


# --- hand back what does not fit ------------------------------------------------------------------------


async def test_matches_still_running_after_the_grace_are_handed_back_uncharged(world: World) -> None:
    player = Player(first_play_waits_for(asyncio.Event()))  # first plays never end by themselves
    progress = await world.service.submit(make_spec(repetitions=3))
    w1 = world.worker(player, "w1", shutdown_grace_s=0.3)
    w2 = world.worker(player, "w2", other=True)
    async with running(w1):
        await eventually(lambda: holds(player.active == 3), "w1 plays all three matches")
        async with running(w2):
            took = await shut_down(w1)
            # Another worker takes them at once: the visibility timeout (60 s) never comes into it.
            done = await finished(world.service, progress.id)
    assert took < 0.3 + 3.0, f"shutdown() took {took:.1f} s with a 0.3 s grace"
    assert sorted(player.canceled) == [0, 1, 2], "the plays cut short were not cancelled"
    assert (done.status, done.done, done.counts.defended, done.counts.error) == ("completed", 3, 3, 0)
    for index, record in (await records(world.service, progress.id)).items():
        # Recorded once, by the worker it was handed to; the try cut short is not charged.
        assert (record.worker, record.summary.attempts) == ("w2", 1), index
    assert player.plays == Counter({0: 2, 1: 2, 2: 2})
    assert await world.service.queue.depth() == 0


async def test_matches_waiting_for_a_lease_are_handed_back_at_once(world: World) -> None:
    # Campaign concurrency 1: w1 plays one match; the other two wait for the lease. On shutdown
    # those two go back at once, while the one playing keeps its grace and finishes.
    gate = asyncio.Event()
    player = Player(first_play_waits_for(gate))
    progress = await world.service.submit(make_spec(repetitions=3, concurrency=1))
    w1 = world.worker(player, "w1")
    async with running(w1):
        await eventually(lambda: holds(player.active == 1 and w1.active == 3), "w1 holds three, plays one")
        [playing] = [index for index, plays in player.plays.items() if plays]
        stopping = asyncio.create_task(w1.shutdown())
        await eventually(lambda: holds(w1.active == 1), "the waiting matches are handed back")
        assert not stopping.done()
        if world.clients is not None:
            assert len(await pending_of(world, "w1")) == 1
        assert await world.service.queue.depth() == 3
        gate.set()
        await asyncio.wait_for(stopping, DEADLINE_S)
    async with running(world.worker(player, "w2", other=True)):
        done = await finished(world.service, progress.id)
    assert (done.status, done.counts.defended) == ("completed", 3)
    by_index = await records(world.service, progress.id)
    assert {i: (r.worker, r.summary.attempts) for i, r in by_index.items()} == {
        i: ("w1" if i == playing else "w2", 1) for i in range(3)
    }
    assert sum(player.plays.values()) == 3 and player.canceled == []


async def test_a_try_that_failed_before_the_shutdown_stays_charged(world: World) -> None:
    failed = asyncio.Event()

    async def script(job: MatchJob, n: int) -> MatchResult:
        if n == 1:
            failed.set()
            raise TargetUnreachableError("attacker went away")
        return defended(job)

    player = Player(script)
    progress = await world.service.submit(make_spec())
    w1 = world.worker(player, "w1", retry_backoff_s=60.0)  # the retry waits: w1 is stopped meanwhile
    async with running(w1):
        await asyncio.wait_for(failed.wait(), DEADLINE_S)
        await eventually(lambda: holds(player.active == 0), "the failed try is over")
        took = await shut_down(w1)
    assert took < 3.0, f"a match waiting for its next try held shutdown() for {took:.1f} s"
    async with running(world.worker(player, "w2", other=True)):
        done = await finished(world.service, progress.id)
    assert (done.status, done.counts.defended) == ("completed", 1)
    [record] = (await records(world.service, progress.id)).values()
    assert (record.worker, record.summary.attempts) == ("w2", 2), "the failed try was not counted"


async def test_a_match_handed_back_twice_still_ends_after_its_real_failures(world: World) -> None:
    # Two shutdowns cut the match short; a third worker then finds every try failing. Only
    # those failures count: it is recorded as an error after match_attempts tries of its own.
    async def script(job: MatchJob, n: int) -> MatchResult:
        if n <= 2:
            await asyncio.Event().wait()
        raise TargetUnreachableError("attacker went away")

    player = Player(script)
    progress = await world.service.submit(make_spec())
    for n, name in enumerate(("w1", "w2"), start=1):
        worker = world.worker(player, name, other=n == 2, shutdown_grace_s=0.0)
        async with running(worker):

            async def playing(n: int = n) -> bool:
                return player.plays[0] == n and player.active == 1

            await eventually(playing, f"{name} plays")
            await shut_down(worker)
    async with running(world.worker(player, "w3", match_attempts=2)):
        done = await finished(world.service, progress.id)
    [record] = (await records(world.service, progress.id)).values()
    assert (done.counts.error, record.summary.error_kind) == (1, "target_unreachable")
    assert record.summary.attempts == 2
    assert player.plays[0] == 4


# --- what keeps going during the grace --------------------------------------------------------------------


async def test_deliveries_and_leases_stay_renewed_during_the_grace(redis_world: World) -> None:
    # Visibility 1 s: without renewals during the grace, w2 would take the match over after 1 s.
    visibility = 1.0
    gate = asyncio.Event()
    player = Player(first_play_waits_for(gate))
    progress = await redis_world.service.submit(make_spec())
    w1 = redis_world.worker(player, "w1", visibility_timeout_s=visibility)
    w2 = redis_world.worker(player, "w2", other=True, visibility_timeout_s=visibility)
    async with running(w1, w2):
        await eventually(lambda: holds(player.active == 1), "a worker plays the match")
        holder = w1 if w1.active else w2
        stopping = asyncio.create_task(holder.shutdown())
        since = time.monotonic()
        while time.monotonic() - since < 4 * visibility:  # the match outlives the timeout 4 times
            assert player.plays[0] == 1, "the match was taken over while its worker was finishing it"
            for entry in await pending_of(redis_world, holder.name):
                assert entry["time_since_delivered"] < visibility * 1000, entry
            await asyncio.sleep(0.05)
        gate.set()
        await asyncio.wait_for(stopping, DEADLINE_S)
        done = await finished(redis_world.service, progress.id)
    [record] = (await records(redis_world.service, progress.id)).values()
    assert (done.counts.defended, record.worker, record.summary.attempts) == (1, holder.name, 1)
    assert player.plays[0] == 1


async def test_a_campaign_canceled_before_the_shutdown_ends_at_once(world: World) -> None:
    # What `arena campaign run` does on Ctrl-C: cancel the campaign, then stop the worker. The
    # running matches must be recorded canceled now, not after a keep-alive period or the grace.
    player = Player(first_play_waits_for(asyncio.Event()))
    progress = await world.service.submit(make_spec(repetitions=2))
    w1 = world.worker(player, "w1")
    async with running(w1):
        await eventually(lambda: holds(player.active == 2), "w1 plays both matches")
        await world.service.cancel(progress.id)
        took = await shut_down(w1)
    assert took < 3.0, f"shutdown() took {took:.1f} s"
    done = await finished(world.service, progress.id)
    assert (done.status, done.counts.canceled) == ("canceled", 2)
    assert sorted(player.canceled) == [0, 1]


async def test_shutdown_of_a_worker_that_never_ran_returns_at_once(world: World) -> None:
    worker = world.worker(Player(first_play_waits_for(asyncio.Event())), "idle")
    assert await shut_down(worker, timeout_s=1.0) < 1.0
    assert worker.stopping


# --- the queue's hand-back ----------------------------------------------------------------------------------


async def test_hand_back_queues_the_match_again_at_once_and_counts_interrupted_tries(
    queue_pair: Backend,
) -> None:
    queue, other = queue_pair.queue, queue_pair.other_queue
    if queue_pair.clients is not None:
        await other.receive("warm-up", 1, 10)  # the consumer group exists
    context = {"traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}
    await queue.enqueue([QueuedMatch("c-1", 0, context), QueuedMatch("c-1", 1)])
    first = await queue.receive("c1", 2, 100)
    assert [d.match.index for d in first] == [0, 1]
    assert await queue.hand_back("c1", [HandBack(first[0], interrupted=True), HandBack(first[1])]) == 2
    assert await queue.depth() == 2
    again = await other.receive("c2", 2, 100)
    assert [(d.match.index, d.match.handbacks) for d in again] == [(0, 1), (1, 0)]
    assert again[0].match.trace_context == context and again[0].match.campaign_id == "c-1"
    assert {d.delivery_id for d in again}.isdisjoint(d.delivery_id for d in first)
    # Handed back again (interrupted): the count carries on.
    assert await other.hand_back("c2", [HandBack(again[0], interrupted=True)]) == 1
    [third] = await queue.receive("c3", 1, 100)
    assert (third.match.index, third.match.handbacks) == (0, 2)
    # Acknowledged deliveries are not handed back (the record was stored meanwhile).
    await queue.ack([third.delivery_id, again[1].delivery_id])
    assert await queue.hand_back("c3", [HandBack(third, interrupted=True)]) == 0
    assert await queue.depth() == 0
    assert await queue.receive("c4", 1, 50) == []


async def test_hand_back_skips_a_delivery_another_worker_took_over(redis_world: World) -> None:
    queue: MatchQueue = redis_world.service.queue
    other: MatchQueue = redis_world.other.queue
    await queue.enqueue([QueuedMatch("c-1", 0)])
    [delivery] = await queue.receive("slow", 1, 100)
    [taken] = await other.reclaim("rescuer", 0, 1)
    assert taken.delivery_id == delivery.delivery_id
    # The slow worker, stopping, must not queue a second copy of a match now played elsewhere.
    assert await queue.hand_back("slow", [HandBack(delivery, interrupted=True)]) == 0
    assert await queue.depth() == 1
    assert [_text(e["message_id"]) for e in await pending_of(redis_world, "rescuer")] == [
        delivery.delivery_id
    ]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
