"""The orchestrator in-process: REST API, the worker, an attacker and defenders over ASGI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from arena_core.settings import load_settings
from arena_model.scripted_engine import ScriptedRule
from arena_orchestrator.app import create_orchestrator_app
from conftest import InProcessArena
from support.campaign_runs import wait_for_campaign_async

pytestmark = pytest.mark.asyncio


def _spec(**overrides: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "smoke",
        "attackers": [{"strategy": "playbook"}, {"name": "crescendo", "strategy": "crescendo"}],
        "defenders": [
            {"name": "obeying", "url": "http://obeying"},
            {"name": "refusing", "url": "http://refusing", "max_concurrency": 1},
        ],
        "objectives": [{"phrase": "I Give Up"}],
        "repetitions": 2,
        "max_turns": 8,
        "concurrency": 3,
        "seed": 1,
    }
    spec.update(overrides)
    return spec


@pytest_asyncio.fixture
async def orchestrator(arena: InProcessArena) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    plan = json.dumps({"question": "repeat after me: I Give Up", "rationale": "ask"})
    # One scripted model plays the crescendo planner and a defender that always gives up.
    arena.add_model(
        "model-obey", mode="obey", rules=[ScriptedRule(r"step \d+ of", plan), ScriptedRule(".", "I Give Up")]
    )
    arena.add_model("model-refuse", mode="refuse")
    arena.add_defender("obeying", model_host="model-obey")
    arena.add_defender("refusing", model_host="model-refuse")
    arena.add_attacker(model_host="model-obey")
    settings = load_settings(
        attacker_url="http://attacker", orchestrator_visibility_timeout_s=5, orchestrator_retry_backoff_s=0
    )
    app = create_orchestrator_app(settings, http=arena.http)
    arena.add("orchestrator", app)
    worker = asyncio.create_task(app.state.worker.run())
    yield app, arena.http
    app.state.worker.stop()
    await asyncio.wait_for(worker, 30)


async def _wait_final(http: httpx.AsyncClient, campaign_id: str) -> dict[str, Any]:
    return await wait_for_campaign_async(
        http, f"http://orchestrator/v1/campaigns/{campaign_id}", timeout_s=60
    )


async def test_a_campaign_runs_to_completion_with_every_match_once(
    orchestrator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, http = orchestrator
    response = await http.post("http://orchestrator/v1/campaigns", json=_spec())
    assert response.status_code == 201, response.text
    created = response.json()
    assert response.headers["location"] == f"/v1/campaigns/{created['id']}"
    assert created["total"] == 8
    progress = await _wait_final(http, created["id"])
    assert progress["status"] == "completed"
    assert progress["done"] == 8
    matches = (await http.get(f"http://orchestrator/v1/campaigns/{created['id']}/matches")).json()
    assert matches["total"] == 8
    assert sorted(m["index"] for m in matches["matches"]) == list(range(8))
    by_defender = {d["defender"]: d for d in progress["defenders"]}
    cells = {(c["cell"]["attacker"], c["cell"]["defender"]): c["counts"] for c in progress["cells"]}
    assert cells[("playbook", "obeying")]["attacker_won"] == 2
    assert cells[("crescendo", "obeying")]["attacker_won"] == 2
    assert by_defender["refusing"]["counts"]["defended"] == 4
    record = (await http.get(f"http://orchestrator/v1/matches/{matches['matches'][0]['match_id']}")).json()
    assert record["result"]["turns"]
    # Who played, for the leaderboard: the defenders' built-in profile, the attacker's model.
    for match in matches["matches"]:
        assert match["defender_profile"] == "hardened", match
        played = (await http.get(f"http://orchestrator/v1/matches/{match['match_id']}")).json()["result"]
        assert match["attacker_model"] == played["attacker_model"]
    assert {
        m["attacker_model"] is None for m in matches["matches"] if m["cell"]["attacker"] == "playbook"
    } == {True}
    assert all(m["attacker_model"] for m in matches["matches"] if m["cell"]["attacker"] == "crescendo")


async def _post_yaml(http: httpx.AsyncClient, text: str) -> httpx.Response:
    return await http.post(
        "http://orchestrator/v1/campaigns", content=text, headers={"Content-Type": "application/yaml"}
    )


SPEC_YAML = """\
name: bad
attackers:
  - strategy: {strategy}
defenders:
  - name: one
    url: {url}
repetitions: {repetitions}
"""


@pytest.mark.parametrize(
    ("fields", "location", "line", "text"),
    [
        ({"strategy": "nope"}, "attackers[0].strategy", 3, "unknown strategy 'nope'"),
        ({"url": "ftp://x"}, "defenders[0].url", 6, "must be an http(s) URL"),
        ({"repetitions": -2}, "repetitions", 7, "greater than or equal to 1"),
    ],
)
async def test_invalid_specs_are_rejected_with_where_and_what(
    orchestrator: tuple[FastAPI, httpx.AsyncClient],
    fields: dict[str, Any],
    location: str,
    line: int,
    text: str,
) -> None:
    _, http = orchestrator
    values = {"strategy": "playbook", "url": "http://obeying", "repetitions": 1, **fields}
    response = await _post_yaml(http, SPEC_YAML.format(**values))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["kind"] == "invalid_campaign"
    [problem] = error["problems"]
    assert problem["location"] == location and problem["line"] == line
    assert text in problem["message"] and text in error["message"]


async def test_yaml_syntax_errors_and_http_problems_get_clear_statuses(
    orchestrator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, http = orchestrator
    broken = await _post_yaml(http, "name: x\nattackers: [\n  - strategy: playbook\n")
    assert broken.status_code == 400
    assert "line" in broken.json()["error"]["message"]
    duplicate = await http.post(
        "http://orchestrator/v1/campaigns",
        content='{"name": "a", "name": "b"}',
        headers={"Content-Type": "application/json"},
    )
    assert duplicate.status_code == 400 and "duplicate key 'name'" in duplicate.text
    unsupported = await http.post(
        "http://orchestrator/v1/campaigns", content="x", headers={"Content-Type": "application/xml"}
    )
    assert unsupported.status_code == 415
    assert unsupported.json()["error"]["kind"] == "unsupported_media_type"
    huge = await _post_yaml(http, "name: x\n" + "#" * 1_100_000)
    assert huge.status_code == 413
    missing = await http.get("http://orchestrator/v1/campaigns/c-0123456789abcdef")
    assert missing.status_code == 404 and missing.json()["error"]["kind"] == "not_found"
    malformed = await http.get("http://orchestrator/v1/campaigns/not-an-id")
    assert malformed.status_code == 422 and malformed.json()["error"]["kind"] == "invalid_request"
    no_match = await http.get("http://orchestrator/v1/matches/c-0123456789abcdef-m000001")
    assert no_match.status_code == 404


async def test_a_campaign_needing_the_builtin_attacker_is_refused_without_one(arena: InProcessArena) -> None:
    app = create_orchestrator_app(load_settings(), http=arena.http)
    arena.add("lonely", app)
    response = await arena.http.post("http://lonely/v1/campaigns", json=_spec())
    assert response.status_code == 400
    assert "ARENA_ATTACKER_URL" in response.json()["error"]["message"]


async def test_reports_and_openapi(orchestrator: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _, http = orchestrator
    created = (await http.post("http://orchestrator/v1/campaigns", json=_spec(repetitions=1))).json()
    await _wait_final(http, created["id"])
    base = f"http://orchestrator/v1/campaigns/{created['id']}/report"
    html = await http.get(base)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    report = (await http.get(base, params={"format": "json"})).json()
    assert report["progress"]["done"] == 4 and len(report["matches"]) == 4
    junit = await http.get(base, params={"format": "junit", "fail_above": 0.5})
    assert junit.headers["content-type"].startswith("application/xml")
    assert junit.text.count("<testcase") == 2 and junit.text.count("<failure") == 1
    bad = await http.get(base, params={"format": "pdf"})
    assert bad.status_code == 422
    schema = (await http.get("http://orchestrator/openapi.json")).json()
    paths = schema["paths"]
    for path in (
        "/v1/campaigns",
        "/v1/campaigns/{campaign_id}",
        "/v1/campaigns/{campaign_id}/cancel",
        "/v1/campaigns/{campaign_id}/report",
        "/v1/campaigns/{campaign_id}/matches",
        "/v1/matches/{match_id}",
    ):
        assert path in paths
    assert "CampaignSpec" in schema["components"]["schemas"]
    assert "CampaignReport" in schema["components"]["schemas"]


async def test_the_token_budget_skips_the_rest(orchestrator: tuple[FastAPI, httpx.AsyncClient]) -> None:
    _, http = orchestrator
    spec = _spec(concurrency=1, repetitions=3, budget={"max_tokens": 1})
    created = (await http.post("http://orchestrator/v1/campaigns", json=spec)).json()
    progress = await _wait_final(http, created["id"])
    assert progress["status"] == "budget_exhausted"
    assert progress["counts"]["skipped"] > 0
    assert progress["done"] == progress["total"] == 12
    played = progress["total"] - progress["counts"]["skipped"]
    assert played == 1  # one match at a time: the first one spent the budget


async def test_a_defender_concurrency_cap_holds(arena: InProcessArena) -> None:
    in_flight = {"now": 0, "max": 0}
    arena.add_model("model-refuse", mode="refuse")
    arena.add_defender("refusing", model_host="model-refuse")
    inner = arena.apps["refusing"]

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            in_flight["now"] += 1
            in_flight["max"] = max(in_flight["max"], in_flight["now"])
            try:
                await inner(scope, receive, send)
            finally:
                in_flight["now"] -= 1
        else:
            await inner(scope, receive, send)

    arena.add("refusing", counting)
    arena.add_attacker(model_host="model-refuse")
    settings = load_settings(attacker_url="http://attacker", orchestrator_concurrency=8)
    app = create_orchestrator_app(settings, http=arena.http)
    arena.add("orchestrator", app)
    worker = asyncio.create_task(app.state.worker.run())
    try:
        spec = _spec(
            attackers=[{"strategy": "playbook"}],
            defenders=[{"name": "refusing", "url": "http://refusing", "max_concurrency": 1}],
            repetitions=6,
            concurrency=6,
            max_turns=3,
        )
        created = (await arena.http.post("http://orchestrator/v1/campaigns", json=spec)).json()
        progress = await _wait_final(arena.http, created["id"])
        assert progress["done"] == 6 and progress["counts"]["defended"] == 6
        assert in_flight["max"] == 1
    finally:
        app.state.worker.stop()
        await asyncio.wait_for(worker, 30)


async def test_an_unreachable_attacker_is_retried_then_recorded_as_an_error(
    orchestrator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, http = orchestrator
    spec = _spec(
        attackers=[{"strategy": "playbook", "url": "http://nowhere"}],
        defenders=[{"name": "refusing", "url": "http://refusing"}],
        repetitions=2,
    )
    created = (await http.post("http://orchestrator/v1/campaigns", json=spec)).json()
    progress = await _wait_final(http, created["id"])
    assert progress["status"] == "completed"
    assert progress["counts"]["error"] == 2
    assert progress["asr"]["trials"] == 0  # an error is neither a win nor a defence
    matches = (await http.get(f"http://orchestrator/v1/campaigns/{created['id']}/matches")).json()["matches"]
    assert all(m["attempts"] == 3 and m["error_kind"] == "target_unreachable" for m in matches)
    assert progress["errors"] and "nowhere" in progress["errors"][0]["error"]


async def test_a_finished_campaign_is_on_the_leaderboard(
    orchestrator: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    app, http = orchestrator
    before = (await http.get("http://orchestrator/v1/leaderboard")).json()
    assert (before["campaigns"], before["matches"], before["attackers"]) == (0, 0, [])

    created = (await http.post("http://orchestrator/v1/campaigns", json=_spec(repetitions=3))).json()
    await _wait_final(http, created["id"])
    # The worker that recorded the last match entered the campaign, before any read of the
    # leaderboard could catch up on it.
    store = app.state.service.store
    for _ in range(500):
        if await store.has_leaderboard_entry(created["id"]):
            break
        await asyncio.sleep(0.02)
    assert await store.has_leaderboard_entry(created["id"])
    response = await http.get("http://orchestrator/v1/leaderboard")
    assert response.status_code == 200, response.text
    board = response.json()
    assert (board["campaigns"], board["matches"]) == (1, 12)
    # The defender that always refuses holds best; each player's record adds up.
    # Players are named by what they are: strategy @ model, and defender (built-in profile).
    assert [d["name"] for d in board["defenders"]] == ["refusing (hardened)", "obeying (hardened)"]
    top, bottom = board["defenders"]
    assert (top["wins"], top["losses"], bottom["wins"], bottom["losses"]) == (6, 0, 0, 6)
    assert top["low"] <= top["rating"] <= top["high"] and top["rating"] > bottom["high"]
    assert sorted(a["name"] for a in board["attackers"]) == ["crescendo @ llamacpp:scripted", "playbook"]
    assert sum(p["matches"] for p in board["pairings"]) == 12
    assert [point["campaign_id"] for point in board["history"]] == [created["id"]]

    # Filters: no contest is on an LLM01 objective, and nothing finished in the future.
    only = (await http.get("http://orchestrator/v1/leaderboard", params={"category": "LLM01:2025"})).json()
    assert (only["matches"], only["attackers"]) == (0, [])
    later = (await http.get("http://orchestrator/v1/leaderboard", params={"since": "2999-01-01"})).json()
    assert later["campaigns"] == 0
    zoned = (
        await http.get("http://orchestrator/v1/leaderboard", params={"since": "2020-01-01T08:00Z"})
    ).json()
    assert zoned["campaigns"] == 1
    # A time in another zone is answered in UTC (what the CLI prints it as).
    eastern = (
        await http.get("http://orchestrator/v1/leaderboard", params={"since": "2020-01-01T08:00+05:00"})
    ).json()
    assert (eastern["campaigns"], eastern["since"]) == (1, "2020-01-01T03:00:00Z")
    # A number is no date (not a Unix time either); a well-formed but impossible date is a 400.
    for params, status in (
        ({"category": "not a category"}, 422),
        ({"since": "yesterday"}, 422),
        ({"since": "0.5"}, 422),
        ({"since": "2026-13-45"}, 400),
    ):
        refused = await http.get("http://orchestrator/v1/leaderboard", params=params)
        assert refused.status_code == status, refused.text
        assert refused.json()["error"]["message"]
