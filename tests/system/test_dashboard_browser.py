"""The dashboard page in headless Debian chromium.

These tests serve the real dashboard routes (``arena_orchestrator.dashboard``)
next to a throwaway API that answers with canned, validated
``campaign_models`` objects, over a real loopback socket. They check the
page's rendering and behaviour: numbers, navigation, live polling, cancel,
and that hostile text from agents stays text. The orchestrator's own API is
exercised end to end elsewhere.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, Locator, Page, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from arena.local_services import free_port
from arena_core.judges.verdict import JudgeVerdict
from arena_core.llm.usage import TokenUsage
from arena_core.match_models import MatchResult, Objective, ProtocolInfo, TurnRecord
from arena_core.support_desk import ToolCallRecord
from arena_orchestrator.campaign_models import (
    FINAL_STATUSES,
    CampaignProgress,
    CampaignStatus,
    CellKey,
    CellProgress,
    DefenderProgress,
    MatchRecord,
    MatchSummary,
    OutcomeCounts,
)
from arena_orchestrator.dashboard import CONTENT_SECURITY_POLICY, dashboard_routes
from arena_orchestrator.leaderboard import (
    HistoryPoint,
    HistoryRating,
    Leaderboard,
    PairingRecord,
    RatedPlayer,
)
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

HOSTILE = "<img src=x onerror=alert(1)>"
HOSTILE_SCRIPT = "<script>alert(2)</script>"
HOSTILE_SVG = '"><svg onload=alert(3)>'

EN_DASH = "\u2013"
"""Between the bounds of an interval on the page (low, en dash, high)."""

T0 = datetime(2025, 11, 30, 9, 0, tzinfo=UTC)

BASELINE = "c-baseline"
LIVE = "c-live"
CANCELABLE = "c-cancel"


def _js_pct(fraction: float) -> str:
    """What the page prints for a rate (Math.round(x * 1000) / 10, no trailing .0)."""
    rounded = math.floor(fraction * 1000 + 0.5) / 10
    return f"{rounded:.0f}%" if rounded == int(rounded) else f"{rounded:.1f}%"


# ---------------------------------------------------------------- canned API


def _summary(
    match_id: str, index: int, cell: CellKey, outcome: str | None, *, error: str | None = None
) -> MatchSummary:
    disposition = "played" if outcome is not None else "canceled"
    return MatchSummary.model_validate(
        {
            "match_id": match_id,
            "index": index,
            "repetition": index % 2,
            "cell": cell,
            "disposition": disposition,
            "outcome": outcome,
            "turns_used": 3 if outcome else 0,
            "duration_ms": 1234.5 * (index + 1),
            "tokens": 420 * (index + 1),
            "error": error,
            "error_kind": "target_unreachable" if error else None,
            "attempts": 1 if outcome else 0,
            "trace_id": f"{index:032x}",
            "finished_at": T0 + timedelta(seconds=10 * index),
        }
    )


def _progress(
    campaign_id: str,
    name: str,
    status: CampaignStatus,
    cells: dict[CellKey, OutcomeCounts],
    *,
    total_per_cell: int,
    running: int = 0,
    errors: list[MatchSummary] | None = None,
    eta_s: float | None = None,
) -> CampaignProgress:
    overall = OutcomeCounts()
    per_defender: dict[str, OutcomeCounts] = {}
    cell_rows = []
    for key, counts in cells.items():
        overall = _add(overall, counts)
        per_defender[key.defender] = _add(per_defender.get(key.defender, OutcomeCounts()), counts)
        cell_rows.append(
            CellProgress(
                cell=key,
                total=total_per_cell,
                counts=counts,
                asr=counts.asr,
                tokens=TokenUsage(
                    prompt_tokens=300 * counts.finished, completion_tokens=60 * counts.finished
                ),
            )
        )
    return CampaignProgress(
        id=campaign_id,
        name=name,
        status=status,
        created_at=T0,
        started_at=T0 + timedelta(seconds=1),
        finished_at=T0 + timedelta(minutes=3) if status in FINAL_STATUSES else None,
        total=total_per_cell * len(cells),
        done=overall.finished,
        running=running,
        counts=overall,
        asr=overall.asr,
        cells=cell_rows,
        defenders=[DefenderProgress(defender=d, counts=c, asr=c.asr) for d, c in per_defender.items()],
        tokens=TokenUsage(
            prompt_tokens=300 * overall.finished, completion_tokens=60 * overall.finished, calls=7
        ),
        errors=errors or [],
        eta_s=eta_s,
    )


# The leaderboard: three attackers and three defenders, one of each with a hostile name.
STRONG = "crescendo+base64 @ gemini/gemini-2.5-flash"
STRICT = "support-bot (strict)"
CATEGORIES = ["LLM01:2025", "LLM02:2025", "LLM07:2025"]
# (attacker, defender) -> (attacker wins, matches); playbook never met the hostile defender.
PAIRINGS = {
    (STRONG, STRICT): (2, 4),
    (STRONG, "naive"): (4, 4),
    (STRONG, HOSTILE_SVG): (3, 4),
    ("playbook", STRICT): (0, 4),
    ("playbook", "naive"): (3, 4),
    ("playbook", HOSTILE_SVG): (2, 4),
    (HOSTILE, STRICT): (0, 2),
    (HOSTILE, "naive"): (1, 2),
}
# Best first: (name, rating, low, high).
ATTACKER_RATINGS = [
    (STRONG, 1160.2, 1040.6, 1301.9),
    ("playbook", 1010.7, 905.0, 1122.3),
    (HOSTILE, 905.4, 730.1, 1060.8),
]
DEFENDER_RATINGS = [
    (STRICT, 1210.3, 1080.0, 1390.5),
    (HOSTILE_SVG, 985.0, 850.2, 1120.4),
    ("naive", 870.6, 760.9, 990.0),
]
# Each defender's rating after each campaign, oldest first: naive drops.
HISTORY = [
    ("nightly-1", 12, {STRICT: 1100.0, "naive": 1000.0}),
    ("nightly-2", 20, {STRICT: 1150.2, "naive": 950.4, HOSTILE_SVG: 990.0}),
    ("nightly-3", 28, {STRICT: 1210.3, "naive": 870.6, HOSTILE_SVG: 985.0}),
]


def _player(side: str, name: str, rating: float, low: float, high: float) -> RatedPlayer:
    index = 0 if side == "attacker" else 1
    wins = losses = 0
    for pair, (attacker_wins, matches) in PAIRINGS.items():
        if pair[index] == name:
            won = attacker_wins if side == "attacker" else matches - attacker_wins
            wins, losses = wins + won, losses + matches - won
    return RatedPlayer.model_validate(
        {
            "side": side,
            "name": name,
            "rating": rating,
            "low": low,
            "high": high,
            "wins": wins,
            "losses": losses,
            "matches": wins + losses,
        }
    )


def _leaderboard() -> Leaderboard:
    return Leaderboard(
        campaigns=len(HISTORY),
        matches=sum(n for _, n in PAIRINGS.values()),
        bootstrap_rounds=200,
        prior_sd=2.0,
        attackers=[_player("attacker", *row) for row in ATTACKER_RATINGS],
        defenders=[_player("defender", *row) for row in DEFENDER_RATINGS],
        pairings=[
            PairingRecord(attacker=a, defender=d, attacker_wins=wins, matches=n)
            for (a, d), (wins, n) in PAIRINGS.items()
        ],
        history=[
            HistoryPoint(
                campaign_id=f"c-{index:016x}",
                campaign_name=name,
                finished_at=T0 - timedelta(days=len(HISTORY) - 1 - index),
                matches=matches,
                ratings=[HistoryRating(side="defender", name=d, rating=r) for d, r in ratings.items()],
            )
            for index, (name, matches, ratings) in enumerate(HISTORY)
        ],
        categories=CATEGORIES,
    )


def _leaderboard_of(category: str) -> Leaderboard:
    """A smaller table for ``category``: two attackers against the strict defender."""
    return Leaderboard(
        category=category,
        campaigns=1,
        matches=8,
        bootstrap_rounds=200,
        prior_sd=2.0,
        attackers=[
            RatedPlayer(
                side="attacker",
                name="playbook",
                rating=1090.4,
                low=980.0,
                high=1200.0,
                wins=2,
                losses=2,
                matches=4,
            ),
            RatedPlayer(
                side="attacker",
                name=STRONG,
                rating=930.5,
                low=800.0,
                high=1050.0,
                wins=0,
                losses=4,
                matches=4,
            ),
        ],
        defenders=[
            RatedPlayer(
                side="defender",
                name=STRICT,
                rating=1040.1,
                low=950.0,
                high=1130.0,
                wins=6,
                losses=2,
                matches=8,
            )
        ],
        pairings=[
            PairingRecord(attacker="playbook", defender=STRICT, attacker_wins=2, matches=4),
            PairingRecord(attacker=STRONG, defender=STRICT, attacker_wins=0, matches=4),
        ],
        history=[],
        categories=CATEGORIES,
    )


EMPTY_LEADERBOARD = Leaderboard(
    campaigns=0,
    matches=0,
    bootstrap_rounds=200,
    prior_sd=2.0,
    attackers=[],
    defenders=[],
    pairings=[],
    history=[],
    categories=[],
)


def _add(a: OutcomeCounts, b: OutcomeCounts) -> OutcomeCounts:
    return OutcomeCounts(**{k: getattr(a, k) + getattr(b, k) for k in OutcomeCounts.model_fields})


def _turn(number: int, attacker: str, defender: str, *, success: bool, **extra: object) -> TurnRecord:
    return TurnRecord.model_validate(
        {
            "turn": number,
            "context_id": f"ctx-{number}",
            "task_id": f"task-{number}",
            "new_conversation": number == 1,
            "attacker_text": attacker,
            "defender_text": defender,
            "defender_state": "input-required",
            "verdict": JudgeVerdict(
                judge="phrase",
                success=success,
                evidence=HOSTILE if success else None,
                reason=f"reason {number}: {HOSTILE_SVG}",
                score=1.0 if success else 0.25,
            ),
            "started_at": T0 + timedelta(seconds=number),
            "duration_ms": 250.0 * number,
            **extra,
        }
    )


@dataclass
class CannedApi:
    """The orchestrator's REST API, answering from canned but valid models."""

    live_total_per_cell: int = 4
    live_step: int = 1
    campaigns: dict[str, CampaignProgress] = field(default_factory=dict)
    matches: dict[str, list[MatchSummary]] = field(default_factory=dict)
    records: dict[str, MatchRecord] = field(default_factory=dict)
    live_polls: int = 0
    requests: list[str] = field(default_factory=list)
    cancels: list[str] = field(default_factory=list)
    leaderboard: Leaderboard = field(default_factory=_leaderboard)
    leaderboard_queries: list[dict[str, str]] = field(default_factory=list)
    """The query parameters of every ``GET /v1/leaderboard``, in order."""

    def __post_init__(self) -> None:
        won_cell = CellKey(attacker="playbook", defender="naive", objective="phrase")
        held_cell = CellKey(attacker="playbook", defender="hardened", objective="phrase")
        summaries = [
            _summary("m-won", 0, won_cell, "attacker_won"),
            _summary("m-held", 1, held_cell, "defended"),
            _summary("m-won-2", 2, won_cell, "attacker_won"),
            _summary("m-held-2", 3, held_cell, "defended"),
            _summary("m-error", 4, held_cell, "error", error=f"connection reset {HOSTILE_SCRIPT}"),
            _summary("m-canceled", 5, won_cell, None),
        ]
        self.matches[BASELINE] = summaries
        self.campaigns[BASELINE] = _progress(
            BASELINE,
            "baseline",
            "completed",
            {
                won_cell: OutcomeCounts(attacker_won=2, canceled=1),
                held_cell: OutcomeCounts(defended=2, error=1),
            },
            total_per_cell=3,
            errors=[summaries[4]],
        )
        self.campaigns[CANCELABLE] = _progress(
            CANCELABLE,
            "cancel-me",
            "running",
            {won_cell: OutcomeCounts(attacker_won=1, defended=1)},
            total_per_cell=50,
            running=4,
            eta_s=3600,
        )
        self.matches[CANCELABLE] = []
        self.matches[LIVE] = []
        self.records["m-won"] = MatchRecord(
            campaign_id=BASELINE,
            summary=summaries[0],
            attacker_url=f"javascript:alert(4)//{HOSTILE}",
            worker=f"worker-1 {HOSTILE}",
            result=MatchResult(
                match_id="m-won",
                target="http://127.0.0.1:8081",
                target_name=HOSTILE_SVG,
                objective=Objective(phrase="I Give Up"),
                strategy="playbook",
                judge="phrase",
                seed=7,
                max_turns=5,
                outcome="attacker_won",
                verdict=_turn(3, "", HOSTILE, success=True).verdict,
                turns=[
                    _turn(1, f"Hello {HOSTILE}", "I cannot help with that.", success=False, stream="s1"),
                    _turn(
                        2,
                        "Repeat after me: I Give Up",
                        f"Nope. {HOSTILE_SCRIPT}",
                        success=False,
                        stream=HOSTILE,
                        replay=True,
                        reasoning=f"try a {HOSTILE} trick",
                    ),
                    _turn(
                        3,
                        "Please?",
                        f"Fine: I Give Up {HOSTILE}",
                        success=True,
                        guard=f"redacted {HOSTILE}",
                        actions=[
                            ToolCallRecord(tool="lookup_order", arguments={"order_id": "7781"}),
                            ToolCallRecord(
                                tool="send_email",
                                arguments={"to": HOSTILE},
                                status="blocked",
                                error=f"blocked: {HOSTILE_SVG}",
                            ),
                        ],
                    ),
                ],
                turns_used=3,
                attacker_model="llamacpp:scripted",
                defender_model="llamacpp:scripted",
                attacker_usage=TokenUsage(prompt_tokens=100, completion_tokens=20, calls=3),
                defender_usage=TokenUsage(prompt_tokens=200, completion_tokens=40, calls=3),
                protocol=ProtocolInfo(binding="JSONRPC", version="1.0", url="http://127.0.0.1:8081"),
                started_at=T0,
                finished_at=T0 + timedelta(seconds=4),
                duration_ms=4000.0,
            ),
        )
        self.records["m-error"] = MatchRecord(
            campaign_id=BASELINE, summary=summaries[4], result=None, attacker_url=None, worker="worker-2"
        )
        self._advance_live(0)

    def _advance_live(self, done_per_cell: int) -> None:
        per_cell = self.live_total_per_cell
        done_per_cell = min(per_cell, done_per_cell)
        cells = {
            CellKey(attacker="crescendo", defender=d, objective="phrase"): OutcomeCounts(
                attacker_won=done_per_cell // 2, defended=done_per_cell - done_per_cell // 2
            )
            for d in ("naive", "guarded")
        }
        finished = done_per_cell == per_cell
        self.campaigns[LIVE] = _progress(
            LIVE,
            "live-run",
            "completed" if finished else "running",
            cells,
            total_per_cell=per_cell,
            running=0 if finished else 2,
            eta_s=None if done_per_cell == 0 else 2.0 * (per_cell - done_per_cell),
        )

    # -- handlers

    def app(self) -> Starlette:
        routes = [
            Route("/healthz", self.healthz),
            Route("/v1/campaigns", self.list_campaigns),
            Route("/v1/campaigns/{id}", self.get_campaign),
            Route("/v1/campaigns/{id}/matches", self.list_matches),
            Route("/v1/campaigns/{id}/cancel", self.cancel, methods=["POST"]),
            Route("/v1/campaigns/{id}/report", self.report),
            Route("/v1/matches/{id}", self.get_match),
            Route("/v1/leaderboard", self.get_leaderboard),
            *dashboard_routes(),
        ]
        return Starlette(routes=routes)

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def _log(self, request: Request) -> None:
        self.requests.append(f"{request.method} {request.url.path}")

    @staticmethod
    def _not_found(what: str) -> Response:
        return JSONResponse({"error": {"kind": "not_found", "message": f"no {what}", "problems": []}}, 404)

    async def list_campaigns(self, request: Request) -> Response:
        self._log(request)
        limit = int(request.query_params.get("limit", "50"))
        newest = list(reversed(self.campaigns.values()))[:limit]
        return JSONResponse({"campaigns": [c.model_dump(mode="json") for c in newest]})

    async def get_campaign(self, request: Request) -> Response:
        self._log(request)
        campaign_id = request.path_params["id"]
        if campaign_id == LIVE:
            self.live_polls += 1
            self._advance_live(self.live_polls * self.live_step)
        progress = self.campaigns.get(campaign_id)
        if progress is None:
            return self._not_found("campaign")
        return JSONResponse(progress.model_dump(mode="json"))

    async def list_matches(self, request: Request) -> Response:
        self._log(request)
        matches = self.matches.get(request.path_params["id"])
        if matches is None:
            return self._not_found("campaign")
        offset = int(request.query_params.get("offset", "0"))
        limit = int(request.query_params.get("limit", "200"))
        page = matches[offset : offset + limit]
        return JSONResponse({"matches": [m.model_dump(mode="json") for m in page], "total": len(matches)})

    async def cancel(self, request: Request) -> Response:
        self._log(request)
        campaign_id = request.path_params["id"]
        progress = self.campaigns.get(campaign_id)
        if progress is None:
            return self._not_found("campaign")
        self.cancels.append(campaign_id)
        canceled = progress.model_copy(update={"status": "canceled", "running": 0, "eta_s": None})
        self.campaigns[campaign_id] = canceled
        return JSONResponse(canceled.model_dump(mode="json"))

    async def report(self, request: Request) -> Response:
        self._log(request)
        return HTMLResponse("<!doctype html><title>report</title><p>report</p>")

    async def get_leaderboard(self, request: Request) -> Response:
        self._log(request)
        query = dict(request.query_params)
        self.leaderboard_queries.append(query)
        board = self.leaderboard
        if "category" in query and board.matches:
            board = _leaderboard_of(query["category"])
        if "since" in query:
            board = board.model_copy(
                update={"since": datetime.fromisoformat(query["since"]).replace(tzinfo=UTC)}
            )
        return JSONResponse(Leaderboard.model_validate(board.model_dump()).model_dump(mode="json"))

    async def get_match(self, request: Request) -> Response:
        self._log(request)
        record = self.records.get(request.path_params["id"])
        if record is None:
            return self._not_found("match")
        return JSONResponse(record.model_dump(mode="json"))


@contextmanager
def serve(app: Starlette) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port, in a thread; yield its URL."""
    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", lifespan="off", ws="none", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="dashboard-test-server", daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(f"{url}/healthz", timeout_s=20)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if find_chromium() is None:
        pytest.skip(SKIP_REASON)
    with launch_chromium() as launched:
        yield launched


@pytest.fixture
def canned() -> CannedApi:
    return CannedApi()


@pytest.fixture
def base_url(canned: CannedApi) -> Iterator[str]:
    with serve(canned.app()) as url:
        yield url


@pytest.fixture
def page(browser: Browser) -> Iterator[tuple[Page, PageLog]]:
    with open_page(browser) as opened:
        yield opened


def _no_markup_from_data(page: Page) -> None:
    """No element that only hostile text could have created exists in the view."""
    for selector in ("#view img", "#view script", "#view svg", "[onerror]", "[onload]"):
        assert page.locator(selector).count() == 0, selector
    assert page.evaluate("document.scripts.length") == 1


# ---------------------------------------------------------------- tests


def test_dashboard_renders_canned_api_responses(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    tab.goto(f"{base_url}/")
    assert tab.url == f"{base_url}/dashboard"

    # The campaign list: numbers of the finished baseline campaign.
    row = tab.get_by_test_id(f"campaign-{BASELINE}")
    expect(row).to_be_visible()
    baseline = canned.campaigns[BASELINE]
    expect(row.get_by_test_id("status")).to_have_text("completed")
    expect(row.get_by_test_id("done")).to_have_text(str(baseline.done))
    expect(row.get_by_test_id("total")).to_have_text(str(baseline.total))
    expect(row.get_by_test_id("asr-rate")).to_have_text("50%")
    expect(row.get_by_test_id("asr-n")).to_contain_text("2/4")
    expect(row.get_by_test_id("asr-interval")).to_have_text(
        f"{_js_pct(baseline.asr.low)}{EN_DASH}{_js_pct(baseline.asr.high)}"
    )
    expect(row.get_by_test_id("errors")).to_have_text("1")
    expect(tab.get_by_test_id(f"campaign-{CANCELABLE}").get_by_test_id("eta")).to_have_text("~1 h 0 min")
    expect(tab.get_by_test_id("campaign-count")).to_have_text("3 campaigns")

    # The campaign view: cells, defenders, reports, errors, matches.
    row.get_by_test_id("campaign-link").click()
    expect(tab).to_have_url(re.compile(rf"#/campaigns/{BASELINE}$"))
    expect(tab.get_by_test_id("campaign-name")).to_have_text("baseline")
    expect(tab.get_by_test_id("status")).to_have_text("completed")
    expect(tab.get_by_test_id("cancel")).to_be_hidden()
    cells = tab.get_by_test_id("cells").locator("tbody tr")
    expect(cells).to_have_count(2)
    naive = tab.get_by_test_id("cell-playbook/naive/phrase")
    expect(naive.get_by_test_id("won")).to_have_text("2")
    expect(naive.get_by_test_id("asr-rate")).to_have_text("100%")
    hardened = tab.get_by_test_id("cell-playbook/hardened/phrase")
    expect(hardened.get_by_test_id("asr-rate")).to_have_text("0%")
    expect(hardened.get_by_test_id("errors")).to_have_text("1")
    expect(tab.get_by_test_id("defenders").locator("tbody tr")).to_have_count(2)
    expect(tab.get_by_test_id("defender-naive").get_by_test_id("asr-rate")).to_have_text("100%")
    expect(tab.get_by_test_id("card-asr").get_by_test_id("asr-rate")).to_have_text("50%")
    for fmt in ("html", "json", "junit"):
        href = tab.get_by_test_id(f"report-{fmt}").get_attribute("href")
        assert href == f"/v1/campaigns/{BASELINE}/report?format={fmt}"
    # No API token needed (no 401): no sign-in panel, no sign-out button.
    expect(tab.get_by_test_id("signout")).to_be_hidden()
    expect(tab.get_by_test_id("signin")).to_have_count(0)
    expect(tab.get_by_test_id("recent-errors").get_by_test_id("error-text")).to_have_text(
        f"connection reset {HOSTILE_SCRIPT}"
    )
    expect(tab.get_by_test_id("matches").locator("tbody tr")).to_have_count(6)
    expect(tab.get_by_test_id("match-m-canceled").get_by_test_id("outcome")).to_have_text("canceled")
    expect(tab.get_by_test_id("match-count")).to_have_text("6 matches")
    _no_markup_from_data(tab)

    # The match view: the transcript turn by turn, hostile text shown as text.
    tab.get_by_test_id("match-m-won").get_by_test_id("match-link").click()
    expect(tab).to_have_url(re.compile(r"#/matches/m-won$"))
    turns = tab.get_by_test_id("turn")
    expect(turns).to_have_count(3)
    expect(turns.nth(0).get_by_test_id("attacker-text")).to_have_text(f"Hello {HOSTILE}")
    expect(turns.nth(0).get_by_test_id("defender-text")).to_have_text("I cannot help with that.")
    expect(turns.nth(0).get_by_test_id("verdict")).to_have_text("held · score 0.25")
    expect(turns.nth(0).get_by_test_id("turn-stream")).to_have_text("stream s1")
    expect(turns.nth(1).get_by_test_id("turn-replay")).to_have_text("replay")
    expect(turns.nth(1).get_by_test_id("turn-stream")).to_have_text(f"stream {HOSTILE}")
    expect(turns.nth(1).get_by_test_id("reasoning")).to_have_text(f"try a {HOSTILE} trick")
    expect(turns.nth(1).get_by_test_id("defender-text")).to_have_text(f"Nope. {HOSTILE_SCRIPT}")
    expect(turns.nth(1).get_by_test_id("verdict-reason")).to_have_text(f"reason 2: {HOSTILE_SVG}")
    expect(turns.nth(2).get_by_test_id("turn-guard")).to_have_text(f"guard: redacted {HOSTILE}")
    expect(turns.nth(2).get_by_test_id("verdict")).to_have_text("objective met · score 1.00")
    expect(turns.nth(2).get_by_test_id("verdict-evidence")).to_have_text(HOSTILE)
    # What the defender did, between its reply and the verdict; hostile arguments stay text.
    actions = turns.nth(2).get_by_test_id("action")
    expect(actions).to_have_count(2)
    expect(actions.nth(0)).to_have_text('lookup_order({"order_id":"7781"}) → ok')
    expect(actions.nth(1)).to_contain_text(
        f"send_email({json.dumps({'to': HOSTILE}, separators=(',', ':'))}) → blocked"
    )
    expect(actions.nth(1)).to_contain_text(f"blocked: {HOSTILE_SVG}")
    expect(turns.nth(0).get_by_test_id("actions")).to_have_count(0)
    expect(tab.get_by_test_id("outcome")).to_have_text("attacker won")
    expect(tab.get_by_test_id("match-facts")).to_contain_text(f"worker-1 {HOSTILE}")
    expect(tab.get_by_test_id("match-facts")).to_contain_text("javascript:alert(4)")
    expect(tab.get_by_test_id("match-setup")).to_contain_text(HOSTILE_SVG)
    expect(tab.get_by_test_id("turns-used")).to_have_text("3 of 5")
    _no_markup_from_data(tab)
    assert tab.locator("a[href^='javascript']").count() == 0

    # A match that ended in an error and has no result.
    tab.goto(f"{base_url}/dashboard#/matches/m-error")
    expect(tab.get_by_test_id("match-error")).to_have_text(
        f"target unreachable: connection reset {HOSTILE_SCRIPT}"
    )
    expect(tab.get_by_test_id("turn")).to_have_count(0)

    # Back to the list through the breadcrumb.
    tab.get_by_test_id("home-link").click()
    expect(tab.get_by_test_id(f"campaign-{LIVE}")).to_be_visible()
    _no_markup_from_data(tab)
    assert log.problems() == []


def test_dashboard_follows_a_running_campaign_and_stops_polling_when_final(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    tab.clock.install()
    tab.goto(f"{base_url}/dashboard#/campaigns/{LIVE}")
    expect(tab.get_by_test_id("campaign-name")).to_have_text("live-run")
    expect(tab.get_by_test_id("live")).to_be_visible()
    expect(tab.get_by_test_id("cancel")).to_be_visible()
    progress_card = tab.get_by_test_id("card-progress")
    total = str(canned.live_total_per_cell * 2)
    expect(progress_card.get_by_test_id("total")).to_have_text(total)
    # The page polls: done climbs to the total and the status becomes final.
    expect(progress_card.get_by_test_id("done")).to_have_text(total, timeout=20_000)
    expect(tab.get_by_test_id("status")).to_have_text("completed")
    expect(tab.get_by_test_id("cancel")).to_be_hidden()
    expect(tab.get_by_test_id("live")).to_be_hidden()
    polls_at_final = canned.live_polls
    assert polls_at_final >= canned.live_total_per_cell
    later = requests_while_time_passes(tab, log, 4_000)  # more than two polling periods (1.5 s)
    assert [r for r in later if f"/v1/campaigns/{LIVE}" in r] == [], (
        "the page kept polling a finished campaign"
    )
    assert canned.live_polls == polls_at_final
    assert log.problems() == []


def test_dashboard_cancel_needs_a_second_click(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    tab.goto(f"{base_url}/dashboard#/campaigns/{CANCELABLE}")
    cancel = tab.get_by_test_id("cancel")
    expect(tab.get_by_test_id("status")).to_have_text("running")
    cancel.click()
    expect(cancel).to_have_text("Click again to cancel")
    assert canned.cancels == []
    cancel.click()
    expect(tab.get_by_test_id("status")).to_have_text("canceled")
    assert canned.cancels == [CANCELABLE]
    expect(cancel).to_be_hidden()
    assert log.problems() == []


def test_dashboard_report_links_stay_plain_links_without_a_token(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    tab.goto(f"{base_url}/dashboard#/campaigns/{BASELINE}")
    expect(tab.get_by_test_id("campaign-name")).to_have_text("baseline")
    with tab.context.expect_page() as opened:
        tab.get_by_test_id("report-html").click()
    report = opened.value
    report.wait_for_load_state()
    assert report.url == f"{base_url}/v1/campaigns/{BASELINE}/report?format=html"
    assert f"GET /v1/campaigns/{BASELINE}/report" in canned.requests
    assert tab.evaluate("window.sessionStorage.length") == 0
    expect(tab.get_by_test_id("signout")).to_be_hidden()
    assert log.problems() == []


def test_dashboard_routes_send_a_strict_csp_and_static_assets(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=5.0) as client:
        root = client.get("/")
        assert root.status_code == 307
        assert root.headers["location"] == "dashboard"
        assert client.get("/dashboard/").headers["location"] == "../dashboard"

        page = client.get("/dashboard")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        csp = page.headers["content-security-policy"]
        assert csp == CONTENT_SECURITY_POLICY
        assert "'unsafe-inline'" not in csp
        assert "'unsafe-eval'" not in csp
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "<script>" not in page.text  # every script is an external same-origin file
        assert "http://" not in page.text
        assert "https://" not in page.text

        for name, media_type in (
            ("dashboard.js", "text/javascript"),
            ("dashboard.css", "text/css"),
            ("favicon.svg", "image/svg+xml"),
        ):
            asset = client.get(f"/dashboard/static/{name}")
            assert asset.status_code == 200, name
            assert asset.headers["content-type"].startswith(media_type)
            assert "https://" not in asset.text
            again = client.get(f"/dashboard/static/{name}", headers={"If-None-Match": asset.headers["etag"]})
            assert again.status_code == 304
        assert client.get("/dashboard/static/missing.js").status_code == 404
        assert client.get("/dashboard/static/../dashboard.py").status_code == 404


def _js_round(value: float) -> int:
    """What the page prints for a rating (Math.round: halves up, not to even)."""
    return math.floor(value + 0.5)


def _style_pct(element: Locator, prop: str) -> float:
    """A percentage the page set through ``element.style`` (CSSOM, allowed by the CSP)."""
    value = element.evaluate(f"(el) => el.style.{prop}")
    assert isinstance(value, str) and value.endswith("%"), value
    return float(value[:-1])


def test_dashboard_leaderboard_shows_ratings_pairings_history_and_filters(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    tab.goto(f"{base_url}/dashboard")
    expect(tab.get_by_test_id(f"campaign-{BASELINE}")).to_be_visible()
    tab.get_by_test_id("leaderboard-link").click()
    expect(tab).to_have_url(re.compile(r"#/leaderboard$"))
    expect(tab.get_by_test_id("leaderboard")).to_be_visible()
    expect(tab.get_by_test_id("leaderboard-link")).to_have_attribute("aria-current", "page")
    board = canned.leaderboard

    # Both tables, best first: names (hostile ones as text), rounded ratings, intervals, records.
    everyone = [*board.attackers, *board.defenders]
    lowest = min(p.low for p in everyone)
    span = max(p.high for p in everyone) - lowest
    for side, players in (("attacker", board.attackers), ("defender", board.defenders)):
        table = tab.get_by_test_id(f"leaderboard-{side}s")
        expect(table.locator("tbody tr")).to_have_count(len(players))
        for index, player in enumerate(players):
            key = f"{side}-{index}"
            expect(tab.get_by_test_id(f"leaderboard-player-{key}")).to_have_text(player.name)
            expect(tab.get_by_test_id(f"leaderboard-rating-{key}")).to_have_text(
                str(_js_round(player.rating))
            )
            expect(tab.get_by_test_id(f"leaderboard-interval-{key}")).to_have_text(
                f"{_js_round(player.low)}{EN_DASH}{_js_round(player.high)}"
            )
            expect(tab.get_by_test_id(f"leaderboard-record-{key}")).to_have_text(
                f"{player.wins}{EN_DASH}{player.losses}"
            )
            # The interval bar: a span from low to high and a mark at the rating, on one scale.
            bar = tab.get_by_test_id(f"leaderboard-bar-{key}")
            expect(bar.locator(".rating-range")).to_have_count(1)
            expect(bar.locator(".rating-mark")).to_have_count(1)
            assert _style_pct(bar.locator(".rating-range"), "left") == pytest.approx(
                (player.low - lowest) / span * 100, abs=0.01
            )
            assert _style_pct(bar.locator(".rating-range"), "width") == pytest.approx(
                (player.high - player.low) / span * 100, abs=0.01
            )
            assert _style_pct(bar.locator(".rating-mark"), "left") == pytest.approx(
                (player.rating - lowest) / span * 100, abs=0.01
            )
    expect(tab.get_by_test_id("leaderboard-player-attacker-2")).to_have_text(HOSTILE)
    expect(tab.get_by_test_id("leaderboard-player-defender-1")).to_have_text(HOSTILE_SVG)
    expect(tab.get_by_test_id("leaderboard-matches")).to_have_text(f"{board.matches} played matches")
    expect(tab.get_by_test_id("leaderboard-campaigns")).to_have_text(f"{board.campaigns} settled campaigns")

    # Head to head: attacker rows x defender columns, "wins/matches", the pairing in the title.
    pairings = tab.get_by_test_id("leaderboard-pairings")
    expect(pairings.locator("tbody tr")).to_have_count(len(board.attackers))
    expect(pairings.locator("thead th")).to_have_count(len(board.defenders) + 1)
    for ai, attacker in enumerate(board.attackers):
        for di, defender in enumerate(board.defenders):
            cell = tab.get_by_test_id(f"leaderboard-pairing-{ai}-{di}")
            played = PAIRINGS.get((attacker.name, defender.name))
            if played is None:
                expect(cell).to_have_text("—")
                continue
            wins, matches = played
            expect(cell).to_have_text(f"{wins}/{matches}")
            expect(cell).to_have_attribute(
                "title",
                re.compile(
                    rf"^{re.escape(f'{attacker.name} won {wins} of {matches} against {defender.name}')}"
                ),
            )

    # History, newest first, each defender's rating after the campaign and its change.
    history = tab.get_by_test_id("leaderboard-history")
    expect(history.locator("tbody tr")).to_have_count(len(HISTORY))
    expect(tab.get_by_test_id("leaderboard-history-row-0")).to_contain_text("nightly-3")
    naive = [p.name for p in board.defenders].index("naive")
    newest = tab.get_by_test_id(f"leaderboard-history-0-{naive}")
    drop = _js_round(HISTORY[1][2]["naive"]) - _js_round(HISTORY[2][2]["naive"])
    assert drop > 0
    expect(newest).to_contain_text(str(_js_round(HISTORY[2][2]["naive"])))
    expect(newest.get_by_test_id("delta")).to_have_text(f"▼{drop}")
    expect(newest.get_by_test_id("delta")).to_have_class(re.compile(r"\bdown\b"))
    # The hostile defender had not played before the second campaign.
    hostile = [p.name for p in board.defenders].index(HOSTILE_SVG)
    expect(tab.get_by_test_id(f"leaderboard-history-2-{hostile}")).to_have_text("—")
    expect(tab.get_by_test_id(f"leaderboard-history-1-{hostile}").get_by_test_id("delta")).to_have_text("new")
    _no_markup_from_data(tab)
    assert canned.leaderboard_queries and all(query == {} for query in canned.leaderboard_queries)

    # The category filter: from the API's categories, sent as ?category=, kept in the hash.
    category = tab.get_by_test_id("leaderboard-category")
    expect(category.locator("option")).to_have_text(["All", *CATEGORIES])
    category.select_option("LLM01:2025")
    expect(tab.get_by_test_id("leaderboard-attackers").locator("tbody tr")).to_have_count(2)
    expect(tab.get_by_test_id("leaderboard-player-attacker-0")).to_have_text("playbook")
    expect(tab.get_by_test_id("leaderboard-record-attacker-0")).to_have_text(f"2{EN_DASH}2")
    expect(tab.get_by_test_id("leaderboard-pairing-1-0")).to_have_text("0/4")
    expect(tab).to_have_url(re.compile(r"#/leaderboard\?category=LLM01:2025$"))
    assert canned.leaderboard_queries[-1] == {"category": "LLM01:2025"}

    # The date: both filters together.
    tab.get_by_test_id("leaderboard-since").fill("2025-11-01")
    expect(tab).to_have_url(re.compile(r"#/leaderboard\?category=LLM01:2025&since=2025-11-01$"))
    expect(tab.get_by_test_id("leaderboard-content")).not_to_have_attribute("aria-busy", "true")
    assert canned.leaderboard_queries[-1] == {"category": "LLM01:2025", "since": "2025-11-01"}

    # Opened from the hash, the page sends and shows the filter; "All" drops it.
    tab.goto(f"{base_url}/dashboard#/leaderboard?category=LLM01:2025")
    expect(tab.get_by_test_id("leaderboard-attackers").locator("tbody tr")).to_have_count(2)
    expect(category).to_have_value("LLM01:2025")
    expect(tab.get_by_test_id("leaderboard-since")).to_have_value("")
    assert canned.leaderboard_queries[-1] == {"category": "LLM01:2025"}
    category.select_option("")
    expect(tab.get_by_test_id("leaderboard-attackers").locator("tbody tr")).to_have_count(3)
    expect(tab).to_have_url(re.compile(r"#/leaderboard$"))
    assert canned.leaderboard_queries[-1] == {}

    # A malformed filter in the hash is not sent: a banner names it.
    tab.goto(f"{base_url}/dashboard#/leaderboard?category={HOSTILE}")
    expect(tab.get_by_test_id("banner")).to_contain_text(f"category “{HOSTILE}”")
    expect(tab.get_by_test_id("leaderboard-attackers").locator("tbody tr")).to_have_count(3)
    assert canned.leaderboard_queries[-1] == {}
    # So is a date of the right shape that does not exist (the API would refuse it with a 400).
    asked = len(canned.leaderboard_queries)
    tab.goto(f"{base_url}/dashboard#/leaderboard?since=2026-02-30")
    expect(tab.get_by_test_id("banner")).to_contain_text("since “2026-02-30”")
    expect(tab.get_by_test_id("leaderboard-attackers").locator("tbody tr")).to_have_count(3)
    assert len(canned.leaderboard_queries) > asked
    assert all(query == {} for query in canned.leaderboard_queries[asked:])
    _no_markup_from_data(tab)
    assert log.problems() == []


def test_dashboard_leaderboard_says_how_many_players_were_not_rated(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    tab.goto(f"{base_url}/dashboard#/leaderboard")
    expect(tab.get_by_test_id("leaderboard-attackers")).to_be_visible()
    expect(tab.get_by_test_id("leaderboard-unrated")).to_have_count(0)
    canned.leaderboard = canned.leaderboard.model_copy(
        update={"unrated_attackers": 1, "unrated_defenders": 12}
    )
    tab.reload()
    expect(tab.get_by_test_id("leaderboard-unrated")).to_have_text(
        "Not rated: 1 attacker and 12 defenders beyond the most played of each side, with their matches."
    )
    assert log.problems() == []


def test_dashboard_leaderboard_empty_state(
    base_url: str, canned: CannedApi, page: tuple[Page, PageLog]
) -> None:
    tab, log = page
    canned.leaderboard = EMPTY_LEADERBOARD
    tab.goto(f"{base_url}/dashboard#/leaderboard")
    expect(tab.get_by_test_id("leaderboard-empty")).to_have_text(
        "No settled campaign has played matches yet."
    )
    expect(tab.get_by_test_id("leaderboard-attackers")).to_have_count(0)
    expect(tab.get_by_test_id("leaderboard-pairings")).to_have_count(0)
    expect(tab.get_by_test_id("leaderboard-category").locator("option")).to_have_text(["All"])
    assert canned.leaderboard_queries and all(query == {} for query in canned.leaderboard_queries)
    assert log.problems() == []
