"""Bounded queues: unfinished campaigns per orchestrator, matches per attacker process.

``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS``: a submission beyond it is refused with 429 and
``Retry-After`` (over HTTP, and through the CLI's client), counted atomically across replicas
sharing Redis (two store instances with their own connection pools racing), and a campaign that
completes, is canceled or exhausts its budget frees its place.

``ARENA_ATTACKER_MAX_ACTIVE_MATCHES``: the real attacker app, served over a loopback socket
(streaming needs one: httpx's ASGI transport buffers whole responses), refuses a match beyond
the cap before sending anything to its target (error kind ``attacker_busy``), gives the place
back however a match ends (result, error, cancel, the client gone), and the orchestrator's
worker offers a refused match again until it is played, recorded once, as one attempt.

Real components throughout; the only doubles sit at the edges: a fake match player where the
test is about the orchestrator alone, and a "gate" target that holds the attacker's first request
until the test opens it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import pytest_asyncio
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from arena.orchestrator_client import OrchestratorClient
from arena_attacker.app import create_attacker_app
from arena_core.a2a.client.attacker import play_remote_match
from arena_core.errors import AttackerBusyError
from arena_core.match_models import MatchRequest, MatchResult
from arena_core.settings import ArenaSettings, load_settings
from arena_orchestrator.app import create_orchestrator_app
from arena_orchestrator.campaign_models import MatchJob
from arena_orchestrator.campaign_service import RETRY_AFTER_S, CampaignService
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.errors import TooManyCampaignsError
from arena_orchestrator.match_player import RemoteAttackerPlayer, error_result
from arena_orchestrator.worker import (
    BUSY_MIN_BACKOFF_S,
    MAX_BACKOFF_S,
    CampaignWorker,
    WorkerConfig,
    _busy_backoff,
)
from conftest import InProcessArena
from support.asgi import client_for
from support.campaign_backends import Backend, open_backend, open_redis_backend
from support.redis_server import RedisServer
from support.uvicorn_server import bound_socket, serve_app, socket_url
from support.worker_runs import Waits, one_cell_spec, running

pytestmark = pytest.mark.asyncio

DEADLINE_S = 10.0
CAMPAIGN_TTL_S = 600
CONFIG = WorkerConfig(
    concurrency=4,
    visibility_timeout_s=2.0,
    match_attempts=1,  # a busy refusal charged as an attempt would end the match at once
    retry_backoff_s=0.0,
    block_ms=100,
    shutdown_grace_s=0.5,
)


def make_spec(**fields: Any) -> CampaignSpec:
    """One cell (playbook vs defender d) unless ``fields`` say otherwise."""
    return one_cell_spec(**{"name": "limits", "concurrency": 4, **fields})


WAITS = Waits(DEADLINE_S)
eventually, wait_event, finished = WAITS.eventually, WAITS.wait_event, WAITS.finished


def limited_service(backend: Backend, limit: int | None, *, other: bool = False) -> CampaignService:
    store, queue = (backend.other_store, backend.other_queue) if other else (backend.store, backend.queue)
    return CampaignService(
        store, queue, max_campaign_matches=1000, builtin_attacker=True, max_active_campaigns=limit
    )


@pytest_asyncio.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[Backend]:
    async with open_backend(request, redis_namespace, campaign_ttl_s=CAMPAIGN_TTL_S) as opened:
        yield opened


class InstantPlayer:
    """Defends every match at once, without any network (the orchestrator is under test here)."""

    async def play(self, job: MatchJob) -> MatchResult:
        played = {"outcome": "defended", "error": None, "error_kind": None, "duration_ms": 1.0}
        return error_result(job, "", "", datetime.now(UTC)).model_copy(update=played)


# --- 1: unfinished campaigns per orchestrator -----------------------------------------------------------


async def test_a_submission_beyond_the_limit_is_refused_until_a_campaign_finishes(backend: Backend) -> None:
    service = limited_service(backend, 2)
    first = await service.submit(make_spec(repetitions=2))
    second = await service.submit(make_spec())
    with pytest.raises(TooManyCampaignsError) as refused:
        await service.submit(make_spec())
    error = refused.value
    assert (error.kind, error.http_status, error.retry_after_s) == ("too_many_campaigns", 429, RETRY_AFTER_S)
    assert "2 unfinished campaigns" in error.message
    assert "ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS" in error.message
    assert sorted(await service.store.list_ids(10)) == sorted([first.id, second.id]), (
        "a refused one was stored"
    )
    assert await service.store.active_count() == 2

    # A cancel frees the place at once, before the worker has accounted for the queued matches.
    await service.cancel(first.id)
    assert await service.store.active_count() == 1
    third = await service.submit(make_spec())
    with pytest.raises(TooManyCampaignsError):
        await service.submit(make_spec())

    # Completion frees a place too; recording the canceled campaign's matches frees nothing more.
    async with running(CampaignWorker(service, InstantPlayer(), CONFIG, name="w1")):
        for campaign_id in (first.id, second.id, third.id):
            await finished(service, campaign_id)
    assert [(await service.progress(i)).status for i in (first.id, second.id, third.id)] == [
        "canceled",
        "completed",
        "completed",
    ]
    assert await service.store.active_count() == 0
    await service.submit(make_spec())
    await service.submit(make_spec())
    with pytest.raises(TooManyCampaignsError):
        await service.submit(make_spec())
    # Canceling a final campaign again changes no count.
    await service.cancel(first.id)
    assert await service.store.active_count() == 2


async def test_a_campaign_out_of_token_budget_frees_its_place(backend: Backend) -> None:
    service = limited_service(backend, 1)

    class TokenSpender(InstantPlayer):
        async def play(self, job: MatchJob) -> MatchResult:
            result = await super().play(job)
            usage = result.attacker_usage.model_copy(update={"prompt_tokens": 100, "calls": 1})
            return result.model_copy(update={"attacker_usage": usage})

    spent = await service.submit(make_spec(repetitions=3, concurrency=1, budget={"max_tokens": 100}))
    with pytest.raises(TooManyCampaignsError):
        await service.submit(make_spec())
    async with running(CampaignWorker(service, TokenSpender(), CONFIG, name="w1")):
        progress = await finished(service, spent.id)
    assert progress.status == "budget_exhausted"
    assert await service.store.active_count() == 0
    await service.submit(make_spec())


async def test_two_replicas_submitting_at_once_never_pass_the_limit(backend: Backend) -> None:
    limit = 5
    replicas = [limited_service(backend, limit), limited_service(backend, limit, other=True)]

    async def submit(i: int) -> str | None:
        try:
            return (await replicas[i % 2].submit(make_spec())).id
        except TooManyCampaignsError:
            return None

    created = await asyncio.gather(*(submit(i) for i in range(24)))
    accepted = [c for c in created if c is not None]
    assert len(accepted) == limit, created
    assert sorted(await backend.store.list_ids(100)) == sorted(accepted)
    assert await backend.store.active_count() == await backend.other_store.active_count() == limit
    # Cancels racing on both replicas (twice each) free each place exactly once.
    await asyncio.gather(*(replicas[i % 2].cancel(c) for i, c in enumerate(accepted[:3] * 2)))
    assert await backend.store.active_count() == limit - 3
    again = await asyncio.gather(*(submit(i) for i in range(10)))
    assert len([c for c in again if c is not None]) == 3


async def test_a_stale_entry_in_the_redis_count_does_not_hold_a_place(
    redis_server: RedisServer, redis_namespace: str
) -> None:
    async with open_redis_backend(redis_server, redis_namespace, campaign_ttl_s=CAMPAIGN_TTL_S) as backend:
        await _stale_entry_does_not_hold_a_place(backend)


async def _stale_entry_does_not_hold_a_place(backend: Backend) -> None:
    service = limited_service(backend, 1)
    # A campaign whose keys were deleted by hand, or made final by a version without the set.
    await backend.redis.sadd(backend.keys.active_campaigns, "c-00000000000000ff")
    assert await backend.store.active_count() == 1
    progress = await service.submit(make_spec())
    assert await backend.store.active_count() == 1
    assert await backend.redis.smembers(backend.keys.active_campaigns) == {progress.id.encode()}
    with pytest.raises(TooManyCampaignsError):
        await service.submit(make_spec())


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_the_api_answers_429_with_retry_after_and_the_cli_client_reports_it(
    kind: str, request: pytest.FixtureRequest, settings: ArenaSettings, redis_namespace: str
) -> None:
    if kind == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        settings = settings.model_copy(update={"redis_url": server.url, "redis_namespace": redis_namespace})
    # The app as served (its own settings wiring); the default limit applies.
    limit = settings.orchestrator_max_active_campaigns
    app = create_orchestrator_app(settings, player=InstantPlayer(), run_worker=False)
    body = make_spec().model_dump(mode="json", exclude_none=True)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orchestrator") as http,
    ):
        schema = (await http.get("/openapi.json")).json()
        documented = schema["paths"]["/v1/campaigns"]["post"]["responses"]["429"]
        assert "Retry-After" in documented["headers"]
        assert documented["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorResponse"
        }

        for _ in range(limit):
            response = await http.post("/v1/campaigns", json=body)
            assert response.status_code == 201, response.text
        refused = await http.post("/v1/campaigns", json=body)
        assert refused.status_code == 429, refused.text
        assert refused.headers["retry-after"] == str(RETRY_AFTER_S)
        error = refused.json()["error"]
        assert error["kind"] == "too_many_campaigns"
        assert f"{limit} unfinished campaigns" in error["message"]
        assert "ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS" in error["message"]
        listed = (await http.get("/v1/campaigns", params={"limit": 500})).json()["campaigns"]
        assert len(listed) == limit

        if kind == "memory":  # (a Redis connection pool cannot serve TestClient's own event loop)
            # The CLI's client (`arena campaign run --orchestrator URL`): the reason and exit code 3.
            with (
                OrchestratorClient("http://testserver", http=TestClient(app)) as client,
                pytest.raises(TooManyCampaignsError) as cli_error,
            ):
                client.submit(make_spec().model_dump_json(), media_type="application/json")
            assert cli_error.value.exit_code == 3
            assert cli_error.value.retry_after_s == RETRY_AFTER_S
            assert "ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS" in cli_error.value.message

        canceled = await http.post(f"/v1/campaigns/{listed[0]['id']}/cancel")
        assert canceled.json()["status"] == "canceled"
        assert (await http.post("/v1/campaigns", json=body)).status_code == 201
        assert (await http.post("/v1/campaigns", json=body)).status_code == 429


# --- 2: matches per attacker process ----------------------------------------------------------------


class Counting:
    """An ASGI app's HTTP requests, counted (to show a refused match reached no target)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests += 1
        await self.app(scope, receive, send)


class Gate:
    """A target that holds every request until opened, then answers 404 (no agent card)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        self.requests += 1
        self.entered.set()
        await self.opened.wait()
        await send(
            {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"no card here"})


@dataclass
class LoopbackAttacker:
    url: str
    app: Counting
    gate: Gate
    defender: Counting

    async def hold(self) -> tuple[asyncio.Task[MatchResult], asyncio.Event]:
        """Start a match that holds the attacker's only place (its target is the gate)."""
        known = asyncio.Event()

        async def on_task(_: str) -> None:
            known.set()

        self.gate.entered.clear()
        play = asyncio.create_task(
            play_remote_match(self.url, MatchRequest(target="http://gate", max_turns=1), on_task=on_task)
        )
        await wait_event(self.gate.entered, "the held match reached its target")
        return play, known

    async def play_when_free(self, request: MatchRequest) -> MatchResult:
        """Play ``request`` as soon as the attacker takes it."""

        async def attempt() -> MatchResult | None:
            try:
                return await play_remote_match(self.url, request)
            except AttackerBusyError:
                return None

        return await eventually(attempt, "the attacker takes a match again")


@pytest_asyncio.fixture
async def attacker(arena: InProcessArena) -> AsyncIterator[LoopbackAttacker]:
    """The real attacker app (at most one match at once) on a loopback socket; its targets in-process."""
    arena.add_model("model", mode="refuse")
    defender = Counting(arena.apps[arena.add_defender("defender").removeprefix("http://")])
    arena.add("defender", defender)
    gate = Gate()
    arena.add("gate", gate)
    sock = bound_socket()
    url = socket_url(sock)
    served = create_attacker_app(
        load_settings(attacker_max_active_matches=1),
        public_url=url,
        model_factory=lambda: arena.chat_model("model"),
        target_http=client_for(arena.router),
    )
    app = Counting(served)
    # The app's lifespan (its shutdown hooks) runs here: its middlewares serve HTTP only.
    # Held requests are let go before the server stops.
    async with (
        served.router.lifespan_context(served),
        serve_app(app, sock, what="the attacker", before_stop=gate.opened.set),
    ):
        yield LoopbackAttacker(url, app, gate, defender)


def _defender_match() -> MatchRequest:
    return MatchRequest(target="http://defender", max_turns=2)


async def test_a_match_beyond_the_cap_is_refused_before_reaching_its_target(
    attacker: LoopbackAttacker,
) -> None:
    held, _ = await attacker.hold()
    with pytest.raises(AttackerBusyError) as busy:
        await play_remote_match(attacker.url, _defender_match())
    assert busy.value.kind == "attacker_busy"
    assert "already plays 1 matches" in busy.value.message
    assert "ARENA_ATTACKER_MAX_ACTIVE_MATCHES" in busy.value.message
    assert attacker.defender.requests == 0, "the refused match reached its target"

    # The held match ends in error (its target has no card): its place is given back.
    attacker.gate.opened.set()
    ended = await asyncio.wait_for(held, DEADLINE_S)
    assert (ended.outcome, ended.error_kind) == ("error", "agent_card_invalid")
    result = await play_remote_match(attacker.url, _defender_match())
    assert result.outcome == "defended"
    assert attacker.defender.requests > 0


async def test_a_canceled_match_gives_its_place_back(attacker: LoopbackAttacker) -> None:
    held, known = await attacker.hold()
    await wait_event(known, "the held match's task id is known")
    held.cancel()  # the client cancels the attacker's task (CancelTask)
    with pytest.raises(asyncio.CancelledError):
        await held
    result = await attacker.play_when_free(_defender_match())
    assert result.outcome == "defended"


async def test_a_match_whose_client_went_away_gives_its_place_back_when_it_ends(
    attacker: LoopbackAttacker,
) -> None:
    class GoneError(Exception):
        pass

    async def leave(_: str) -> None:
        raise GoneError  # the client closes its connection without canceling the task

    attacker.gate.entered.clear()
    with pytest.raises(GoneError):
        await play_remote_match(attacker.url, MatchRequest(target="http://gate", max_turns=1), on_task=leave)
    await wait_event(attacker.gate.entered, "the abandoned match reached its target")
    attacker.gate.opened.set()
    result = await attacker.play_when_free(_defender_match())
    assert result.outcome == "defended"


async def test_the_orchestrator_offers_a_refused_match_again_and_records_it_once(
    backend: Backend, attacker: LoopbackAttacker
) -> None:
    service = limited_service(backend, None)
    held, _ = await attacker.hold()
    before = attacker.app.requests
    spec = make_spec(attackers=[{"strategy": "playbook", "url": attacker.url}])
    progress = await service.submit(spec)
    async with running(CampaignWorker(service, RemoteAttackerPlayer(None), CONFIG, name="w1")):

        async def refused_twice() -> bool:
            # Each offer is a card fetch and a message: two refused offers at least.
            return attacker.app.requests - before >= 4

        await eventually(refused_twice, "the worker offered the match again after a refusal")
        assert (await service.progress(progress.id)).done == 0, "a refusal was recorded"
        attacker.gate.opened.set()
        await asyncio.wait_for(held, DEADLINE_S)
        done = await finished(service, progress.id)
    assert (done.status, done.done, done.counts.defended, done.counts.error) == ("completed", 1, 1, 0)
    matches, total = await service.matches(progress.id, 0, 10)
    assert total == 1
    summary = matches[0]
    assert (summary.outcome, summary.error_kind, summary.attempts) == ("defended", None, 1)


async def test_a_campaign_canceled_while_its_match_waits_for_the_attacker_is_canceled_promptly(
    backend: Backend, attacker: LoopbackAttacker
) -> None:
    service = limited_service(backend, None)
    await attacker.hold()
    before = attacker.app.requests
    progress = await service.submit(make_spec(attackers=[{"strategy": "playbook", "url": attacker.url}]))
    # A long backoff (15-30 s after the first refusal): the cancel must not wait for it.
    worker = CampaignWorker(
        service, RemoteAttackerPlayer(None), replace(CONFIG, retry_backoff_s=30.0), name="w1"
    )
    async with running(worker):

        async def refused() -> bool:
            return attacker.app.requests - before >= 2

        await eventually(refused, "the worker's offer was refused")
        canceled_at = time.monotonic()
        await service.cancel(progress.id)
        done = await finished(service, progress.id)
        elapsed = time.monotonic() - canceled_at
    assert (done.status, done.counts.canceled, done.counts.error, done.counts.defended) == (
        "canceled",
        1,
        0,
        0,
    )
    assert elapsed < CONFIG.keep_alive_s + 2.0, f"the cancel took {elapsed:.2f} s"
    assert attacker.defender.requests == 0


async def test_a_match_refused_for_longer_than_its_timeout_is_an_error_never_a_defence(
    backend: Backend, attacker: LoopbackAttacker
) -> None:
    service = limited_service(backend, None)
    await attacker.hold()
    spec = make_spec(attackers=[{"strategy": "playbook", "url": attacker.url}], match_timeout_s=1.0)
    progress = await service.submit(spec)
    async with running(CampaignWorker(service, RemoteAttackerPlayer(None), CONFIG, name="w1")):
        done = await finished(service, progress.id)
    assert (done.counts.error, done.counts.defended) == (1, 0)
    summary = (await service.matches(progress.id, 0, 10))[0][0]
    assert (summary.outcome, summary.error_kind, summary.attempts) == ("error", "attacker_busy", 1)
    assert "ARENA_ATTACKER_MAX_ACTIVE_MATCHES" in (summary.error or "")
    assert attacker.defender.requests == 0


async def test_busy_backoff_grows_is_bounded_and_jittered() -> None:
    # ARENA_ORCHESTRATOR_RETRY_BACKOFF_S=0 still backs off, from the minimum, and grows.
    assert all(BUSY_MIN_BACKOFF_S / 2 <= _busy_backoff(0.0, 1) <= BUSY_MIN_BACKOFF_S for _ in range(50))
    assert all(BUSY_MIN_BACKOFF_S * 2 <= _busy_backoff(0.0, 4) <= BUSY_MIN_BACKOFF_S * 8 for _ in range(50))
    assert all(MAX_BACKOFF_S / 2 <= _busy_backoff(0.0, n) <= MAX_BACKOFF_S for n in (12, 10_000))
    assert all(1.0 <= _busy_backoff(2.0, 1) <= 2.0 for _ in range(50))
    assert all(4.0 <= _busy_backoff(2.0, 3) <= 8.0 for _ in range(50))
    assert all(MAX_BACKOFF_S / 2 <= _busy_backoff(2.0, n) <= MAX_BACKOFF_S for n in (7, 100, 10_000))
