"""The campaign worker under faults: broken and hung players, cancels, duplicate deliveries, dying workers.

Real components throughout: :class:`CampaignWorker` and :class:`CampaignService` over
:class:`MemoryCampaignStore` + :class:`MemoryMatchQueue` and over :class:`RedisCampaignStore` +
:class:`RedisMatchQueue` on a real redis-server (tests taking ``world`` run on both). The only
doubles sit at the attacker boundary: small fake players (the :class:`MatchPlayer` protocol) that
raise, hang or count concurrent plays, and, for ``play_remote_match``, a stub A2A attacker built
with a2a-sdk and served over a real loopback socket (streaming needs one: httpx's ASGI transport
buffers whole responses) that never finishes a match and answers ``CancelTask`` with the JSON-RPC
error ``TaskNotCancelable``.

Timeouts are short (visibility 1 s, so keep-alive every 0.25 s); waiting is always a poll with a
deadline or an event, never a sleep that hopes something happened meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

import pytest
import pytest_asyncio
import redis.asyncio
from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import CancelTaskRequest, Task
from a2a.utils.errors import TaskNotCancelableError, UnsupportedOperationError
from starlette.applications import Starlette

from arena_attacker.app import attacker_card_spec
from arena_core.a2a.agent_app import build_agent_card
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.errors import TargetUnreachableError
from arena_core.llm.usage import TokenUsage
from arena_core.match_models import MatchRequest, MatchResult, Outcome
from arena_core.redis_state import RedisClients
from arena_core.redis_state.keys import MATCH_QUEUE_GROUP, RedisKeys
from arena_orchestrator import worker as worker_module
from arena_orchestrator.app import create_orchestrator_app
from arena_orchestrator.campaign_models import Campaign, CampaignProgress, MatchJob, MatchSummary
from arena_orchestrator.campaign_service import CampaignService, new_campaign_id
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import CampaignStore, SlotRequest
from arena_orchestrator.expansion import job_for
from arena_orchestrator.match_player import RemoteAttackerPlayer, error_result
from arena_orchestrator.match_queue import MatchQueue, QueuedMatch
from arena_orchestrator.redis_match_queue import RedisMatchQueue
from arena_orchestrator.worker import CampaignWorker, WorkerConfig
from conftest import InProcessArena
from support.redis_server import RedisServer
from support.uvicorn_server import bound_socket, serve_app, socket_url
from support.worker_runs import Waits, World, ended, one_cell_spec, running, world_fixtures

pytestmark = pytest.mark.asyncio

VISIBILITY_S = 1.0
DEADLINE_S = 8.0
CONFIG = WorkerConfig(
    concurrency=8,
    visibility_timeout_s=VISIBILITY_S,
    match_attempts=3,
    retry_backoff_s=0.0,
    block_ms=100,
    shutdown_grace_s=0.2,
)
KEEP_ALIVE_S = CONFIG.keep_alive_s
CAMPAIGN_TTL_S = 600
MAX_MATCHES = 100_000
REMOTE_TIMEOUT_S = 2.0
"""Match timeout against the stub attacker: long enough for its first event to reach the client
even on a loaded machine (a cancel before that, with no task id yet, cannot reach the attacker)."""


# --- worlds: a service (and a second replica's) over one backend (support.worker_runs.World) ------------

world, redis_world = world_fixtures(CONFIG, campaign_ttl_s=CAMPAIGN_TTL_S, max_matches=MAX_MATCHES)


# --- campaigns, results, waiting ----------------------------------------------------------------------


def make_spec(**fields: Any) -> CampaignSpec:
    """One cell (playbook vs defender d) unless ``fields`` say otherwise."""
    return one_cell_spec(**{"name": "faults", "concurrency": 8, **fields})


WAITS = Waits(DEADLINE_S)
eventually, wait_event, finished = WAITS.eventually, WAITS.wait_event, WAITS.finished


def result_for(job: MatchJob, outcome: Outcome = "defended", *, tokens: int = 0) -> MatchResult:
    """A result for ``job`` built like the worker's own (:func:`error_result`), played to ``outcome``."""
    usage = TokenUsage(prompt_tokens=tokens, completion_tokens=0, calls=1 if tokens else 0)
    played = {
        "outcome": outcome,
        "error": None,
        "error_kind": None,
        "attacker_usage": usage,
        "duration_ms": 1.0,
    }
    return error_result(job, "", "", datetime.now(UTC)).model_copy(update=played)


async def summaries(service: CampaignService, campaign_id: str) -> dict[int, MatchSummary]:
    found, _ = await service.matches(campaign_id, 0, 1000)
    return {s.index: s for s in found}


# --- fake players (the attacker boundary) -------------------------------------------------------------

Script = Callable[[MatchJob], Awaitable[MatchResult]]


async def defend(job: MatchJob) -> MatchResult:
    return result_for(job)


class FakePlayer:
    """Plays each match with ``script``; counts plays, concurrent plays and cancellations."""

    def __init__(self, script: Script = defend) -> None:
        self.script = script
        self.plays: Counter[int] = Counter()
        self.active = 0
        self.peak = 0
        self.active_by_match: Counter[int] = Counter()
        self.peak_same_match = 0
        self.canceled: list[int] = []

    async def play(self, job: MatchJob) -> MatchResult:
        self.plays[job.index] += 1
        self.active += 1
        self.active_by_match[job.index] += 1
        self.peak = max(self.peak, self.active)
        self.peak_same_match = max(self.peak_same_match, self.active_by_match[job.index])
        try:
            return await self.script(job)
        except asyncio.CancelledError:
            self.canceled.append(job.index)
            raise
        finally:
            self.active -= 1
            self.active_by_match[job.index] -= 1


def hang_until(gate: asyncio.Event) -> Script:
    async def script(job: MatchJob) -> MatchResult:
        await gate.wait()
        return result_for(job)

    return script


async def hang(job: MatchJob) -> MatchResult:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


# --- state wrappers that let a test step in between two store calls ------------------------------------


class StoreProxy:
    """Forwards every call to a real store; subclasses intercept one or two methods."""

    def __init__(self, inner: CampaignStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def as_store(self) -> CampaignStore:
        return cast(CampaignStore, self)


class GatedMarkRunning(StoreProxy):
    """``mark_running`` waits at a gate; notes when a status read returns ``canceled``."""

    def __init__(self, inner: CampaignStore) -> None:
        super().__init__(inner)
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.saw_cancel = asyncio.Event()

    async def mark_running(self, job: MatchJob, info: str) -> int:
        self.entered.set()
        await self.gate.wait()
        attempt: int = await self.inner.mark_running(job, info)
        return attempt

    async def status(self, campaign_id: str) -> Any:
        status = await self.inner.status(campaign_id)
        if status == "canceled":
            self.saw_cancel.set()
        return status


class BrokenRenewals(StoreProxy):
    """``renew_slots`` fails unexpectedly the first ``failures`` times (a bug, not an outage)."""

    def __init__(self, inner: CampaignStore, failures: int) -> None:
        super().__init__(inner)
        self.failures = failures
        self.raised = 0
        self.done_failing = asyncio.Event()

    async def renew_slots(self, job: MatchJob, lease_s: float) -> None:
        if self.raised < self.failures:
            self.raised += 1
            if self.raised == self.failures:
                self.done_failing.set()
            raise RuntimeError("unexpected bug in renew_slots")
        await self.inner.renew_slots(job, lease_s)


# --- 1, 2: a player's bug, retries, attempts ---------------------------------------------------------


async def test_a_player_bug_is_recorded_once_as_an_internal_error(world: World) -> None:
    async def script(job: MatchJob) -> MatchResult:
        if job.index == 1:
            raise RuntimeError("bug in a strategy")
        return result_for(job)

    player = FakePlayer(script)
    progress = await world.service.submit(make_spec(repetitions=3))
    async with running(world.worker(player, "w1")):
        # In memory nothing is ever redelivered: the campaign must still finish.
        done = await finished(world.service, progress.id)
    assert (done.status, done.counts.defended, done.counts.error) == ("completed", 2, 1)
    broken = (await summaries(world.service, progress.id))[1]
    assert broken.error_kind == "internal_error"
    assert broken.error is not None and "RuntimeError" in broken.error and "bug in a strategy" in broken.error
    assert broken.attempts == 1
    assert player.plays == Counter({0: 1, 1: 1, 2: 1}), "a match whose player raised was replayed"
    assert await world.service.queue.depth() == 0


async def test_an_infrastructure_failure_is_retried_then_recorded(world: World) -> None:
    async def script(job: MatchJob) -> MatchResult:
        raise TargetUnreachableError("attacker went away")

    player = FakePlayer(script)
    progress = await world.service.submit(make_spec())
    async with running(world.worker(player, "w1", match_attempts=3)):
        done = await finished(world.service, progress.id)
    assert (done.status, done.counts.error) == ("completed", 1)
    summary = (await summaries(world.service, progress.id))[0]
    assert (summary.error_kind, summary.attempts) == ("target_unreachable", 3)
    assert player.plays[0] == 3


async def test_a_match_out_of_attempts_is_recorded_without_being_played(world: World) -> None:
    # Earlier workers took the match and died (their attempts are counted in the store).
    progress = await world.service.submit(make_spec(repetitions=2))
    campaign = await world.service.campaign(progress.id)
    for _ in range(CONFIG.match_attempts):
        await world.service.store.mark_running(job_for(campaign, 0), '{"worker": "dead"}')

    player = FakePlayer()
    async with running(world.worker(player, "w1")):
        done = await finished(world.service, progress.id)
    assert (done.status, done.counts.defended, done.counts.error) == ("completed", 1, 1)
    summary = (await summaries(world.service, progress.id))[0]
    assert summary.error_kind == "attempts_exhausted"
    assert summary.attempts == CONFIG.match_attempts + 1
    assert player.plays[0] == 0, "a match out of attempts was played again"


async def test_a_match_whose_workers_keep_dying_ends_after_match_attempts(redis_world: World) -> None:
    # Each worker takes the match over from the previous one (reclaim) and is stopped mid-play,
    # leaving the delivery unacknowledged. Attempts are counted across workers.
    player = FakePlayer(hang)
    progress = await redis_world.service.submit(make_spec())
    for attempt, name in enumerate(("w1", "w2"), start=1):
        worker = redis_world.worker(player, name, other=attempt == 2, match_attempts=2, shutdown_grace_s=0.0)
        async with running(worker):
            await eventually(
                lambda attempt=attempt: _true(player.plays[0] == attempt), f"{name} plays the match"
            )
    assert (await redis_world.service.progress(progress.id)).done == 0

    async with running(redis_world.worker(player, "w3", match_attempts=2)):
        done = await finished(redis_world.service, progress.id)
    summary = (await summaries(redis_world.service, progress.id))[0]
    assert (summary.error_kind, summary.attempts) == ("attempts_exhausted", 3)
    assert player.plays[0] == 2, "the third worker played a match out of attempts"
    assert (done.status, done.counts.error) == ("completed", 1)
    assert await redis_world.service.queue.depth() == 0


async def test_a_match_of_a_campaign_gone_meanwhile_is_not_tried_again(
    redis_world: World, redis_server: RedisServer, redis_namespace: str
) -> None:
    # The campaign's state expires (or is deleted) while a try fails: there is nothing left to
    # play for, so the match is dropped (its delivery acknowledged), neither retried nor crashing.
    progress = await redis_world.service.submit(make_spec())
    meta = RedisKeys(redis_namespace).campaign(progress.id)

    async def script(job: MatchJob) -> MatchResult:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        try:
            await client.delete(meta)
        finally:
            await client.aclose()
        raise TargetUnreachableError("attacker went away")

    player = FakePlayer(script)
    async with running(redis_world.worker(player, "w1", match_attempts=3)):
        await eventually(lambda: _true(player.plays[0] == 1), "the match is played once")
        await eventually(lambda: _zero(redis_world.service.queue.depth()), "the delivery is acknowledged")
    assert player.plays[0] == 1, "a match of a campaign that is gone was tried again"


async def _zero(depth: Awaitable[int]) -> bool:
    return await depth == 0


async def _true(value: bool) -> bool:
    return value


# --- 3: timeouts and cancels --------------------------------------------------------------------------


async def test_a_hung_match_times_out_once(world: World) -> None:
    player = FakePlayer(hang)
    progress = await world.service.submit(make_spec(match_timeout_s=0.5))
    async with running(world.worker(player, "w1")):
        done = await finished(world.service, progress.id)
    summary = (await summaries(world.service, progress.id))[0]
    assert (summary.error_kind, summary.attempts) == ("match_timeout", 1)
    assert (done.status, done.counts.error) == ("completed", 1)
    assert player.plays[0] == 1 and player.canceled == [0], "the hung play was not stopped"


async def test_a_player_that_fails_while_being_timed_out_is_not_replayed(world: World) -> None:
    # What play_remote_match did when the attacker answered CancelTask with a JSON-RPC error.
    async def script(job: MatchJob) -> MatchResult:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise TaskNotCancelableError("already finished") from None
        raise AssertionError("unreachable")

    player = FakePlayer(script)
    progress = await world.service.submit(make_spec(match_timeout_s=0.5))
    async with running(world.worker(player, "w1", match_attempts=2)):
        done = await finished(world.service, progress.id)
    summary = (await summaries(world.service, progress.id))[0]
    # Recorded once, as an error (today "internal_error", although the match timeout expired).
    assert summary.outcome == "error" and summary.attempts == 1
    assert (done.status, done.counts.error) == ("completed", 1)
    assert player.plays[0] == 1


async def test_a_cancel_stops_running_matches_and_accounts_for_the_rest(world: World) -> None:
    player = FakePlayer(hang)
    progress = await world.service.submit(make_spec(repetitions=5, concurrency=2))
    async with running(world.worker(player, "w1")):
        await eventually(lambda: _true(player.active == 2), "two matches play")
        canceled_at = time.monotonic()
        assert (await world.service.cancel(progress.id)).status == "canceled"
        done = await finished(world.service, progress.id, timeout_s=KEEP_ALIVE_S + 2.0)
        elapsed = time.monotonic() - canceled_at
    assert (done.status, done.counts.canceled, done.done) == ("canceled", 5, 5)
    assert sorted(player.canceled) == sorted(player.plays), "a running match was not stopped"
    assert elapsed < KEEP_ALIVE_S + 1.0, f"the cancel took {elapsed:.2f} s"


async def test_a_cancel_landing_while_mark_running_is_awaited_is_not_lost(world: World) -> None:
    store = GatedMarkRunning(world.service.store)
    service = world.with_store(store.as_store())
    player = FakePlayer(hang)
    progress = await service.submit(make_spec())
    async with running(CampaignWorker(service, player, CONFIG, name="w1")):
        await wait_event(store.entered, "the worker marks the match running")
        await service.cancel(progress.id)
        # The keep-alive pass sees the cancel while mark_running is still awaited...
        await wait_event(store.saw_cancel, "the keep-alive reads the canceled status")
        store.gate.set()
        released_at = time.monotonic()
        done = await finished(service, progress.id, timeout_s=2.0)
        elapsed = time.monotonic() - released_at
    assert (done.status, done.counts.canceled) == ("canceled", 1)
    summary = (await summaries(service, progress.id))[0]
    assert (summary.disposition, summary.attempts) == ("canceled", 1)
    # ... and the play is canceled as soon as it is created: it never runs.
    assert player.plays[0] == 0, "the play ran although the cancel was already known"
    assert elapsed < KEEP_ALIVE_S + 1.0


# --- 3: play_remote_match against an attacker that refuses CancelTask --------------------------------


class _HangingExecutor(AgentExecutor):
    """Starts every match and never finishes it (until the test releases it)."""

    def __init__(self) -> None:
        self.task_ids: list[str] = []
        self.release = asyncio.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        self.task_ids.append(context.task_id)
        await self.release.wait()
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise UnsupportedOperationError


class _UncancelableHandler(DefaultRequestHandler):
    """Answers every CancelTask with the JSON-RPC error TaskNotCancelable, noting the task id."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cancels: list[str] = []

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        self.cancels.append(params.id)
        raise TaskNotCancelableError(message="the match cannot be canceled")


@dataclass
class StubAttacker:
    url: str
    executor: _HangingExecutor
    handler: _UncancelableHandler

    @property
    def cancels(self) -> list[str]:
        return self.handler.cancels


@pytest_asyncio.fixture
async def stub_attacker() -> AsyncIterator[StubAttacker]:
    sock = bound_socket()
    url = socket_url(sock)
    card = build_agent_card(attacker_card_spec(), url)
    executor = _HangingExecutor()
    handler = _UncancelableHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")])
    # The hanging match is let go before the server stops.
    async with serve_app(app, sock, what="the stub attacker", before_stop=executor.release.set):
        yield StubAttacker(url, executor, handler)


def _match_request() -> MatchRequest:
    return MatchRequest(target="http://defender", max_turns=2)


async def test_canceling_play_remote_match_stays_a_cancel_and_cancels_the_attacker_task(
    stub_attacker: StubAttacker,
) -> None:
    known = asyncio.Event()
    task_ids: list[str] = []

    async def on_task(task_id: str) -> None:
        task_ids.append(task_id)
        known.set()

    play = asyncio.create_task(play_remote_match(stub_attacker.url, _match_request(), on_task=on_task))
    await wait_event(known, "the attacker's task id is known")
    play.cancel()
    # TaskNotCancelable from CancelTask must not replace the CancelledError.
    with pytest.raises(asyncio.CancelledError):
        await play
    assert stub_attacker.cancels == task_ids == stub_attacker.executor.task_ids


async def test_a_timeout_around_play_remote_match_stays_a_timeout(stub_attacker: StubAttacker) -> None:
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(REMOTE_TIMEOUT_S):
            await play_remote_match(stub_attacker.url, _match_request())
    assert len(stub_attacker.executor.task_ids) == 1
    assert stub_attacker.cancels == stub_attacker.executor.task_ids


async def test_a_remote_match_that_times_out_is_recorded_as_match_timeout(
    world: World, stub_attacker: StubAttacker
) -> None:
    spec = make_spec(
        attackers=[{"strategy": "playbook", "url": stub_attacker.url}], match_timeout_s=REMOTE_TIMEOUT_S
    )
    progress = await world.service.submit(spec)
    async with running(world.worker(RemoteAttackerPlayer(None), "w1")):
        done = await finished(world.service, progress.id)
    summary = (await summaries(world.service, progress.id))[0]
    assert (summary.error_kind, summary.attempts) == ("match_timeout", 1), summary
    assert (done.status, done.counts.error) == ("completed", 1)
    assert len(stub_attacker.executor.task_ids) == 1, "the timed-out match was played again"
    assert stub_attacker.cancels == stub_attacker.executor.task_ids, "the attacker's task was not canceled"


class _RemotePlayerNotingTasks:
    """RemoteAttackerPlayer's call to play_remote_match, noting the attacker's task id."""

    def __init__(self) -> None:
        self.task_ids: list[str] = []
        self.known = asyncio.Event()

    async def play(self, job: MatchJob) -> MatchResult:
        async def on_task(task_id: str) -> None:
            self.task_ids.append(task_id)
            self.known.set()

        assert job.attacker_url is not None
        return await play_remote_match(
            job.attacker_url, job.request, on_task=on_task, timeout_s=job.timeout_s + 60
        )


async def test_a_canceled_remote_match_is_recorded_promptly_and_its_attacker_task_canceled(
    world: World, stub_attacker: StubAttacker
) -> None:
    spec = make_spec(attackers=[{"strategy": "playbook", "url": stub_attacker.url}], match_timeout_s=60)
    progress = await world.service.submit(spec)
    player = _RemotePlayerNotingTasks()
    async with running(world.worker(player, "w1")):
        await wait_event(player.known, "the attacker started the match")
        canceled_at = time.monotonic()
        await world.service.cancel(progress.id)
        done = await finished(world.service, progress.id, timeout_s=KEEP_ALIVE_S + 3.0)
        elapsed = time.monotonic() - canceled_at
    assert (done.status, done.counts.canceled, done.counts.error) == ("canceled", 1, 0)
    summary = (await summaries(world.service, progress.id))[0]
    assert summary.disposition == "canceled"
    assert elapsed < KEEP_ALIVE_S + 1.0, f"the cancel took {elapsed:.2f} s"
    assert stub_attacker.cancels == player.task_ids, "the attacker's task was not canceled"


# --- 4: one service's submit and its own maintenance pass ---------------------------------------------


class GatedQueue:
    """A real queue whose first ``enqueue`` waits at a gate (a slow Redis, a big batch)."""

    def __init__(self, inner: MatchQueue) -> None:
        self.inner = inner
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.batches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def enqueue(self, matches: Any) -> None:
        self.batches += 1
        if self.batches == 1:
            self.entered.set()
            await self.gate.wait()
        await self.inner.enqueue(matches)


async def test_submit_and_the_same_services_maintenance_never_both_queue_a_campaign(world: World) -> None:
    queue = GatedQueue(world.service.queue)
    service = world.with_queue(cast(MatchQueue, queue))
    spec = make_spec(repetitions=1100)  # three enqueue batches
    submitting = asyncio.create_task(service.submit(spec))
    await wait_event(queue.entered, "submit queues its first batch")
    # The maintenance pass of the same service, while submit holds the enqueue lock.
    assert await service.resume_queueing() == 0, "the maintenance pass queued a campaign being submitted"
    queue.gate.set()
    progress = await asyncio.wait_for(submitting, DEADLINE_S)
    assert await service.resume_queueing() == 0
    assert await world.service.store.enqueue_progress(progress.id) == spec.match_count
    indexes: list[int] = []
    while batch := await world.service.queue.receive("reader", 500, 100):
        indexes += [d.match.index for d in batch]
    assert len(indexes) == spec.match_count, "matches were queued twice"
    assert sorted(indexes) == list(range(spec.match_count))


# --- 5: two deliveries of one match --------------------------------------------------------------------


async def test_two_deliveries_of_one_match_never_play_at_once_and_caps_hold(world: World) -> None:
    gate = asyncio.Event()
    player = FakePlayer(hang_until(gate))
    progress = await world.service.submit(make_spec(repetitions=2, concurrency=1))
    await world.service.queue.enqueue([QueuedMatch(progress.id, 0)])  # a batch queued twice
    w1, w2 = world.worker(player, "w1"), world.worker(player, "w2", other=True)
    async with running(w1, w2):
        # Three deliveries are held: one plays, the others wait (the duplicate and match 1).
        await eventually(lambda: _true(w1.active + w2.active == 3), "every delivery is taken")
        await eventually(lambda: _true(player.active == 1), "one match plays")
        assert player.peak == 1
        gate.set()
        done = await finished(world.service, progress.id)
        await eventually(lambda: _true(w1.active + w2.active == 0), "both workers are idle")
    assert (done.status, done.counts.defended) == ("completed", 2)
    assert player.plays == Counter({0: 1, 1: 1}), "a match was played twice"
    assert player.peak == 1 and player.peak_same_match == 1
    assert await world.service.queue.depth() == 0, "the duplicate delivery was not acknowledged"


async def test_a_lease_released_on_a_worker_starts_its_next_waiting_match_at_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asking the store again for a lease takes an hour here: only the wake-up of a waiter when
    # this worker releases a lease can start the next match of a campaign that plays one at a
    # time, and a release that lands while a waiter is still asking must not be lost (the
    # waiter asks again at once). Eight deliveries wait at once, twelve matches in all.
    for name in ("SLOT_WAIT_S", "SLOT_WAIT_MAX_S", "SLOT_WAIT_IDLE_S"):
        monkeypatch.setattr(worker_module, name, 3600.0)
    player = FakePlayer()
    progress = await world.service.submit(make_spec(repetitions=12, concurrency=1))
    async with running(world.worker(player, "w1")):
        done = await finished(world.service, progress.id)
    assert (done.status, done.counts.defended) == ("completed", 12)
    assert player.peak == 1 and sum(player.plays.values()) == 12


class CountingAsks(StoreProxy):
    """Counts the ``acquire_slots`` calls answered "full", per match index."""

    def __init__(self, inner: CampaignStore) -> None:
        super().__init__(inner)
        self.full: Counter[int] = Counter()

    async def acquire_slots(self, job: MatchJob, slots: SlotRequest, lease_s: float) -> str:
        grant: str = await self.inner.acquire_slots(job, slots, lease_s)
        if grant == "full":
            self.full[job.index] += 1
        return grant


async def test_one_waiting_delivery_per_campaign_and_defender_asks_the_store_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seven deliveries wait for the one lease of a campaign that plays one match at a time. Only
    # one of them (the asker) asks the store again, here every 20 ms; the others wait to be woken
    # (their own wait, an hour here, is a safety net). Once the first match ends they all play,
    # one after another: each asker hands the asking on when it gets the lease.
    monkeypatch.setattr(worker_module, "SLOT_WAIT_S", 0.02)
    monkeypatch.setattr(worker_module, "SLOT_WAIT_MAX_S", 0.02)
    monkeypatch.setattr(worker_module, "SLOT_WAIT_IDLE_S", 3600.0)
    store = CountingAsks(world.service.store)
    service = world.with_store(store.as_store())
    gate = asyncio.Event()
    player = FakePlayer(hang_until(gate))
    progress = await service.submit(make_spec(repetitions=8, concurrency=1))
    async with running(CampaignWorker(service, player, CONFIG, name="w1")):

        async def seven_wait() -> bool:
            return len(store.full) == 7

        async def asked_again() -> bool:
            return max(store.full.values()) >= 5

        await eventually(seven_wait, "seven deliveries wait")
        await eventually(asked_again, "the asker asks again")
        assert sum(1 for n in store.full.values() if n > 1) == 1, store.full
        gate.set()
        done = await finished(service, progress.id)
    assert (done.status, done.counts.defended) == ("completed", 8)
    assert player.peak == 1 and sum(player.plays.values()) == 8


async def test_a_released_lease_wakes_a_delivery_of_the_same_defender_first(world: World) -> None:
    # Defender b's delivery has waited longest, but a's lease was released: only a delivery of a
    # can use both the campaign's slot and a's (b's may be full). With no delivery of its
    # defender waiting, a release wakes the longest waiting of the campaign.
    defenders = [{"name": name, "url": f"http://{name}", "max_concurrency": 1} for name in "abc"]
    progress = await world.service.submit(make_spec(defenders=defenders, concurrency=2))
    campaign = await world.service.campaign(progress.id)
    jobs = {job.cell.defender: job for job in (job_for(campaign, index) for index in range(3))}
    worker = world.worker(FakePlayer(), "w1")
    waiting_b = asyncio.create_task(worker._wait_for_slot(jobs["b"], 3600.0))
    await asyncio.sleep(0)
    waiting_a = asyncio.create_task(worker._wait_for_slot(jobs["a"], 3600.0))
    await asyncio.sleep(0)
    try:
        worker._wake_slot_waiter(jobs["a"])
        await asyncio.wait_for(waiting_a, DEADLINE_S)
        await asyncio.sleep(0.05)
        assert not waiting_b.done()
        worker._wake_slot_waiter(jobs["c"])
        await asyncio.wait_for(waiting_b, DEADLINE_S)
    finally:
        waiting_a.cancel()
        waiting_b.cancel()


async def test_a_duplicate_waiting_on_a_dead_workers_lease_plays_once_it_lapses(redis_world: World) -> None:
    # A re-queued batch left two entries of match 0. A worker took the first, its lease and its
    # first attempt, then died (no release: a crash). A live worker holds the second entry and
    # waits ("held"); once the dead worker's lease lapses it must play the match.
    service = redis_world.service
    spec = make_spec()
    progress = await service.submit(spec)
    await service.queue.enqueue([QueuedMatch(progress.id, 0)])
    campaign = await service.campaign(progress.id)
    job = job_for(campaign, 0)
    [dead_delivery] = await service.queue.receive("dead-worker", 1, 100)
    assert dead_delivery.match.index == 0
    grant = await service.store.acquire_slots(job, SlotRequest(spec.concurrency, "d", None), VISIBILITY_S)
    assert grant == "taken"
    assert await service.store.mark_running(job, '{"worker": "dead-worker"}') == 1

    player = FakePlayer()
    async with running(redis_world.worker(player, "live", other=True)):
        done = await finished(service, progress.id, timeout_s=6 * VISIBILITY_S)

        async def drained() -> bool:
            return await service.queue.depth() == 0

        await eventually(drained, "the dead worker's delivery is taken over and acknowledged")
    assert (done.status, done.counts.defended) == ("completed", 1)
    assert player.plays[0] == 1
    assert (await summaries(service, progress.id))[0].attempts == 2


# --- 7: loops survive unexpected exceptions -------------------------------------------------------------


async def test_the_keep_alive_loop_survives_unexpected_errors(world: World) -> None:
    store = BrokenRenewals(world.service.store, failures=2)
    service = world.with_store(store.as_store())
    player = FakePlayer(hang)
    progress = await service.submit(make_spec())
    async with running(CampaignWorker(service, player, CONFIG, name="w1")):
        await wait_event(store.done_failing, "two keep-alive passes fail")
        # Only the keep-alive loop stops running matches of a canceled campaign.
        await service.cancel(progress.id)
        done = await finished(service, progress.id, timeout_s=KEEP_ALIVE_S + 2.0)
    assert (done.status, done.counts.canceled) == ("canceled", 1)
    assert player.canceled == [0]


class CountingService(CampaignService):
    """Counts maintenance passes (resume_queueing calls); the first ``failures`` fail unexpectedly."""

    def __init__(self, *args: Any, failures: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.passes = 0
        self.failures = failures

    async def resume_queueing(self) -> int:
        self.passes += 1
        if self.passes <= self.failures:
            raise RuntimeError("unexpected bug in a maintenance pass")
        return await super().resume_queueing()


async def _poison(world: World, campaign: Campaign, poison_id: str) -> None:
    """Store a campaign this version cannot read (written by a newer one: an unknown field)."""
    assert world.clients is not None
    redis, keys = world.clients.commands, world.clients.keys
    raw = json.loads(campaign.model_dump_json())
    raw["id"] = poison_id
    raw["spec"]["field_from_a_newer_version"] = 1
    await redis.hset(
        keys.campaign(poison_id),
        mapping={"campaign": json.dumps(raw), "total": 1, "done": 0, "enqueued": 0, "status": "queued"},
    )
    await redis.zadd(keys.campaigns, {poison_id: 1})
    await redis.sadd(keys.unfinished_campaigns, poison_id)


async def _orphan(world: World, campaign_id: str) -> Campaign:
    """A campaign whose submitter died before queueing anything."""
    spec = make_spec(repetitions=2)
    campaign = Campaign(id=campaign_id, spec=spec, created_at=datetime.now(UTC), total=spec.match_count)
    await world.service.store.create(campaign)
    return campaign


def _counting(world: World, *, failures: int = 0) -> CountingService:
    return CountingService(
        world.service.store,
        world.service.queue,
        failures=failures,
        max_campaign_matches=100_000,
        builtin_attacker=True,
    )


async def test_the_maintenance_loop_survives_unexpected_errors(world: World) -> None:
    orphan = await _orphan(world, new_campaign_id())
    service = _counting(world, failures=2)
    async with running(CampaignWorker(service, FakePlayer(), CONFIG, name="w1")):
        # Only a maintenance pass queues a campaign whose submitter died.
        done = await finished(service, orphan.id)
    assert service.passes > 2
    assert (done.status, done.counts.defended) == ("completed", 2)


async def test_an_unreadable_campaign_does_not_keep_others_from_being_resumed(redis_world: World) -> None:
    # The poisoned campaign stays: maintenance must still resume the campaigns listed after it.
    orphan = await _orphan(redis_world, "c-ffffffffffffff02")
    await _poison(redis_world, orphan, "c-0000000000000002")
    service = _counting(redis_world)
    async with running(CampaignWorker(service, FakePlayer(), CONFIG, name="w1")):
        await eventually(lambda: _true(service.passes >= 2), "two maintenance passes ran")
        done = await finished(service, orphan.id, timeout_s=4 * VISIBILITY_S)
    assert (done.status, done.counts.defended) == ("completed", 2)


# --- 8: cancel after the budget ran out ----------------------------------------------------------------


async def test_cancel_of_a_budget_exhausted_campaign_stops_its_running_matches(world: World) -> None:
    # Three matches play at once; the first to start spends the whole budget and ends. The
    # fourth is then skipped, the other two keep running until the campaign is canceled.
    first: list[int] = []
    player: FakePlayer

    async def script(job: MatchJob) -> MatchResult:
        if not first:
            first.append(job.index)
            await eventually(lambda: _true(player.active == 3), "three matches play")
            return result_for(job, tokens=50)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    player = FakePlayer(script)
    spec = make_spec(repetitions=4, concurrency=3, budget={"max_tokens": 10})
    progress = await world.service.submit(spec)
    async with running(world.worker(player, "w1")):

        async def winding_down() -> CampaignProgress | None:
            now = await world.service.progress(progress.id)
            return now if now.status == "budget_exhausted" and now.done == 2 else None

        before = await eventually(winding_down, "the budget runs out and the fourth match is skipped")
        assert (before.running, before.counts.skipped, before.finished) == (2, 1, False)
        assert (await world.service.cancel(progress.id)).status == "canceled"
        done = await finished(world.service, progress.id, timeout_s=KEEP_ALIVE_S + 2.0)
    assert (done.status, done.done) == ("canceled", 4)
    assert (done.counts.defended, done.counts.skipped, done.counts.canceled) == (1, 1, 2)
    assert len(player.canceled) == 2, "the matches still running were not stopped"


# --- 11, 12: stopping, and never holding more than concurrency -----------------------------------------


class SignalingQueue(RedisMatchQueue):
    """Notes when the worker is waiting in ``receive``."""

    def __init__(self, clients: RedisClients) -> None:
        super().__init__(clients)
        self.receiving = asyncio.Event()

    async def receive(self, consumer: str, count: int, block_ms: int) -> list[Any]:
        self.receiving.set()
        return await super().receive(consumer, count, block_ms)


async def _pending_by_consumer(world: World) -> dict[str, int]:
    assert world.clients is not None
    summary = await world.clients.commands.xpending(world.clients.keys.match_queue, MATCH_QUEUE_GROUP)
    return {_text(c["name"]): int(c["pending"]) for c in summary.get("consumers") or []}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def test_deliveries_received_while_stopping_are_left_for_another_worker(redis_world: World) -> None:
    assert redis_world.clients is not None
    queue = SignalingQueue(redis_world.clients)
    await queue.receive("warm-up", 1, 10)  # the consumer group exists before the worker reads
    service = redis_world.with_queue(queue)
    player = FakePlayer()
    stopping = CampaignWorker(service, player, replace(CONFIG, block_ms=1000), name="stopping")
    run = asyncio.create_task(stopping.run())
    queue.receiving.clear()
    await wait_event(queue.receiving, "the worker waits for matches")
    stopping.stop()
    progress = await redis_world.service.submit(make_spec())  # lands in the pending read
    await ended([run])
    assert player.plays[0] == 0, "a match was started after stop()"
    assert await _pending_by_consumer(redis_world) == {"stopping": 1}, "the delivery was not left pending"

    async with running(redis_world.worker(player, "rescuer", other=True)):
        done = await finished(redis_world.service, progress.id)
    assert (done.status, done.counts.defended) == ("completed", 1)
    assert player.plays[0] == 1


class LosesOneCancel(StoreProxy):
    """The first ``unfinished_ids`` (a maintenance pass) loses a cancellation, as redis-py does on
    Python 3.11: it sends each command through ``asyncio.wait_for``, which returns the result and
    drops a CancelledError landing as the send completes (CPython gh-86296; fixed in 3.12)."""

    def __init__(self, inner: CampaignStore) -> None:
        super().__init__(inner)
        self.in_call = asyncio.Event()
        self.lost = False

    async def unfinished_ids(self) -> list[str]:
        if not self.in_call.is_set():
            self.in_call.set()
            try:
                await asyncio.Event().wait()  # the command in flight
            except asyncio.CancelledError:
                self.lost = True  # ... and its cancellation dropped
        ids: list[str] = await self.inner.unfinished_ids()
        return ids


async def test_stop_returns_even_when_a_cancel_is_lost_during_a_maintenance_pass(redis_world: World) -> None:
    # run() cancels its keep-alive and maintenance loops once and waits for them. With a Redis
    # call losing that cancel (seen in 5 of 10 stops landing during a pass with redis-py 8.1 on
    # Python 3.11), the loop carries on and run() never returns: the replica cannot shut down.
    store = LosesOneCancel(redis_world.service.store)
    worker = CampaignWorker(redis_world.with_store(store.as_store()), FakePlayer(), CONFIG, name="w1")
    run = asyncio.create_task(worker.run())
    await wait_event(store.in_call, "a maintenance pass starts")
    worker.stop()
    _, pending = await asyncio.wait([run], timeout=2.0)
    await ended([run])  # cancels the loop again, so nothing outlives the test
    assert store.lost, "the maintenance loop was not canceled during its Redis call"
    assert not pending, "run() had not returned 2 s after stop(): the maintenance loop kept running"


async def test_a_worker_never_holds_more_than_its_concurrency(redis_world: World) -> None:
    # A dead worker left three deliveries. A worker with room for two takes two of them over
    # while it waits for new matches; new matches arriving then must not be taken too, nor the
    # dead worker's third delivery, until a slot frees up.
    gate = asyncio.Event()
    player = FakePlayer(hang_until(gate))
    left = await redis_world.service.submit(make_spec(repetitions=3))
    assert len(await redis_world.service.queue.receive("dead-worker", 3, 100)) == 3
    worker = redis_world.worker(player, "w1", concurrency=2, block_ms=1000)
    held: list[int] = []

    async def pending_of(consumer: str) -> list[dict[str, Any]]:
        assert redis_world.clients is not None
        entries: list[dict[str, Any]] = await redis_world.clients.commands.xpending_range(
            redis_world.clients.keys.match_queue, MATCH_QUEUE_GROUP, "-", "+", 10, consumer
        )
        return entries

    async def watch() -> None:
        held.append(len(await pending_of("w1")))
        assert worker.active <= 2

    async with running(worker):
        await eventually(lambda: _true(player.active == 2), "two of the dead worker's matches are taken over")
        new = await redis_world.service.submit(make_spec(repetitions=2))

        async def dead_delivery_long_idle() -> bool:
            await watch()
            dead = await pending_of("dead-worker")
            return len(dead) == 1 and dead[0]["time_since_delivered"] > 2 * VISIBILITY_S * 1000

        # A while goes by with the worker full and new matches waiting: it must take none.
        await eventually(dead_delivery_long_idle, "the dead worker's last delivery stays idle")
        assert max(held) == 2, f"the worker held {max(held)} deliveries with concurrency 2"
        assert (await redis_world.service.progress(new.id)).running == 0
        gate.set()

        async def all_done() -> bool:
            await watch()
            return all([(await redis_world.service.progress(c.id)).finished for c in (left, new)])

        await eventually(all_done, "both campaigns finish")
    assert max(held) <= 2, f"the worker held {max(held)} deliveries with concurrency 2"
    assert player.peak == 2 and sum(player.plays.values()) == 5


# --- 16: the orchestrator's error shape ----------------------------------------------------------------


async def test_unknown_routes_and_wrong_methods_answer_the_json_error_shape(
    arena: InProcessArena, settings: Any
) -> None:
    arena.add("orchestrator", create_orchestrator_app(settings, run_worker=False))
    for method, path, status, kind in [
        ("GET", "/v1/nothing-here", 404, "not_found"),
        ("GET", "/no/such/page", 404, "not_found"),
        ("DELETE", "/v1/campaigns", 405, "method_not_allowed"),
        ("PUT", "/v1/campaigns/c-0123456789abcdef", 405, "method_not_allowed"),
        ("GET", "/v1/campaigns/c-0123456789abcdef/cancel", 405, "method_not_allowed"),
    ]:
        response = await arena.http.request(method, f"http://orchestrator{path}")
        assert response.status_code == status, (method, path, response.text)
        assert response.headers["content-type"].startswith("application/json"), (method, path)
        body = response.json()
        assert set(body) == {"error"}, body
        error = body["error"]
        assert set(error) == {"kind", "message", "problems"}, error
        assert error["kind"] == kind and error["problems"] == []
        assert path in error["message"] and method in error["message"]
