"""The agent card route: a strict 1.0 card for 1.0 clients, the 0.3 fields for 0.3 clients, caching."""

from __future__ import annotations

from email.utils import formatdate, parsedate_to_datetime

import httpx
import pytest
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3.types import AgentCard as AgentCardV03

from arena_core.a2a.card_validation import card_problems_v1
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

CARD = "/.well-known/agent-card.json"
V10 = {"A2A-Version": "1.0"}


async def _card(arena: InProcessArena, url: str, **headers: str) -> httpx.Response:
    return await arena.http.get(f"{url}{CARD}", headers=headers)


async def test_a_1_0_request_gets_a_strict_1_0_card(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender()
    response = await _card(arena, url, **V10)
    raw = response.json()
    assert card_problems_v1(raw) == []
    assert {(i["protocolBinding"], i["protocolVersion"]) for i in raw["supportedInterfaces"]} == {
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
    }
    assert response.headers["vary"] == "A2A-Version"


@pytest.mark.parametrize("headers", [{}, {"A2A-Version": "0.3"}], ids=["no-header", "0.3"])
async def test_a_0_3_request_gets_the_fields_0_3_clients_need(
    arena: InProcessArena, headers: dict[str, str]
) -> None:
    arena.add_model()
    url = arena.add_defender()
    raw = (await _card(arena, url, **headers)).json()
    assert raw["url"] == "http://defender/"
    assert raw["preferredTransport"] == "JSONRPC"
    assert raw["protocolVersion"].startswith("0.3")
    AgentCardV03.model_validate(raw)  # what a 0.3 client's resolver checks
    # 0.3 §5.6.4: additionalInterfaces, when given, names the main URL too.
    assert raw["additionalInterfaces"] == [
        {"transport": "JSONRPC", "url": "http://defender/"},
        {"transport": "HTTP+JSON", "url": "http://defender/rest"},
    ]
    card = parse_agent_card(raw)  # and a 1.0 client reads it too
    assert {(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces} >= {
        ("JSONRPC", "1.0"),
        ("JSONRPC", "0.3"),
    }
    # The legacy fields are the only difference from a strict 1.0 card.
    assert all("legacy" in problem for problem in card_problems_v1(raw))


@pytest.mark.parametrize(
    ("setting", "legacy"), [("true", True), ("false", False), ("yes", True), ("0", False)]
)
async def test_the_setting_can_pin_one_card_for_everyone(
    arena: InProcessArena, setting: str, legacy: bool
) -> None:
    arena.add_model()
    url = arena.add_defender(card_v03_compat=setting)
    for headers in ({}, V10):
        response = await _card(arena, url, **headers)
        assert ("url" in response.json()) is legacy
        assert "vary" not in response.headers


async def test_the_attacker_serves_its_card_the_same_way(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_attacker()
    assert card_problems_v1((await _card(arena, url, **V10)).json()) == []
    assert (await _card(arena, url)).json()["url"] == "http://attacker/"


async def test_cache_headers(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender(card_max_age_s=120)
    response = await _card(arena, url)
    assert response.headers["cache-control"] == "public, max-age=120"
    assert response.headers["etag"].startswith('"')
    assert parsedate_to_datetime(response.headers["last-modified"]).tzinfo is not None
    assert response.headers["content-type"] == "application/json"
    strict = await _card(arena, url, **V10)
    assert strict.headers["etag"] != response.headers["etag"]  # two representations, two tags


async def test_if_none_match_gets_304(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender()
    first = await _card(arena, url, **V10)
    etag = first.headers["etag"]
    for candidate in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        again = await _card(arena, url, **V10, **{"If-None-Match": candidate})
        assert again.status_code == 304, candidate
        assert again.content == b""
        assert again.headers["etag"] == etag
        assert again.headers["cache-control"] == first.headers["cache-control"]
    # The 0.3 rendering has another tag: the 1.0 card's tag does not validate it.
    assert (await _card(arena, url, **{"If-None-Match": etag})).status_code == 200
    assert (await _card(arena, url, **V10, **{"If-None-Match": '"stale"'})).status_code == 200


async def test_if_modified_since_gets_304_unless_if_none_match_disagrees(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender()
    last_modified = (await _card(arena, url)).headers["last-modified"]
    assert (await _card(arena, url, **{"If-Modified-Since": last_modified})).status_code == 304
    earlier = formatdate(parsedate_to_datetime(last_modified).timestamp() - 60, usegmt=True)
    assert (await _card(arena, url, **{"If-Modified-Since": earlier})).status_code == 200
    assert (await _card(arena, url, **{"If-Modified-Since": "yesterday"})).status_code == 200
    # RFC 9110 §13.1.3: If-None-Match, when present, decides alone.
    both = {"If-Modified-Since": last_modified, "If-None-Match": '"stale"'}
    assert (await _card(arena, url, **both)).status_code == 200


async def test_head_is_answered_without_a_body(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender()
    response = await arena.http.head(f"{url}{CARD}")
    assert response.status_code == 200 and response.content == b""
    assert "etag" in response.headers
