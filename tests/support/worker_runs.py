"""Campaign workers under test: worlds to run them in, running them, and waiting with a deadline.

A test module that runs :class:`CampaignWorker` gets its ``world`` (memory and Redis) and
``redis_world`` fixtures from :func:`world_fixtures`, runs workers inside :func:`running`, and
waits through a :class:`Waits` holding its own default deadline::

    world, redis_world = world_fixtures(CONFIG, campaign_ttl_s=CAMPAIGN_TTL_S)
    WAITS = Waits(DEADLINE_S)
    eventually, finished = WAITS.eventually, WAITS.finished

Waiting is always a poll of observable state (or an event) with a deadline, never a sleep that
hopes something happened meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from arena_core.redis_state import RedisClients
from arena_orchestrator.campaign_models import CampaignProgress
from arena_orchestrator.campaign_service import CampaignService
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import CampaignStore
from arena_orchestrator.match_player import MatchPlayer
from arena_orchestrator.match_queue import MatchQueue
from arena_orchestrator.worker import CampaignWorker, WorkerConfig
from support.campaign_backends import (
    DEFAULT_MAX_MATCHES,
    Backend,
    campaign_service,
    open_backend,
    open_redis_backend,
)
from support.redis_server import RedisServer

T = TypeVar("T")

# --- campaigns ----------------------------------------------------------------------------------------


def one_cell_spec(*, name: str, concurrency: int, **fields: Any) -> CampaignSpec:
    """A campaign of one cell: the playbook attacker at ``http://attacker`` against defender ``d`` at
    ``http://defender`` for the objective "I Give Up"; one repetition of at most 2 turns, seed 1.

    ``name`` and ``concurrency`` have no default: each test module names its own; ``fields`` set or
    override any other field.
    """
    data: dict[str, Any] = {
        "name": name,
        "attackers": [{"strategy": "playbook", "url": "http://attacker"}],
        "defenders": [{"name": "d", "url": "http://defender"}],
        "objectives": [{"phrase": "I Give Up"}],
        "repetitions": 1,
        "max_turns": 2,
        "concurrency": concurrency,
        "seed": 1,
    }
    data.update(fields)
    return CampaignSpec.model_validate(data)


# --- worlds: a service (and a second replica's) over one backend ------------------------------------------


@dataclass
class World:
    """A campaign service, a second replica's over the same state (in memory: the same one), the
    workers' configuration, and Redis access (None in memory)."""

    kind: str
    service: CampaignService
    other: CampaignService
    config: WorkerConfig
    max_matches: int
    clients: RedisClients | None = None

    @classmethod
    def over(cls, backend: Backend, config: WorkerConfig, *, max_matches: int) -> World:
        return cls(
            backend.kind,
            backend.service(max_matches=max_matches),
            backend.service(other=True, max_matches=max_matches),
            config,
            max_matches,
            clients=backend.clients,
        )

    def worker(self, player: MatchPlayer, name: str, *, other: bool = False, **config: Any) -> CampaignWorker:
        """A worker (``other``: on the second replica) with this world's configuration but ``config``."""
        service = self.other if other else self.service
        return CampaignWorker(service, player, replace(self.config, **config), name=name)

    def with_store(self, store: CampaignStore) -> CampaignService:
        """A service over ``store`` (a wrapper of this world's) and this world's queue."""
        return campaign_service(store, self.service.queue, max_matches=self.max_matches)

    def with_queue(self, queue: MatchQueue) -> CampaignService:
        """A service over this world's store and ``queue`` (a wrapper of this world's, or another)."""
        return campaign_service(self.service.store, queue, max_matches=self.max_matches)


WorldFixture = Callable[..., AsyncIterator[World]]


def world_fixtures(
    config: WorkerConfig, *, campaign_ttl_s: float, max_matches: int = DEFAULT_MAX_MATCHES
) -> tuple[WorldFixture, WorldFixture]:
    """The fixtures ``world`` (parametrised: memory, then Redis) and ``redis_world`` (Redis only)
    of a module whose workers run with ``config``; assign them to those two names in the module."""

    @pytest_asyncio.fixture(params=["memory", "redis"])
    async def world(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[World]:
        async with open_backend(request, redis_namespace, campaign_ttl_s=campaign_ttl_s) as backend:
            yield World.over(backend, config, max_matches=max_matches)

    @pytest_asyncio.fixture
    async def redis_world(redis_server: RedisServer, redis_namespace: str) -> AsyncIterator[World]:
        async with open_redis_backend(
            redis_server, redis_namespace, campaign_ttl_s=campaign_ttl_s
        ) as backend:
            yield World.over(backend, config, max_matches=max_matches)

    return world, redis_world


# --- waiting --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waits:
    """Waiting with a deadline: ``timeout_s`` unless a call names its own."""

    timeout_s: float

    async def eventually(
        self, check: Callable[[], Awaitable[T | None]], what: str, timeout_s: float | None = None
    ) -> T:
        """Poll ``check`` until it returns something truthy; fail after the deadline."""
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            value = await check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout_s} s: {what}")
            await asyncio.sleep(0.02)

    async def wait_event(self, event: asyncio.Event, what: str, timeout_s: float | None = None) -> None:
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            raise AssertionError(f"not within {timeout_s} s: {what}") from None

    async def finished(
        self, service: CampaignService, campaign_id: str, timeout_s: float | None = None
    ) -> CampaignProgress:
        """The campaign's progress once every match is accounted for and none runs; on failure,
        how far it got."""

        async def check() -> CampaignProgress | None:
            progress = await service.progress(campaign_id)
            return progress if progress.finished and progress.running == 0 else None

        try:
            return await self.eventually(check, f"campaign {campaign_id} finishes", timeout_s)
        except AssertionError as exc:
            progress = await service.progress(campaign_id)
            raise AssertionError(
                f"{exc}: status {progress.status}, {progress.done}/{progress.total} done, "
                f"{progress.running} running, counts {progress.counts}"
            ) from None


# --- running workers ------------------------------------------------------------------------------------


async def ended(runs: list[asyncio.Task[None]], timeout_s: float = 15.0) -> None:
    """Wait for stopped workers' ``run()`` tasks; fail if one crashed or never ended.

    On Python 3.11, ``asyncio.wait_for`` (redis-py sends every command through it) returns the
    result and drops a cancellation that lands as the awaited step completes. ``run()`` cancels
    its keep-alive and maintenance loops once, so a stop landing during one of their Redis calls
    can leave ``run()`` waiting for them forever. That is a product bug with a test of its own
    (test_worker_faults' test_stop_returns_even_when_a_cancel_is_lost_during_a_maintenance_pass);
    here such loops, already cancelled once, are cancelled again so the other tests measure what
    they are about.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        _, pending = await asyncio.wait(runs, timeout=0.5)
        if not pending:
            break
        assert time.monotonic() < deadline, f"run() did not end within {timeout_s} s of stop()"
        for task in asyncio.all_tasks():
            if task.get_name() in ("keep-alive", "maintenance") and task.cancelling():
                task.cancel()
    crashed = [("cancelled" if run.cancelled() else run.exception()) for run in runs]
    assert crashed == [None] * len(runs), f"a worker's run() ended with {crashed!r}"


@contextlib.asynccontextmanager
async def running(*workers: CampaignWorker) -> AsyncIterator[dict[str, asyncio.Task[None]]]:
    """Run ``workers`` (their ``run()`` tasks by worker name); on exit stop those still running and
    fail if a ``run()`` crashed or did not end within 15 s."""
    assert len({w.name for w in workers}) == len(workers), "workers run together need names of their own"
    runs = {w.name: asyncio.create_task(w.run(), name=f"run-{w.name}") for w in workers}
    try:
        yield runs
    finally:
        for worker in workers:
            worker.stop()
        await ended(list(runs.values()))


__all__ = ["Waits", "World", "ended", "one_cell_spec", "running", "world_fixtures"]
