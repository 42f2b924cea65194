"""The dashboard in headless Debian chromium against an orchestrator with bearer tokens on.

A real orchestrator app (``create_orchestrator_app``, in-memory backend, no
worker: campaigns stay queued) with ``api_tokens`` and ``api_read_tokens``,
served by uvicorn on a loopback port; its auth middleware is the real one. The
browser checks the sign-in flow: a page without a token asks for one and stops
polling, a malformed token is never sent, a wrong one is refused, the right one
shows the campaigns and lives in sessionStorage only (not localStorage, a
cookie or the URL), signing out forgets it, a read-only token cannot cancel,
and reports are downloaded with the token in the Authorization header.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, Request, Route, expect

from arena.local_services import free_port
from arena_core.settings import load_settings
from arena_orchestrator.app import create_orchestrator_app
from support.browser import (
    SKIP_REASON,
    PageLog,
    find_chromium,
    launch_chromium,
    open_page,
    requests_while_time_passes,
)
from support.processes import wait_until_ready

pytestmark = pytest.mark.system

FULL = "dashboard-full-token-0123456789abcdef"
READ = "dashboard-read-token-0123456789abcdef"
WRONG = "dashboard-wrong-token-0123456789abcdef"
TOKEN_KEY = "arena.apiToken"
EN_DASH = "\u2013"
POLL_MS = 1_500
"""The dashboard's polling period for a campaign that is not final (``POLL_MS`` in dashboard.js)."""
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'><svg onload=alert(3)>"

NO_TOKEN_MESSAGE = "Unauthorized: this endpoint needs an 'Authorization: Bearer' token"
BAD_TOKEN_MESSAGE = "Unauthorized: the bearer token is not valid here"

SPEC = {
    "attackers": [{"strategy": "playbook"}],
    "defenders": [{"name": "d", "url": "http://defender:8081"}],
    "objectives": [{"name": "o", "phrase": "I Give Up"}],
    "repetitions": 1,
    "max_turns": 1,
}


@dataclass(frozen=True)
class Orchestrator:
    url: str
    campaigns: dict[str, str]
    """Campaign name -> id (newest last)."""


@contextmanager
def _serve(app: FastAPI) -> Iterator[str]:
    """Serve ``app`` with uvicorn (lifespan on) on a free loopback port, in a thread; yield its URL."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="on",
        ws="none",
        access_log=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="dashboard-auth-server", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{url}/healthz", timeout_s=20)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        pytest.skip(SKIP_REASON)
    with launch_chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def orchestrator() -> Iterator[Orchestrator]:
    settings = load_settings(
        api_tokens=FULL,
        api_read_tokens=READ,
        attacker_url="http://attacker:8082",
        redis_url=None,
    )
    app = create_orchestrator_app(settings, run_worker=False)
    with _serve(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.get("/v1/campaigns").status_code == 401
        campaigns: dict[str, str] = {}
        for name in ("first-run", "second-run"):
            created = client.post(
                "/v1/campaigns",
                content=json.dumps({"name": name, **SPEC}),
                headers={"Content-Type": "application/json", "Authorization": f"Bearer {FULL}"},
            )
            assert created.status_code == 201, created.text
            campaigns[name] = created.json()["id"]
        yield Orchestrator(url, campaigns)


@pytest.fixture
def page(browser: Browser) -> Iterator[tuple[Page, PageLog]]:
    with open_page(browser) as opened:
        yield opened


def _api_requests(log: PageLog) -> list[str]:
    return [r for r in log.requests if "/v1/" in r]


def _unexpected(log: PageLog, *statuses: int) -> list[str]:
    """The page's problems, less the refusals (and chromium's console line for each) the test asked for."""
    allowed = tuple(f"status of {s} " for s in statuses)
    return [
        problem
        for problem in log.problems()
        if not any(problem.startswith(f"http error: {s} ") for s in statuses)
        and not (problem.startswith("error: Failed to load resource") and any(a in problem for a in allowed))
    ]


def _sign_in(tab: Page, token: str) -> None:
    tab.get_by_test_id("token-input").fill(token)
    tab.get_by_test_id("signin-submit").click()


def _storage(tab: Page, which: str) -> dict[str, str]:
    entries: dict[str, str] = tab.evaluate(f"Object.fromEntries(Object.entries(window.{which}))")
    return entries


def _no_markup_from_data(tab: Page) -> None:
    for selector in ("#view img", "#view script", "#view svg", "[onerror]", "[onload]"):
        assert tab.locator(selector).count() == 0, selector
    assert tab.evaluate("document.scripts.length") == 1


def test_sign_in_with_a_token_kept_in_session_storage_only(
    orchestrator: Orchestrator, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    sent: list[Request] = []
    tab.on("request", lambda request: sent.append(request) if "/v1/" in request.url else None)
    tab.clock.install()
    tab.goto(f"{orchestrator.url}/dashboard")

    # No token: the sign-in panel with the server's message, and no polling behind it.
    signin = tab.get_by_test_id("signin")
    expect(signin).to_be_visible()
    expect(tab.get_by_test_id("signin-message")).to_have_text(NO_TOKEN_MESSAGE)
    token_input = tab.get_by_test_id("token-input")
    expect(token_input).to_have_attribute("type", "password")
    expect(token_input).to_have_attribute("autocomplete", "off")
    expect(token_input).to_be_focused()
    assert tab.locator("label[for='api-token']").inner_text() == "API token"
    assert token_input.get_attribute("name") is None  # never part of a form submission
    expect(tab.get_by_test_id("signout")).to_be_hidden()
    expect(tab.get_by_test_id("live")).to_be_hidden()
    asked = len(_api_requests(log))
    assert asked == 1
    later = requests_while_time_passes(tab, log, 3_500)  # more than two polling periods
    assert [r for r in later if "/v1/" in r] == [], "the page polled behind the sign-in panel"

    # A malformed token is never sent.
    for malformed in ("too-short", "has spaces inside 0123456789", "x" * 513, "semi;colon-0123456789abcdef"):
        _sign_in(tab, malformed)
        expect(tab.get_by_test_id("signin-problem")).to_contain_text(f"16{EN_DASH}512 characters")
    assert len(_api_requests(log)) == asked

    # A well-formed but wrong token is refused, and not kept.
    _sign_in(tab, WRONG)
    expect(tab.get_by_test_id("signin-status")).to_contain_text("The token was refused.")
    expect(tab.get_by_test_id("signin-message")).to_have_text(BAD_TOKEN_MESSAGE)
    expect(tab.get_by_test_id("signout")).to_be_hidden()
    assert TOKEN_KEY not in _storage(tab, "sessionStorage")

    # The right token: the campaign list, polled with the token.
    _sign_in(tab, FULL)
    for campaign_id in orchestrator.campaigns.values():
        row = tab.get_by_test_id(f"campaign-{campaign_id}")
        expect(row).to_be_visible()
        expect(row.get_by_test_id("status")).to_have_text("queued")
    expect(tab.get_by_test_id("campaign-count")).to_have_text("2 campaigns")
    expect(tab.get_by_test_id("signin")).to_have_count(0)
    expect(tab.get_by_test_id("signout")).to_be_visible()
    expect(tab.get_by_test_id("live")).to_be_visible()

    # Where the token is (sessionStorage) and where it is not (localStorage, cookies, URLs).
    assert _storage(tab, "sessionStorage") == {TOKEN_KEY: FULL}
    assert _storage(tab, "localStorage") == {}
    assert tab.context.cookies() == []
    assert tab.evaluate("document.cookie") == ""
    assert FULL not in tab.url
    assert all(FULL not in request.url for request in sent)
    assert all(FULL not in line for line in log.requests)
    authorizations = [request.all_headers().get("authorization") for request in sent]
    assert authorizations[0] is None  # the first request, before the sign-in
    assert f"Bearer {WRONG}" in authorizations
    assert authorizations[-1] == f"Bearer {FULL}"

    # It survives a reload of the tab (sessionStorage) and a navigation.
    tab.reload()
    first = orchestrator.campaigns["first-run"]
    tab.get_by_test_id(f"campaign-{first}").get_by_test_id("campaign-link").click()
    expect(tab.get_by_test_id("campaign-name")).to_have_text("first-run")
    expect(tab.get_by_test_id("cancel")).to_be_visible()

    # Signing out forgets it and asks again, on the current view.
    tab.get_by_test_id("signout").click()
    expect(tab.get_by_test_id("signin")).to_be_visible()
    expect(tab.get_by_test_id("signin-status")).not_to_contain_text("refused")
    expect(tab.get_by_test_id("signout")).to_be_hidden()
    assert _storage(tab, "sessionStorage") == {}
    _sign_in(tab, FULL)
    expect(tab.get_by_test_id("campaign-name")).to_have_text("first-run")
    expect(tab).to_have_url(re.compile(rf"/dashboard#/campaigns/{first}$"))

    assert _unexpected(log, 401) == []


def test_a_read_only_token_follows_campaigns_but_cannot_cancel(
    orchestrator: Orchestrator, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    campaign_id = orchestrator.campaigns["second-run"]
    tab.clock.install()
    tab.goto(f"{orchestrator.url}/dashboard#/campaigns/{campaign_id}")
    _sign_in(tab, READ)
    expect(tab.get_by_test_id("campaign-name")).to_have_text("second-run")
    expect(tab.get_by_test_id("status")).to_have_text("queued")
    cancel = tab.get_by_test_id("cancel")
    cancel.click()
    expect(cancel).to_have_text("Click again to cancel")
    cancel.click()

    banner = tab.get_by_test_id("banner")
    expect(banner).to_contain_text("This token is read-only: it can follow campaigns but cannot cancel them.")
    expect(cancel).to_be_hidden()
    expect(tab.get_by_test_id("live")).to_be_visible()  # still following the campaign
    # Polls succeed meanwhile and the message stays. A poll is timed only once the one before has been
    # handled, so by the third poll's request the first two have been shown.
    for _ in range(3):
        with tab.expect_request(lambda request: request.url.endswith(f"/v1/campaigns/{campaign_id}")):
            tab.clock.run_for(POLL_MS)
    expect(banner).to_contain_text("read-only")
    expect(cancel).to_be_hidden()

    # No cancel button for this token elsewhere either; the campaign was not touched.
    tab.get_by_test_id("home-link").click()
    tab.get_by_test_id(f"campaign-{campaign_id}").get_by_test_id("campaign-link").click()
    # Wait for the campaign view: until it replaces the list, "status" matches every row's badge.
    expect(tab).to_have_url(re.compile(rf"/dashboard#/campaigns/{campaign_id}$"))
    expect(tab.get_by_test_id("campaign-name")).to_have_text("second-run")
    expect(tab.get_by_test_id("status")).to_have_text("queued")
    expect(cancel).to_be_hidden()
    with httpx.Client(base_url=orchestrator.url, timeout=10) as client:
        progress = client.get(f"/v1/campaigns/{campaign_id}", headers={"Authorization": f"Bearer {READ}"})
        assert progress.json()["status"] == "queued"

    assert _unexpected(log, 401, 403) == []
    assert [p for p in log.http_errors if p.startswith("403 ")] == [
        f"403 POST {orchestrator.url}/v1/campaigns/{campaign_id}/cancel"
    ]


def test_reports_are_downloaded_with_the_token(
    orchestrator: Orchestrator, page: tuple[Page, PageLog], tmp_path: Path
) -> None:
    tab, log = page
    campaign_id = orchestrator.campaigns["first-run"]
    reports: list[Request] = []
    tab.on("request", lambda request: reports.append(request) if "/report?" in request.url else None)
    tab.goto(f"{orchestrator.url}/dashboard#/campaigns/{campaign_id}")
    _sign_in(tab, READ)
    expect(tab.get_by_test_id("campaign-name")).to_have_text("first-run")

    contents: dict[str, str] = {}
    for fmt, extension in (("json", "json"), ("html", "html"), ("junit", "xml")):
        link = tab.get_by_test_id(f"report-{fmt}")
        assert link.get_attribute("href") == f"/v1/campaigns/{campaign_id}/report?format={fmt}"
        with tab.expect_download() as download_info:
            link.click()
        download = download_info.value
        assert download.suggested_filename == f"{campaign_id}.{extension}"
        assert download.url.startswith("blob:")
        target = tmp_path / download.suggested_filename
        download.save_as(target)
        contents[fmt] = target.read_text(encoding="utf-8")

    report = json.loads(contents["json"])
    assert json.dumps(report).count(campaign_id) >= 1
    assert contents["html"].lstrip().lower().startswith("<!doctype html")
    assert "first-run" in contents["html"]
    assert "<testsuite" in contents["junit"]
    # Each report was fetched by the page, with the header, and the token stayed out of the URL.
    assert len(reports) == 3
    for request in reports:
        assert request.all_headers().get("authorization") == f"Bearer {READ}"
        assert READ not in request.url
    assert len(tab.context.pages) == 1  # downloads, not new tabs
    assert _unexpected(log, 401) == []  # no CSP report, no failed request


def test_the_sign_in_panel_shows_a_hostile_server_message_as_text(
    orchestrator: Orchestrator, page: tuple[Page, PageLog]
) -> None:
    tab, log = page

    def hostile_refusal(route: Route) -> None:
        body = {"error": {"kind": "unauthorized", "message": f"refused {HOSTILE}", "problems": [HOSTILE]}}
        route.fulfill(
            status=401,
            content_type="application/json",
            headers={"WWW-Authenticate": 'Bearer realm="a2a-arena"'},
            body=json.dumps(body),
        )

    # The page is the real orchestrator's; only the API's answer is replaced, in the browser.
    tab.route(re.compile(r"/v1/campaigns\?limit=50$"), hostile_refusal)
    tab.goto(f"{orchestrator.url}/dashboard")
    expect(tab.get_by_test_id("signin-message")).to_have_text(f"refused {HOSTILE}")
    _no_markup_from_data(tab)
    _sign_in(tab, FULL)
    expect(tab.get_by_test_id("signin-status")).to_contain_text("The token was refused.")
    expect(tab.get_by_test_id("signin-message")).to_have_text(f"refused {HOSTILE}")
    _no_markup_from_data(tab)
    assert tab.title() == "Sign in · A2A Arena"
    assert log.dialogs == []
    assert log.page_errors == []
    assert _unexpected(log, 401) == []
