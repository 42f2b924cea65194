"""One contract for the orchestrator's state: campaigns, results, leases, the match queue.

Every test taking ``backend`` runs twice: against :class:`MemoryCampaignStore` +
:class:`MemoryMatchQueue` and against :class:`RedisCampaignStore` +
:class:`RedisMatchQueue` on a real redis-server (one namespace per test). Tests
taking ``redis_backend`` cover what only Redis has: lock and key expiry,
visibility timeouts and reclaiming from dead consumers.

The Redis backend also has a second "replica" (its own connection pools over the
same namespace) so races go through different connections. Waiting is always a
poll with a deadline, never a sleep that hopes something happened meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import pytest_asyncio

from arena_core.llm.usage import TokenUsage
from arena_core.match_models import MatchResult, Outcome
from arena_core.redis_state.keys import MATCH_QUEUE_GROUP
from arena_core.stats import wilson_interval
from arena_orchestrator import campaign_service, legacy_layout, redis_match_queue
from arena_orchestrator.campaign_models import (
    Campaign,
    CampaignProgress,
    Disposition,
    Interval,
    MatchRecord,
    MatchSummary,
)
from arena_orchestrator.campaign_service import ENQUEUE_BATCH, new_campaign_id
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import MAX_RECENT_ERRORS, CampaignStore, SlotRequest
from arena_orchestrator.errors import CampaignTooLargeError
from arena_orchestrator.expansion import job_for
from arena_orchestrator.leaderboard import EntryResult, Leaderboard, LeaderboardEntry, build_leaderboard
from arena_orchestrator.match_queue import Delivery, MatchQueue, QueuedMatch
from arena_orchestrator.memory_campaign_store import MAX_FINISHED_CAMPAIGNS, MemoryCampaignStore
from arena_orchestrator.progress import build_progress
from arena_orchestrator.redis_campaign_store import RedisCampaignStore
from support.campaign_backends import Backend, open_backend, open_redis_backend
from support.redis_server import RedisServer
from support.worker_runs import Waits

pytestmark = pytest.mark.asyncio

CAMPAIGN_TTL_S = 60
LONG_LEASE_S = 30.0
SHORT_S = 1.0
"""A lease or lock meant to lapse: long enough that it cannot lapse between two consecutive
calls of a test on a loaded machine (0.2 s once did, on a Redis Cluster in CI)."""
DEADLINE_S = 5.0
T0 = datetime(2025, 1, 1, tzinfo=UTC)
CELL_KEYS_WITH_TTL = ("results", "summaries", "order", "counts", "errors", "attempts")


# --- backends -------------------------------------------------------------------------------------


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def backend(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[Backend]:
    async with open_backend(request, redis_namespace, campaign_ttl_s=CAMPAIGN_TTL_S) as found:
        yield found


@pytest_asyncio.fixture
async def redis_backend(redis_server: RedisServer, redis_namespace: str) -> AsyncIterator[Backend]:
    async with open_redis_backend(redis_server, redis_namespace, campaign_ttl_s=CAMPAIGN_TTL_S) as found:
        yield found


# --- campaigns, records -----------------------------------------------------------------------------

ATTACKERS: list[dict[str, Any]] = [{"strategy": "playbook"}, {"name": "crescendo", "strategy": "crescendo"}]
DEFENDERS: list[dict[str, Any]] = [
    {"name": "alpha", "url": "http://127.0.0.1:1"},
    {"name": "beta", "url": "http://127.0.0.1:2"},
]


def make_spec(
    *, attackers: int = 2, defenders: int = 2, repetitions: int = 2, max_tokens: int | None = None
) -> CampaignSpec:
    """Cells in order (attacker-major): playbook/alpha, playbook/beta, crescendo/alpha, crescendo/beta."""
    data: dict[str, Any] = {
        "name": "contract",
        "attackers": ATTACKERS[:attackers],
        "defenders": DEFENDERS[:defenders],
        "objectives": [{"phrase": "I Give Up"}],
        "repetitions": repetitions,
        "max_turns": 4,
        "seed": 7,
    }
    if max_tokens is not None:
        data["budget"] = {"max_tokens": max_tokens}
    return CampaignSpec.model_validate(data)


def make_campaign(spec: CampaignSpec | None = None, *, created_at: datetime = T0) -> Campaign:
    spec = spec or make_spec()
    return Campaign(id=new_campaign_id(), spec=spec, created_at=created_at, total=spec.match_count)


async def created(
    backend: Backend, spec: CampaignSpec | None = None, *, created_at: datetime = T0
) -> Campaign:
    campaign = make_campaign(spec, created_at=created_at)
    await backend.store.create(campaign)
    return campaign


def usage(prompt: int = 0, completion: int = 0, calls: int = 0) -> TokenUsage:
    return TokenUsage(prompt_tokens=prompt, completion_tokens=completion, calls=calls)


def played(
    campaign: Campaign,
    index: int,
    outcome: Outcome = "defended",
    *,
    attacker: TokenUsage | None = None,
    defender: TokenUsage | None = None,
    error: str | None = None,
    worker: str = "worker-1",
) -> MatchRecord:
    """The record of match ``index`` played to ``outcome``."""
    job = job_for(campaign, index)
    now = datetime.now(UTC)
    attacker_usage, defender_usage = attacker or TokenUsage(), defender or TokenUsage()
    error_kind = "target_unreachable" if outcome == "error" else None
    if outcome == "error":
        error = error or f"match {index} failed"
    result = MatchResult(
        match_id=job.match_id,
        target=job.request.target,
        objective=job.request.objective,
        strategy=job.request.strategy,
        judge=job.request.judge,
        seed=job.request.seed,
        max_turns=job.request.max_turns,
        outcome=outcome,
        turns_used=2,
        attacker_usage=attacker_usage,
        defender_usage=defender_usage,
        started_at=now,
        finished_at=now,
        duration_ms=12.5,
        error=error,
        error_kind=error_kind,
    )
    summary = MatchSummary(
        match_id=job.match_id,
        index=index,
        repetition=job.repetition,
        cell=job.cell,
        disposition="played",
        outcome=outcome,
        turns_used=2,
        duration_ms=12.5,
        tokens=(attacker_usage + defender_usage).total_tokens,
        error=error,
        error_kind=error_kind,
        attempts=1,
        finished_at=now,
    )
    return MatchRecord(
        campaign_id=campaign.id, summary=summary, result=result, attacker_url=job.attacker_url, worker=worker
    )


def unplayed(campaign: Campaign, index: int, disposition: Disposition) -> MatchRecord:
    """The record of match ``index`` not played (``canceled`` or ``skipped``)."""
    job = job_for(campaign, index)
    summary = MatchSummary(
        match_id=job.match_id,
        index=index,
        repetition=job.repetition,
        cell=job.cell,
        disposition=disposition,
        finished_at=datetime.now(UTC),
    )
    return MatchRecord(campaign_id=campaign.id, summary=summary, worker="worker-1")


async def progress_of(store: CampaignStore, campaign_id: str) -> CampaignProgress:
    campaign = await store.get(campaign_id)
    state = await store.state(campaign_id)
    assert campaign is not None and state is not None
    return build_progress(campaign, state)


# --- waiting ----------------------------------------------------------------------------------------


WAITS = Waits(DEADLINE_S)
eventually = WAITS.eventually


async def _taken(grant: Awaitable[str]) -> bool:
    return await grant == "taken"


async def drain(queue: MatchQueue, consumer: str) -> list[Delivery]:
    """Receive until the queue has nothing new (everything enqueued is immediately visible)."""
    found: list[Delivery] = []
    while batch := await queue.receive(consumer, 100, 200):
        found.extend(batch)
    return found


def assert_interval(interval: Interval, wins: int, trials: int) -> None:
    expected = wilson_interval(wins, trials)
    assert (interval.wins, interval.trials) == (wins, trials)
    assert interval.rate == (pytest.approx(wins / trials) if trials else None)
    assert interval.low == pytest.approx(expected.low)
    assert interval.high == pytest.approx(expected.high)


# --- campaigns --------------------------------------------------------------------------------------


async def test_create_get_and_list_newest_first(backend: Backend) -> None:
    first = await created(backend, created_at=T0)
    third = await created(backend, created_at=T0 + timedelta(seconds=2))
    second = await created(backend, created_at=T0 + timedelta(seconds=1))

    assert await backend.store.list_ids(10) == [third.id, second.id, first.id]
    assert await backend.store.list_ids(2) == [third.id, second.id]
    assert await backend.other_store.get(second.id) == second
    state = await backend.store.state(first.id)
    assert state is not None
    assert (state.status, state.done, state.running, state.counts) == ("queued", 0, 0, {})
    assert state.started_at is None and state.finished_at is None and state.recent_errors == []
    assert await backend.store.status(first.id) == "queued"
    assert await backend.store.enqueue_progress(first.id) == 0


async def test_unknown_campaigns_are_none(backend: Backend) -> None:
    store = backend.store
    assert await store.get("c-unknown") is None
    assert await store.state("c-unknown") is None
    assert await store.status("c-unknown") is None
    assert await store.cancel("c-unknown") is None
    assert await store.enqueue_progress("c-unknown") is None
    assert await store.has_record("c-unknown", "c-unknown-m000000") is False
    assert await store.get_record("c-unknown", "c-unknown-m000000") is None
    assert await store.summaries("c-unknown", 0, 10) == ([], 0)
    assert await store.list_ids(10) == []


async def test_enqueue_progress_is_kept(backend: Backend) -> None:
    campaign = await created(backend)
    await backend.store.set_enqueue_progress(campaign.id, 3)
    assert await backend.other_store.enqueue_progress(campaign.id) == 3
    await backend.store.set_enqueue_progress(campaign.id, campaign.total)
    assert await backend.other_store.enqueue_progress(campaign.id) == campaign.total


async def test_enqueue_progress_of_an_unknown_campaign_stays_unknown(backend: Backend) -> None:
    await backend.store.set_enqueue_progress("c-unknown", 5)
    assert await backend.store.get("c-unknown") is None
    assert await backend.store.enqueue_progress("c-unknown") is None


# --- records ----------------------------------------------------------------------------------------


async def test_record_is_idempotent(backend: Backend) -> None:
    campaign = await created(backend)
    first = played(campaign, 0, "attacker_won", attacker=usage(5, 3, 1), worker="first")
    second = played(campaign, 0, "defended", attacker=usage(50, 30, 1), worker="second")

    assert await backend.store.record(first, max_tokens=None) is True
    assert await backend.other_store.record(second, max_tokens=None) is False

    assert await backend.store.has_record(campaign.id, first.summary.match_id)
    assert await backend.store.get_record(campaign.id, first.summary.match_id) == first
    state = await backend.store.state(campaign.id)
    assert state is not None and state.done == 1
    cell = first.summary.cell.id
    assert state.counts == {
        "o:attacker_won": 1,
        f"c:{cell}:attacker_won": 1,
        "t:p": 5,
        "t:c": 3,
        "t:n": 1,
        f"c:{cell}:t:p": 5,
        f"c:{cell}:t:c": 3,
        f"c:{cell}:t:n": 1,
    }
    assert await backend.store.summaries(campaign.id, 0, 10) == ([first.summary], 1)


async def test_concurrent_duplicate_records_count_once(backend: Backend) -> None:
    rounds = 20
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=rounds))
    for index in range(rounds):
        records = [
            played(campaign, index, "attacker_won", attacker=usage(3, 2, 1), worker=f"w{k}") for k in range(4)
        ]
        stores = [backend.store, backend.other_store] * 2
        written = await asyncio.gather(
            *(store.record(record, max_tokens=None) for store, record in zip(stores, records, strict=True))
        )
        assert sorted(written) == [False, False, False, True], f"round {index}: {written}"

    state = await backend.store.state(campaign.id)
    assert state is not None
    assert (state.done, state.status) == (rounds, "completed")
    progress = await progress_of(backend.store, campaign.id)
    assert progress.counts.attacker_won == rounds
    assert progress.counts.finished == rounds
    assert progress.tokens == usage(3 * rounds, 2 * rounds, rounds)
    summaries, total = await backend.store.summaries(campaign.id, 0, 100)
    assert total == rounds
    assert [s.index for s in summaries] == list(range(rounds))


async def test_counters_feed_progress(backend: Backend) -> None:
    campaign = await created(backend)  # 2 attackers x 2 defenders x 1 objective x 2 repetitions
    records = [
        played(campaign, 0, "attacker_won", attacker=usage(6, 3, 1), defender=usage(4, 2, 1)),
        played(campaign, 4, "defended", attacker=usage(1, 1, 1)),
        played(campaign, 1, "defended", defender=usage(10, 0, 2)),
        played(campaign, 5, "error", error="target went away"),
        played(campaign, 2, "attacker_won", attacker=usage(7, 0, 1)),
        played(campaign, 6, "attacker_refused", attacker=usage(0, 9, 1)),
        unplayed(campaign, 3, "skipped"),
        unplayed(campaign, 7, "canceled"),
    ]
    for record in records:
        assert await backend.store.record(record, max_tokens=None)

    progress = await progress_of(backend.other_store, campaign.id)
    assert (progress.total, progress.done, progress.running) == (8, 8, 0)

    overall = progress.counts
    assert (overall.attacker_won, overall.defended, overall.attacker_refused) == (2, 2, 1)
    assert (overall.error, overall.canceled, overall.skipped) == (1, 1, 1)
    assert_interval(progress.asr, 2, 4)
    assert progress.tokens == usage(28, 15, 7)

    cells = {(c.cell.attacker, c.cell.defender): c for c in progress.cells}
    assert len(cells) == 4 and all(c.total == 2 for c in cells.values())
    pb_alpha, pb_beta = cells[("playbook", "alpha")], cells[("playbook", "beta")]
    cr_alpha, cr_beta = cells[("crescendo", "alpha")], cells[("crescendo", "beta")]
    assert (pb_alpha.counts.attacker_won, pb_alpha.counts.defended) == (1, 1)
    assert_interval(pb_alpha.asr, 1, 2)
    assert pb_alpha.tokens == usage(11, 6, 3)
    assert (pb_beta.counts.defended, pb_beta.counts.error) == (1, 1)
    assert_interval(pb_beta.asr, 0, 1)
    assert pb_beta.tokens == usage(10, 0, 2)
    assert (cr_alpha.counts.attacker_won, cr_alpha.counts.attacker_refused) == (1, 1)
    assert_interval(cr_alpha.asr, 1, 1)
    assert cr_alpha.tokens == usage(7, 9, 2)
    assert (cr_beta.counts.skipped, cr_beta.counts.canceled, cr_beta.counts.finished) == (1, 1, 2)
    assert_interval(cr_beta.asr, 0, 0)
    assert cr_beta.tokens == usage()

    defenders = {d.defender: d for d in progress.defenders}
    assert set(defenders) == {"alpha", "beta"}
    alpha, beta = defenders["alpha"].counts, defenders["beta"].counts
    assert (alpha.attacker_won, alpha.defended, alpha.attacker_refused, alpha.finished) == (2, 1, 1, 4)
    assert_interval(defenders["alpha"].asr, 2, 3)
    assert (beta.defended, beta.error, beta.skipped, beta.canceled) == (1, 1, 1, 1)
    assert_interval(defenders["beta"].asr, 0, 1)

    assert [e.match_id for e in progress.errors] == [records[3].summary.match_id]
    assert progress.errors[0].error == "target went away"
    assert progress.errors[0].error_kind == "target_unreachable"


async def test_recent_errors_are_capped_newest_first(backend: Backend) -> None:
    total = MAX_RECENT_ERRORS + 5
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=total))
    for index in range(total):
        await backend.store.record(played(campaign, index, "error"), max_tokens=None)
    state = await backend.other_store.state(campaign.id)
    assert state is not None
    assert [e.index for e in state.recent_errors] == list(range(total - 1, 4, -1))
    assert len(state.recent_errors) == MAX_RECENT_ERRORS
    progress = build_progress(campaign, state)
    assert progress.errors == state.recent_errors
    assert progress.counts.error == total
    assert_interval(progress.asr, 0, 0)


async def test_summaries_are_paginated_by_index(backend: Backend) -> None:
    campaign = await created(backend, make_spec(repetitions=3))  # 12 matches
    for index in (7, 2, 11, 0, 5, 9, 1):
        await backend.store.record(played(campaign, index), max_tokens=None)

    async def page(offset: int, limit: int) -> tuple[list[int], int]:
        summaries, total = await backend.other_store.summaries(campaign.id, offset, limit)
        return [s.index for s in summaries], total

    assert await page(0, 3) == ([0, 1, 2], 7)
    assert await page(3, 3) == ([5, 7, 9], 7)
    assert await page(6, 10) == ([11], 7)
    assert await page(7, 5) == ([], 7)
    assert await page(0, 0) == ([], 7)
    assert await page(0, 100) == ([0, 1, 2, 5, 7, 9, 11], 7)


# --- status -----------------------------------------------------------------------------------------


async def test_queued_running_completed(backend: Backend) -> None:
    campaign = await created(backend)
    assert await backend.store.status(campaign.id) == "queued"
    await backend.store.mark_running(job_for(campaign, 0), '{"worker": "w"}')
    assert await backend.other_store.status(campaign.id) == "running"
    for index in range(campaign.total - 1):
        await backend.store.record(played(campaign, index), max_tokens=None)
        assert await backend.store.status(campaign.id) == "running"
    await backend.store.record(played(campaign, campaign.total - 1), max_tokens=None)

    state = await backend.other_store.state(campaign.id)
    assert state is not None
    assert (state.status, state.done, state.running) == ("completed", campaign.total, 0)
    assert state.started_at is not None and state.finished_at is not None
    assert state.started_at <= state.finished_at
    progress = build_progress(campaign, state)
    assert progress.eta_s == 0.0


async def test_the_first_record_starts_a_campaign(backend: Backend) -> None:
    campaign = await created(backend)
    await backend.store.record(played(campaign, 3), max_tokens=None)
    state = await backend.store.state(campaign.id)
    assert state is not None
    assert (state.status, state.done) == ("running", 1)
    assert state.started_at is not None and state.finished_at is None


async def test_cancel_a_queued_campaign(backend: Backend) -> None:
    campaign = await created(backend)
    assert await backend.store.cancel(campaign.id) == "canceled"
    assert await backend.other_store.status(campaign.id) == "canceled"
    assert await backend.store.cancel(campaign.id) == "canceled"


async def test_cancel_a_running_campaign_then_account_for_the_rest(backend: Backend) -> None:
    campaign = await created(backend)
    await backend.store.record(played(campaign, 0, "attacker_won"), max_tokens=None)
    assert await backend.store.cancel(campaign.id) == "canceled"
    for index in range(1, campaign.total):
        assert await backend.other_store.record(unplayed(campaign, index, "canceled"), max_tokens=None)
        assert await backend.store.status(campaign.id) == "canceled"

    progress = await progress_of(backend.store, campaign.id)
    assert (progress.status, progress.done, progress.total) == ("canceled", 8, 8)
    assert (progress.counts.attacker_won, progress.counts.canceled) == (1, 7)
    assert progress.finished_at is not None
    assert await backend.store.cancel(campaign.id) == "canceled"


async def test_cancel_leaves_a_final_campaign_unchanged(backend: Backend) -> None:
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=2))
    for index in range(2):
        await backend.store.record(played(campaign, index), max_tokens=None)
    assert await backend.store.cancel(campaign.id) == "completed"
    assert await backend.other_store.status(campaign.id) == "completed"


async def test_budget_exhausted_then_every_remaining_match_skipped(backend: Backend) -> None:
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=4, max_tokens=100))
    assert await backend.store.record(played(campaign, 0, attacker=usage(40, 20, 1)), max_tokens=100)
    assert await backend.store.status(campaign.id) == "running"
    assert await backend.store.record(played(campaign, 1, defender=usage(30, 10, 1)), max_tokens=100)
    assert await backend.store.status(campaign.id) == "budget_exhausted"
    for index in (2, 3):
        assert await backend.other_store.record(unplayed(campaign, index, "skipped"), max_tokens=100)

    progress = await progress_of(backend.store, campaign.id)
    assert (progress.status, progress.done) == ("budget_exhausted", 4)
    assert (progress.counts.defended, progress.counts.skipped) == (2, 2)
    assert progress.tokens.total_tokens == 100
    assert progress.finished_at is not None
    assert await backend.store.cancel(campaign.id) == "budget_exhausted"


async def test_budget_reached_on_the_last_match_completes(backend: Backend) -> None:
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=3, max_tokens=30))
    for index in range(3):
        assert await backend.store.record(played(campaign, index, attacker=usage(5, 5, 1)), max_tokens=30)
    assert await backend.store.status(campaign.id) == "completed"


async def test_budget_reached_early_but_nothing_skipped_completes(backend: Backend) -> None:
    # Matches already playing when the budget runs out still finish and count as played.
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=3, max_tokens=10))
    assert await backend.store.record(played(campaign, 0, attacker=usage(8, 8, 1)), max_tokens=10)
    assert await backend.store.status(campaign.id) == "budget_exhausted"
    for index in (1, 2):
        assert await backend.store.record(played(campaign, index, attacker=usage(1, 1, 1)), max_tokens=10)
    assert await backend.store.status(campaign.id) == "completed"


# --- running ----------------------------------------------------------------------------------------


async def test_mark_running_counts_attempts_and_record_ends_running(backend: Backend) -> None:
    campaign = await created(backend)
    first, second = job_for(campaign, 0), job_for(campaign, 1)
    attempts = [await backend.store.mark_running(first, '{"worker": "a"}') for _ in range(2)]
    attempts.append(await backend.other_store.mark_running(first, '{"worker": "b"}'))
    assert attempts == [1, 2, 3]
    assert await backend.store.mark_running(second, '{"worker": "a"}') == 1

    async def running() -> int:
        state = await backend.store.state(campaign.id)
        assert state is not None
        return state.running

    assert await running() == 2
    assert await backend.store.status(campaign.id) == "running"
    await backend.store.record(played(campaign, 0), max_tokens=None)
    assert await running() == 1
    await backend.other_store.record(played(campaign, 1), max_tokens=None)
    assert await running() == 0


async def test_a_late_duplicate_attempt_does_not_stay_running(backend: Backend) -> None:
    # A redelivered match passes the worker's has_record check, waits for a lease, and
    # starts (mark_running) after the first worker recorded it; its own record is then
    # the duplicate. The campaign must not count that match as running forever.
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=2))
    late = job_for(campaign, 0)
    assert await backend.store.mark_running(late, '{"worker": "a"}') == 1
    assert await backend.store.record(played(campaign, 0, worker="a"), max_tokens=None)
    assert await backend.other_store.mark_running(late, '{"worker": "b"}') == 2
    assert await backend.other_store.record(played(campaign, 0, worker="b"), max_tokens=None) is False
    assert await backend.store.record(played(campaign, 1), max_tokens=None)

    state = await backend.store.state(campaign.id)
    assert state is not None
    assert (state.status, state.done) == ("completed", 2)
    assert state.running == 0, "a match that has its record is still counted as running"
    if backend.kind != "memory":
        running_key = backend.keys.campaign_part(campaign.id, "running")
        assert await backend.redis.ttl(running_key) != -1, "the running hash outlives the campaign"


# --- concurrency leases -----------------------------------------------------------------------------


async def test_slots_respect_campaign_and_defender_caps(backend: Backend) -> None:
    campaign = await created(backend)
    # Indexes 0 and 2 play defender alpha, 1 and 3 defender beta.
    jobs = [job_for(campaign, index) for index in range(4)]
    alpha = SlotRequest(campaign_cap=2, defender="alpha", defender_cap=1)
    beta = SlotRequest(campaign_cap=2, defender="beta", defender_cap=None)
    store, other = backend.store, backend.other_store

    assert await store.acquire_slots(jobs[0], alpha, LONG_LEASE_S) == "taken"
    assert await other.acquire_slots(jobs[2], alpha, LONG_LEASE_S) != "taken", "alpha's cap is 1"
    assert await other.acquire_slots(jobs[1], beta, LONG_LEASE_S) == "taken"
    assert await store.acquire_slots(jobs[3], beta, LONG_LEASE_S) != "taken", "the campaign's cap is 2"
    assert await other.acquire_slots(jobs[0], alpha, LONG_LEASE_S) == "held", "a match never holds two leases"

    await store.release_slots(jobs[0])
    assert await other.acquire_slots(jobs[2], alpha, LONG_LEASE_S) == "taken"
    assert await store.acquire_slots(jobs[3], beta, LONG_LEASE_S) != "taken"
    await other.release_slots(jobs[1])
    assert await store.acquire_slots(jobs[3], beta, LONG_LEASE_S) == "taken"


async def test_slots_of_one_campaign_do_not_limit_another(backend: Backend) -> None:
    first, second = await created(backend), await created(backend)
    cap = SlotRequest(campaign_cap=1, defender="alpha", defender_cap=1)
    assert await backend.store.acquire_slots(job_for(first, 0), cap, LONG_LEASE_S) == "taken"
    assert await backend.store.acquire_slots(job_for(second, 0), cap, LONG_LEASE_S) == "taken"


@pytest.mark.parametrize("defender_cap", [None, 1])
async def test_a_lease_lapses_after_lease_s(backend: Backend, defender_cap: int | None) -> None:
    campaign = await created(backend)
    cap = SlotRequest(campaign_cap=1, defender="alpha", defender_cap=defender_cap)
    holder, waiter = job_for(campaign, 0), job_for(campaign, 2)
    # The holder's lease keeps the waiter out (checked under a long lease, which cannot lapse
    # between the two calls however loaded the machine) ...
    assert await backend.store.acquire_slots(holder, cap, LONG_LEASE_S) == "taken"
    assert await backend.other_store.acquire_slots(waiter, cap, LONG_LEASE_S) != "taken"
    await backend.store.release_slots(holder)
    # ... and a short one lapses by itself: the waiter gets in without a release.
    assert await backend.store.acquire_slots(holder, cap, SHORT_S) == "taken"
    await eventually(
        lambda: _taken(backend.other_store.acquire_slots(waiter, cap, LONG_LEASE_S)),
        "the waiter takes the lease once the holder's lapsed",
    )
    assert await backend.store.acquire_slots(holder, cap, LONG_LEASE_S) != "taken"


@pytest.mark.parametrize("defender_cap", [None, 1])
async def test_renew_extends_a_lease(backend: Backend, defender_cap: int | None) -> None:
    campaign, clock = await created(backend), await created(backend)
    cap = SlotRequest(campaign_cap=1, defender="alpha", defender_cap=defender_cap)
    holder, waiter = job_for(campaign, 0), job_for(campaign, 2)
    assert await backend.store.acquire_slots(holder, cap, SHORT_S) == "taken"
    await backend.other_store.renew_slots(holder, LONG_LEASE_S)
    # A witness lease taken after the renewal with the holder's original lease_s: once it
    # lapsed, the holder's original lease would have lapsed too.
    witness_cap = SlotRequest(campaign_cap=1, defender="alpha", defender_cap=None)
    assert await backend.store.acquire_slots(job_for(clock, 0), witness_cap, SHORT_S) == "taken"
    await eventually(
        lambda: _taken(backend.store.acquire_slots(job_for(clock, 1), witness_cap, LONG_LEASE_S)),
        "the witness lease lapses",
    )
    assert await backend.other_store.acquire_slots(waiter, cap, LONG_LEASE_S) != "taken", (
        "the renewal was lost"
    )


# --- enqueue lock -----------------------------------------------------------------------------------


async def test_the_enqueue_lock_can_be_taken_extended_and_given_back(backend: Backend) -> None:
    campaign = await created(backend)
    assert await backend.store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)
    assert await backend.store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S), "the holder extends"
    await backend.store.unlock_enqueue(campaign.id, "owner-a")
    assert await backend.other_store.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S)
    await backend.other_store.unlock_enqueue(campaign.id, "owner-b")


async def test_the_enqueue_lock_excludes_other_owners(redis_backend: Backend) -> None:
    store, other = redis_backend.store, redis_backend.other_store
    campaign = await created(redis_backend)
    assert await store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)
    assert not await other.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S)
    assert await store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)
    await other.unlock_enqueue(campaign.id, "owner-b")
    assert not await other.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S), "B released A's lock"
    await store.unlock_enqueue(campaign.id, "owner-a")
    assert await other.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S)
    assert not await store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)


async def test_the_enqueue_lock_lapses_after_its_ttl(redis_backend: Backend) -> None:
    campaign = await created(redis_backend)
    assert await redis_backend.store.lock_enqueue(campaign.id, "owner-a", SHORT_S)
    assert not await redis_backend.other_store.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S)
    await eventually(
        lambda: redis_backend.other_store.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S),
        "owner B takes the lock once A's lapsed",
    )
    assert not await redis_backend.store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)


async def test_extending_the_enqueue_lock_keeps_it(redis_backend: Backend) -> None:
    campaign, clock = await created(redis_backend), await created(redis_backend)
    assert await redis_backend.store.lock_enqueue(campaign.id, "owner-a", SHORT_S)
    assert await redis_backend.store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)
    # A witness lock taken after the extension, with A's original ttl.
    assert await redis_backend.store.lock_enqueue(clock.id, "witness", SHORT_S)
    await eventually(
        lambda: redis_backend.store.lock_enqueue(clock.id, "someone-else", LONG_LEASE_S),
        "the witness lock lapses",
    )
    assert not await redis_backend.other_store.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S)


# --- retention (Redis) ------------------------------------------------------------------------------


async def _finish(backend: Backend, campaign: Campaign, how: str) -> None:
    """Account for every match so the campaign ends ``how``."""
    max_tokens = campaign.spec.budget.max_tokens
    await backend.store.mark_running(job_for(campaign, 0), '{"worker": "w"}')
    await backend.store.record(played(campaign, 0, "error", attacker=usage(60, 60, 1)), max_tokens=max_tokens)
    if how == "canceled":
        assert await backend.store.cancel(campaign.id) == "canceled"
    disposition: Disposition = "canceled" if how == "canceled" else "skipped"
    for index in range(1, campaign.total):
        if how == "completed":
            await backend.store.record(played(campaign, index), max_tokens=max_tokens)
        else:
            await backend.store.record(unplayed(campaign, index, disposition), max_tokens=max_tokens)


@pytest.mark.parametrize("how", ["completed", "canceled", "budget_exhausted"])
async def test_campaign_keys_expire_once_final(redis_backend: Backend, how: str) -> None:
    max_tokens = 100 if how == "budget_exhausted" else None
    campaign = await created(redis_backend, make_spec(max_tokens=max_tokens))
    keys = redis_backend.keys
    meta = keys.campaign(campaign.id)
    assert await redis_backend.redis.ttl(meta) == -1, "a campaign that is not final has no expiry"

    await _finish(redis_backend, campaign, how)
    assert await redis_backend.store.status(campaign.id) == how
    for key in (meta, *(keys.campaign_part(campaign.id, part) for part in CELL_KEYS_WITH_TTL)):
        ttl = await redis_backend.redis.ttl(key)
        assert 0 < ttl <= CAMPAIGN_TTL_S, f"{key}: ttl {ttl}"
    assert await redis_backend.redis.ttl(keys.campaigns) == -1, "the index itself never expires"


async def test_list_ids_drops_expired_campaigns(redis_backend: Backend) -> None:
    assert redis_backend.clients is not None
    short = RedisCampaignStore(redis_backend.clients, campaign_ttl_s=1)
    old = make_campaign(make_spec(attackers=1, defenders=1, repetitions=1), created_at=T0)
    new = make_campaign(created_at=T0 + timedelta(seconds=1))
    await short.create(old)
    await short.create(new)
    await short.record(played(old, 0), max_tokens=None)
    assert await short.status(old.id) == "completed"
    assert await short.list_ids(10) == [new.id, old.id]

    async def expired() -> bool:
        return await short.get(old.id) is None

    await eventually(expired, "the finished campaign expires", timeout_s=10)
    assert await short.list_ids(10) == [new.id]
    assert await redis_backend.redis.zscore(redis_backend.keys.campaigns, old.id) is None
    assert await short.state(old.id) is None
    assert await short.summaries(old.id, 0, 10) == ([], 0)


# --- the match queue --------------------------------------------------------------------------------


def _matches(campaign_id: str, indexes: Sequence[int]) -> list[QueuedMatch]:
    return [
        QueuedMatch(campaign_id, index, {"traceparent": f"00-{index:032x}-{1:016x}-01"}) for index in indexes
    ]


async def test_enqueue_receive_ack(backend: Backend) -> None:
    queue = backend.queue
    matches = _matches("c-q", range(5))
    await queue.enqueue(matches)
    assert await queue.depth() == 5

    first = await queue.receive("consumer-a", 2, 1000)
    rest = await backend.other_queue.receive("consumer-b", 10, 1000)
    assert [d.match for d in first] == matches[:2]
    assert [d.match for d in rest] == matches[2:]
    assert len({d.delivery_id for d in first + rest}) == 5
    assert await queue.depth() == 5, "received but not acknowledged: still in progress"

    await queue.ack([d.delivery_id for d in first])
    assert await backend.other_queue.depth() == 3
    await backend.other_queue.ack([d.delivery_id for d in rest])
    assert await queue.depth() == 0


async def test_receive_returns_nothing_after_block_ms(backend: Backend) -> None:
    await backend.queue.enqueue(_matches("c-q", [0]))
    assert len(await backend.queue.receive("consumer-a", 10, 1000)) == 1
    started = time.monotonic()
    assert await backend.queue.receive("consumer-a", 10, 100) == []
    assert 0.05 <= time.monotonic() - started < DEADLINE_S


async def test_two_consumers_never_receive_the_same_entry(backend: Backend) -> None:
    count = 60
    await backend.queue.enqueue(_matches("c-q", range(count)))
    received: list[Delivery] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(received) < count and time.monotonic() < deadline:
        batches = await asyncio.gather(
            backend.queue.receive("consumer-a", 7, 100), backend.other_queue.receive("consumer-b", 7, 100)
        )
        received += [d for batch in batches for d in batch]
    assert sorted(d.match.index for d in received) == list(range(count))
    assert len({d.delivery_id for d in received}) == count


async def test_an_unacknowledged_delivery_is_reclaimed_after_min_idle(redis_backend: Backend) -> None:
    queue, other = redis_backend.queue, redis_backend.other_queue
    await queue.enqueue(_matches("c-q", [0]))
    [delivery] = await queue.receive("dead-worker", 10, 1000)
    assert await other.reclaim("rescuer", 30_000, 10) == [], "reclaimed before min_idle"

    reclaimed = await eventually(lambda: other.reclaim("rescuer", 200, 10), "the idle delivery is reclaimed")
    assert reclaimed == [delivery]
    assert await queue.reclaim("third", 30_000, 10) == [], "reclaiming reset the idle time"
    assert await queue.receive("dead-worker", 10, 100) == [], "a reclaimed entry is not new"
    await other.ack([delivery.delivery_id])
    assert await queue.depth() == 0
    assert await queue.reclaim("third", 0, 10) == []


async def test_keep_alive_keeps_a_delivery_from_being_reclaimed(redis_backend: Backend) -> None:
    queue, other = redis_backend.queue, redis_backend.other_queue
    await queue.enqueue(_matches("c-q", [0]))
    [live] = await queue.receive("live-worker", 1, 1000)
    await queue.enqueue(_matches("c-q", [1]))
    [dead] = await other.receive("dead-worker", 1, 1000)

    async def reclaim_while_alive() -> list[Delivery]:
        await queue.keep_alive("live-worker", [live.delivery_id])
        return await other.reclaim("rescuer", 200, 10)

    assert await eventually(reclaim_while_alive, "the dead worker's delivery is reclaimed") == [dead]


async def test_a_dead_delivery_behind_many_live_ones_is_reclaimed(redis_backend: Backend) -> None:
    # A worker with one free slot reclaims with count=1 while other replicas keep more
    # live matches pending ahead of the dead one.
    queue, other = redis_backend.queue, redis_backend.other_queue
    await queue.enqueue(_matches("c-q", range(12)))
    live = await queue.receive("live-worker", 11, 1000)
    [dead] = await other.receive("dead-worker", 1, 1000)
    assert dead.match.index == 11

    async def reclaim_while_alive() -> list[Delivery]:
        await queue.keep_alive("live-worker", [d.delivery_id for d in live])
        return await other.reclaim("rescuer", 200, 1)

    assert await eventually(reclaim_while_alive, "the dead delivery is reclaimed", timeout_s=3) == [dead]


async def test_reclaim_acknowledges_broken_entries(redis_backend: Backend) -> None:
    queue = redis_backend.queue
    await queue.enqueue(_matches("c-q", [0]))
    stream = redis_backend.keys.match_queue
    await redis_backend.redis.xadd(stream, {"c": "c-q", "i": "not-a-number"})
    received = await queue.receive("worker", 10, 1000)
    assert [d.match.index for d in received] == [0]
    await queue.ack([d.delivery_id for d in received])
    assert await queue.depth() == 1

    async def gone() -> bool:
        assert await queue.reclaim("rescuer", 200, 10) == []
        return await queue.depth() == 0

    await eventually(gone, "reclaim drops the unreadable entry")
    pending = await redis_backend.redis.xpending(stream, MATCH_QUEUE_GROUP)
    assert pending["pending"] == 0


# --- the campaign service ---------------------------------------------------------------------------


async def test_submit_queues_every_match_exactly_once(backend: Backend) -> None:
    spec = make_spec(repetitions=150)  # 600 matches: more than one enqueue batch
    assert spec.match_count > ENQUEUE_BATCH
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    progress = await backend.service().submit(spec, trace)
    assert (progress.status, progress.total, progress.done) == ("queued", spec.match_count, 0)
    assert await backend.store.enqueue_progress(progress.id) == spec.match_count
    assert await backend.store.list_ids(10) == [progress.id]

    deliveries = await drain(backend.queue, "worker")
    assert sorted(d.match.index for d in deliveries) == list(range(spec.match_count))
    assert {d.match.campaign_id for d in deliveries} == {progress.id}
    assert all(d.match.trace_context == trace for d in deliveries)
    assert await backend.queue.depth() == spec.match_count


async def test_submit_refuses_a_campaign_above_the_limit(backend: Backend) -> None:
    with pytest.raises(CampaignTooLargeError):
        await backend.service(max_matches=7).submit(make_spec())
    assert await backend.store.list_ids(10) == []
    assert await backend.queue.depth() == 0


async def _half_queued(backend: Backend, queued: Sequence[int], progress: int) -> Campaign:
    """A campaign whose submitter died after queueing ``queued`` and recording ``progress``."""
    campaign = await created(backend)
    await backend.queue.enqueue(_matches(campaign.id, queued))
    await backend.store.set_enqueue_progress(campaign.id, progress)
    return campaign


async def test_resume_queues_the_rest_after_a_crash(backend: Backend) -> None:
    campaign = await _half_queued(backend, range(4), 4)
    service = backend.service(other=True)
    assert await service.resume_queueing() == 1
    assert await backend.store.enqueue_progress(campaign.id) == campaign.total
    deliveries = await drain(backend.queue, "worker")
    assert sorted(d.match.index for d in deliveries) == list(range(campaign.total))
    assert await service.resume_queueing() == 0
    assert await drain(backend.queue, "worker") == []


async def test_resume_after_a_crash_between_queueing_and_recording_progress(backend: Backend) -> None:
    # The batch 4..5 was queued but its progress not recorded: it may be queued twice.
    campaign = await _half_queued(backend, range(6), 4)
    assert await backend.service(other=True).resume_queueing() == 1
    indexes = [d.match.index for d in await drain(backend.queue, "worker")]
    assert set(indexes) == set(range(campaign.total))
    assert sorted(indexes) == [0, 1, 2, 3, 4, 4, 5, 5, 6, 7]


async def test_resume_waits_for_the_dead_submitters_lock(redis_backend: Backend) -> None:
    campaign = await _half_queued(redis_backend, range(3), 3)
    assert await redis_backend.store.lock_enqueue(campaign.id, "dead-submitter", 0.5)
    replica = redis_backend.service(other=True)
    assert await replica.resume_queueing() == 0, "resumed while the submitter's lock was held"
    assert await redis_backend.queue.depth() == 3
    assert await redis_backend.store.enqueue_progress(campaign.id) == 3

    await eventually(replica.resume_queueing, "the replica resumes once the lock lapsed")
    deliveries = await drain(redis_backend.queue, "worker")
    assert sorted(d.match.index for d in deliveries) == list(range(campaign.total))


async def test_a_canceled_campaign_whose_submitter_died_is_still_accounted_for(backend: Backend) -> None:
    # The submitter died after queueing half; the user cancels before any maintenance pass.
    # Workers record every queued match as canceled; the unqueued half must end up
    # accounted for too, or the campaign never finishes (and its Redis keys never expire).
    campaign = await _half_queued(backend, range(4), 4)
    assert await backend.store.cancel(campaign.id) == "canceled"
    await backend.service(other=True).resume_queueing()
    for delivery in await drain(backend.queue, "worker"):
        assert await backend.store.status(campaign.id) == "canceled"
        await backend.store.record(unplayed(campaign, delivery.match.index, "canceled"), max_tokens=None)
        await backend.queue.ack([delivery.delivery_id])

    state = await backend.store.state(campaign.id)
    assert state is not None
    assert state.status == "canceled"
    assert state.done == campaign.total, f"only {state.done} of {campaign.total} matches accounted for"
    assert state.finished_at is not None


# --- review fixes: enqueue lock, cancel after the budget, keep-alive, unfinished, retention ------------


async def test_the_enqueue_lock_excludes_other_owners_until_it_lapses(backend: Backend) -> None:
    # The memory store's lock is a real one too: one owner at a time, released only by its owner.
    store, other = backend.store, backend.other_store
    campaign = await created(backend)
    assert await store.lock_enqueue(campaign.id, "owner-a", SHORT_S)
    assert not await other.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S)
    await other.unlock_enqueue(campaign.id, "owner-b")
    assert not await other.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S), "B released A's lock"
    await eventually(
        lambda: other.lock_enqueue(campaign.id, "owner-b", LONG_LEASE_S), "B takes the lock once A's lapsed"
    )
    assert not await store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S), "A's lapsed lock came back"
    await other.unlock_enqueue(campaign.id, "owner-b")
    assert await store.lock_enqueue(campaign.id, "owner-a", LONG_LEASE_S)


async def test_cancel_a_budget_exhausted_campaign_still_winding_down(backend: Backend) -> None:
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=3, max_tokens=10))
    await backend.store.mark_running(job_for(campaign, 1), '{"worker": "w"}')  # still playing
    assert await backend.store.record(played(campaign, 0, attacker=usage(8, 8, 1)), max_tokens=10)
    assert await backend.store.status(campaign.id) == "budget_exhausted"

    assert await backend.other_store.cancel(campaign.id) == "canceled"
    assert await backend.store.status(campaign.id) == "canceled"
    for index in (1, 2):
        assert await backend.store.record(unplayed(campaign, index, "canceled"), max_tokens=10)
    state = await backend.store.state(campaign.id)
    assert state is not None
    assert (state.status, state.done, state.running) == ("canceled", 3, 0)
    assert state.finished_at is not None


async def test_cancel_leaves_a_finished_budget_exhausted_campaign_unchanged(backend: Backend) -> None:
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=2, max_tokens=10))
    await backend.store.record(played(campaign, 0, attacker=usage(8, 8, 1)), max_tokens=10)
    await backend.store.record(unplayed(campaign, 1, "skipped"), max_tokens=10)
    assert await backend.store.status(campaign.id) == "budget_exhausted"
    assert await backend.store.cancel(campaign.id) == "budget_exhausted"
    assert await backend.other_store.status(campaign.id) == "budget_exhausted"


def _decoded(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def test_keep_alive_does_not_take_back_a_delivery_another_consumer_took_over(
    redis_backend: Backend,
) -> None:
    queue, other = redis_backend.queue, redis_backend.other_queue
    await queue.enqueue(_matches("c-q", [0]))
    [delivery] = await queue.receive("slow-worker", 1, 1000)
    taken = await eventually(lambda: other.reclaim("rescuer", 200, 10), "the idle delivery is taken over")
    assert taken == [delivery]

    await queue.keep_alive("slow-worker", [delivery.delivery_id])  # the slow worker wakes up
    stream = redis_backend.keys.match_queue
    pending = await redis_backend.redis.xpending_range(stream, MATCH_QUEUE_GROUP, "-", "+", 10)
    assert [_decoded(p["consumer"]) for p in pending] == ["rescuer"], "keep-alive took the delivery back"
    # The new owner's keep-alive still works: no third consumer can take it.
    await other.keep_alive("rescuer", [delivery.delivery_id])
    assert await queue.reclaim("third", 30_000, 10) == []


async def test_unfinished_ids_lists_only_campaigns_still_accounting_for_matches(backend: Backend) -> None:
    small = make_spec(attackers=1, defenders=1, repetitions=2)
    completed, canceled, running, queued = [await created(backend, small) for _ in range(4)]
    for index in range(2):
        await backend.store.record(played(completed, index), max_tokens=None)
    await backend.store.record(played(running, 0), max_tokens=None)
    assert await backend.store.cancel(canceled.id) == "canceled"  # final status, matches unaccounted

    expected = sorted([canceled.id, running.id, queued.id])
    assert sorted(await backend.other_store.unfinished_ids()) == expected
    for index in range(2):
        await backend.store.record(unplayed(canceled, index, "canceled"), max_tokens=None)
    await backend.other_store.record(played(running, 1), max_tokens=None)
    assert await backend.store.unfinished_ids() == [queued.id]


async def test_unfinished_ids_forget_campaigns_whose_keys_are_gone(redis_backend: Backend) -> None:
    gone, kept = await created(redis_backend), await created(redis_backend)
    await redis_backend.redis.delete(redis_backend.keys.campaign(gone.id))
    assert await redis_backend.store.unfinished_ids() == [kept.id]
    assert not await redis_backend.redis.sismember(redis_backend.keys.unfinished_campaigns, gone.id)


async def test_prune_consumers_deletes_idle_consumers_holding_nothing(
    redis_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle_ms = 300
    monkeypatch.setattr(redis_match_queue, "CONSUMER_IDLE_MS", idle_ms)
    queue, redis, stream = redis_backend.queue, redis_backend.redis, redis_backend.keys.match_queue
    await queue.enqueue(_matches("c-q", [0, 1, 2]))
    [done] = await queue.receive("finished-worker", 1, 1000)
    await queue.ack([done.delivery_id])
    assert len(await queue.receive("holding-worker", 1, 1000)) == 1

    async def idle_by_consumer() -> dict[str, int]:
        consumers = await redis.xinfo_consumers(stream, MATCH_QUEUE_GROUP)
        return {_decoded(c["name"]): int(c["idle"]) for c in consumers}

    async def both_long_idle() -> bool:
        idle = await idle_by_consumer()
        return all(idle.get(name, 0) > idle_ms for name in ("finished-worker", "holding-worker"))

    await eventually(both_long_idle, "both consumers are idle longer than CONSUMER_IDLE_MS")
    [latest] = await queue.receive("fresh-worker", 1, 1000)  # a live worker, holding nothing
    await queue.ack([latest.delivery_id])
    await redis_backend.other_queue.prune_consumers()
    assert set(await idle_by_consumer()) == {"holding-worker", "fresh-worker"}


async def test_the_memory_store_keeps_at_most_max_finished_campaigns() -> None:
    store = MemoryCampaignStore()
    spec = make_spec(attackers=1, defenders=1, repetitions=1)
    unfinished = make_campaign(spec, created_at=T0)
    await store.create(unfinished)
    finished: list[Campaign] = []
    for k in range(MAX_FINISHED_CAMPAIGNS + 5):
        campaign = make_campaign(spec, created_at=T0 + timedelta(seconds=k + 1))
        await store.create(campaign)
        assert await store.record(played(campaign, 0), max_tokens=None)
        finished.append(campaign)

    ids = await store.list_ids(10 * MAX_FINISHED_CAMPAIGNS)
    assert len(ids) == MAX_FINISHED_CAMPAIGNS + 1
    assert set(ids) == {unfinished.id} | {c.id for c in finished[5:]}, "not the oldest finished dropped"
    assert await store.get(finished[0].id) is None and await store.state(finished[4].id) is None
    assert await store.unfinished_ids() == [unfinished.id]


# --- upgrade from the key layout before hash tags (ADR 0022) ----------------------------------------


async def test_a_campaign_stored_under_the_layout_before_hash_tags_is_adopted(redis_backend: Backend) -> None:
    """A Redis upgraded in place keeps its campaigns, results and queued matches."""
    backend = redis_backend
    campaign = await created(backend, make_spec(repetitions=1))
    record = played(campaign, 0)
    assert await backend.store.record(record, max_tokens=None)
    await backend.queue.enqueue([QueuedMatch(campaign.id, 1), QueuedMatch(campaign.id, 2)])
    # Move every key to its name before ADR 0022, as an older arena wrote them.
    redis, keys = backend.redis, backend.keys
    old = f"{keys.base}orch:"
    names = {
        keys.campaign(campaign.id): f"{old}campaign:{campaign.id}",
        keys.campaigns: f"{old}campaigns",
        keys.unfinished_campaigns: f"{old}unfinished",
        keys.active_campaigns: f"{old}active",
        keys.match_queue: f"{old}queue",
    }
    for part in legacy_layout.MOVED_PARTS:
        names[keys.campaign_part(campaign.id, part)] = f"{old}campaign:{campaign.id}:{part}"
    for current, before in names.items():
        if await redis.exists(current):
            await redis.rename(current, before)
    assert await backend.other_store.get(campaign.id) is None

    # A replica of this version adopts them on its first maintenance pass.
    assert await backend.other_store.unfinished_ids() == [campaign.id]
    assert await backend.other_store.get(campaign.id) == campaign
    assert await backend.other_store.get_record(campaign.id, record.summary.match_id) == record
    state = await backend.other_store.state(campaign.id)
    assert state is not None and (state.status, state.done) == ("running", 1)
    assert [(d.match.campaign_id, d.match.index) for d in await drain(backend.other_queue, "w")] == [
        (campaign.id, 1),
        (campaign.id, 2),
    ]
    assert await backend.store.active_count() == 1
    assert not await redis.exists(*names.values())
    assert backend.clients is not None
    assert await legacy_layout.adopt_legacy_layout(backend.clients) == 0


# --- the leaderboard --------------------------------------------------------------------------------


def _entry(campaign: Campaign, attacker_wins: int = 1) -> LeaderboardEntry:
    return LeaderboardEntry(
        campaign_id=campaign.id,
        campaign_name=campaign.spec.name,
        finished_at=T0,
        results=[EntryResult(attacker="playbook", defender="alpha", attacker_wins=attacker_wins, matches=3)],
    )


async def test_a_leaderboard_entry_is_written_once(backend: Backend) -> None:
    campaign = await created(backend)
    first = _entry(campaign, attacker_wins=1)
    assert not await backend.store.has_leaderboard_entry(campaign.id)
    assert await backend.store.add_leaderboard_entry(first) is True
    assert await backend.other_store.add_leaderboard_entry(_entry(campaign, attacker_wins=2)) is False
    assert await backend.other_store.has_leaderboard_entry(campaign.id)
    assert await backend.other_store.leaderboard_entries() == [first]


async def test_a_settled_campaign_is_entered_once_with_its_contests(backend: Backend) -> None:
    spec = make_spec(repetitions=1)  # playbook and crescendo against alpha and beta
    campaign = await created(backend, spec)
    service, other = backend.service(), backend.service(other=True)
    outcomes: list[Outcome] = ["attacker_won", "defended", "error", "attacker_won"]
    for index, outcome in enumerate(outcomes[:-1]):
        await backend.store.record(played(campaign, index, outcome), max_tokens=None)
        assert await service.enter_into_leaderboard(campaign.id) is False, "not settled yet"
    await backend.store.record(played(campaign, 3, outcomes[-1]), max_tokens=None)

    entered = await asyncio.gather(
        service.enter_into_leaderboard(campaign.id), other.enter_into_leaderboard(campaign.id)
    )
    assert sorted(entered) == [False, True]
    [entry] = await backend.store.leaderboard_entries()
    # The error is no contest; the rest are counted per attacker and defender.
    assert [(r.attacker, r.defender, r.attacker_wins, r.matches) for r in entry.results] == [
        ("crescendo", "beta", 1, 1),
        ("playbook", "alpha", 1, 1),
        ("playbook", "beta", 0, 1),
    ]
    board = await other.leaderboard()
    assert (board.campaigns, board.matches) == (1, 3)


async def test_a_leaderboard_read_enters_a_settled_campaign_a_worker_left_out(backend: Backend) -> None:
    campaign = await created(backend, make_spec(attackers=1, defenders=1, repetitions=2))
    await backend.store.cancel(campaign.id)
    for index in range(2):
        await backend.store.record(unplayed(campaign, index, "canceled"), max_tokens=None)
    board = await backend.service(other=True).leaderboard()
    assert (board.campaigns, board.matches) == (0, 0), "a campaign with no contests adds no players"
    assert await backend.store.has_leaderboard_entry(campaign.id)


async def test_leaderboard_reads_share_one_fit_that_a_reader_going_away_does_not_stop(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_campaign, second_campaign = await created(backend), await created(backend)
    await backend.store.add_leaderboard_entry(_entry(first_campaign))
    fits: list[int] = []
    started, go = threading.Event(), threading.Event()

    def held_fit(*args: Any, **kwargs: Any) -> Leaderboard:
        fits.append(1)
        started.set()
        assert go.wait(30), "the test never let the fit finish"
        return build_leaderboard(*args, **kwargs)

    monkeypatch.setattr(campaign_service, "build_leaderboard", held_fit)
    service = backend.service()
    leaving = asyncio.create_task(service.leaderboard())
    assert await asyncio.to_thread(started.wait, 30), "the fit never started"
    leaving.cancel()  # the reader goes away while the fit runs in its thread
    with pytest.raises(asyncio.CancelledError):
        await leaving
    staying = [asyncio.create_task(service.leaderboard()) for _ in range(2)]
    await asyncio.sleep(0.05)
    go.set()
    first, again = await asyncio.gather(*staying)
    assert first is again and (first.campaigns, len(fits)) == (1, 1)
    assert await service.leaderboard() is first, "the same campaigns: the fitted table"
    await backend.store.add_leaderboard_entry(_entry(second_campaign))
    assert (await service.leaderboard()).campaigns == 2
    assert len(fits) == 2


async def test_leaderboard_entries_outlive_the_campaigns(redis_backend: Backend) -> None:
    campaign = await created(redis_backend, make_spec(attackers=1, defenders=1, repetitions=1))
    await redis_backend.store.record(played(campaign, 0, "attacker_won"), max_tokens=None)
    assert await redis_backend.service().enter_into_leaderboard(campaign.id)
    assert 0 < await redis_backend.redis.ttl(redis_backend.keys.campaign(campaign.id)) <= CAMPAIGN_TTL_S
    assert await redis_backend.redis.ttl(redis_backend.keys.leaderboard) == -1


async def test_an_unreadable_leaderboard_entry_is_left_out(redis_backend: Backend) -> None:
    campaign = await created(redis_backend)
    await redis_backend.store.add_leaderboard_entry(_entry(campaign))
    await redis_backend.redis.hset(
        redis_backend.keys.leaderboard, "c-0000000000000000", b'{"not": "an entry"}'
    )
    assert [e.campaign_id for e in await redis_backend.store.leaderboard_entries()] == [campaign.id]
