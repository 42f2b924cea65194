"""The card cache against the arena's own card route: reused while fresh, revalidated with a 304."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest
from a2a.types.a2a_pb2 import AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a.card_route import create_card_route
from arena_core.a2a.client.card_cache import CardCache
from arena_core.a2a.client.card_resolver import card_url_for, fetch_agent_card
from arena_core.a2a.client.credentials import TargetCredentials

pytestmark = pytest.mark.asyncio

BASE = "http://agent.test"


class Counting:
    """Counts the requests reaching ``app`` by their conditional header and answer status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        kind = "conditional" if b"if-none-match" in headers else "plain"

        async def counted(message: dict[str, object]) -> None:
            if message["type"] == "http.response.start":
                self.seen[f"{kind} {message['status']}"] += 1
            await send(message)  # type: ignore[arg-type]

        await self.app(scope, receive, counted)  # type: ignore[arg-type]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _card() -> AgentCard:
    card = AgentCard(name="cached", description="d", version="1.0.0")
    card.supported_interfaces.append(
        AgentInterface(url=f"{BASE}/", protocol_binding="JSONRPC", protocol_version="1.0")
    )
    card.skills.append(AgentSkill(id="chat", name="chat", description="chat", tags=["chat"]))
    card.default_input_modes.append("text/plain")
    card.default_output_modes.append("text/plain")
    return card


def _served(max_age_s: int) -> tuple[Counting, httpx.AsyncClient]:
    app = Counting(
        Starlette(routes=[create_card_route(_card(), path=AGENT_CARD_WELL_KNOWN_PATH, max_age_s=max_age_s)])
    )
    return app, httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)


async def test_a_fresh_card_is_reused_and_a_stale_one_revalidated() -> None:
    app, http = _served(max_age_s=60)
    clock = Clock()
    cache = CardCache(clock=clock)
    async with http:
        first, _ = await fetch_agent_card(BASE, http, cache=cache)
        again, _ = await fetch_agent_card(BASE, http, cache=cache)
        assert app.seen == {"plain 200": 1}
        assert again == first and again is not first
        clock.now += 61
        stale, _ = await fetch_agent_card(BASE, http, cache=cache)
        assert stale == first
        assert app.seen == {"plain 200": 1, "conditional 304": 1}
        # The 304 renewed the entry's freshness.
        await fetch_agent_card(BASE, http, cache=cache)
        assert app.seen == {"plain 200": 1, "conditional 304": 1}
        assert (cache.hits, cache.revalidated) == (2, 1)
        cache.forget(card_url_for(BASE))
        await fetch_agent_card(BASE, http, cache=cache)
        assert app.seen == {"plain 200": 2, "conditional 304": 1}


async def test_max_age_zero_asks_every_time_and_credentials_have_their_own_entry() -> None:
    app, http = _served(max_age_s=0)
    cache = CardCache()
    token = TargetCredentials.bearer("secret-token-1", BASE)
    async with http:
        for _ in range(3):
            await fetch_agent_card(BASE, http, cache=cache)
        assert app.seen == {"plain 200": 1, "conditional 304": 2}
        await fetch_agent_card(BASE, http, cache=cache, credentials=token)
        assert app.seen == {"plain 200": 2, "conditional 304": 2}
    assert len(cache) == 2


async def test_without_a_cache_every_fetch_is_a_request() -> None:
    app, http = _served(max_age_s=60)
    async with http:
        for _ in range(2):
            await fetch_agent_card(BASE, http)
    assert app.seen == {"plain 200": 2}
