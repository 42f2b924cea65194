"""The one backoff policy (Backoff), who is tried again, and the loops built on them."""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from rich.console import Console

from arena.campaign_command import FOLLOW_BACKOFF, ProgressLines, follow
from arena_core.errors import (
    AgentCardError,
    ArenaError,
    AttackerBusyError,
    ConfigError,
    InvalidInputError,
    ModelRequestError,
    ModelUnavailableError,
    StateUnavailableError,
    TargetAuthError,
    TargetNotAllowedError,
    TargetProtocolError,
    TargetRateLimitedError,
    TargetUnavailableError,
    TargetUnreachableError,
)
from arena_core.llm.chat_model import RetryPolicy
from arena_core.llm.usage import TokenUsage
from arena_core.retry import Backoff, retryable_peer_failure
from arena_orchestrator.campaign_models import CampaignProgress, Interval, OutcomeCounts
from arena_orchestrator.worker import BUSY_MIN_BACKOFF_S, MAX_BACKOFF_S, WorkerConfig, _busy_backoff

# --- Backoff ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_s", "cap_s", "expected"),
    [
        (2.0, 60.0, [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]),
        (0.5, 8.0, [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]),
        (1.0, 5.0, [1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0]),
        (0.0, 60.0, [0.0] * 7),
        (3.0, 1.0, [1.0] * 7),
    ],
)
def test_without_jitter_the_wait_doubles_from_the_base_up_to_the_cap(
    base_s: float, cap_s: float, expected: list[float]
) -> None:
    backoff = Backoff(base_s, cap_s)
    assert [backoff.delay(attempt) for attempt in range(1, 8)] == expected
    assert [backoff.step(attempt) for attempt in range(1, 8)] == expected


@pytest.mark.parametrize("attempt", [1, 2, 3, 4, 5, 6, 10, 1023, 1024, 1025, 10**6])
def test_equal_jitter_stays_between_half_the_step_and_the_step(attempt: int) -> None:
    backoff = Backoff(0.5, 8.0, jitter=True, rng=random.Random(attempt))
    step = min(8.0, 0.5 * 2.0 ** min(attempt - 1, 100))
    delays = [backoff.delay(attempt) for _ in range(200)]
    assert all(step / 2 <= delay <= step for delay in delays)
    assert len(set(delays)) > 1, "jitter must vary the wait"


def test_a_huge_attempt_number_is_the_cap_not_an_overflow() -> None:
    assert Backoff(2.0, 60.0).delay(10**9) == 60.0
    assert Backoff(1e300, 60.0).delay(2000) == 60.0


def test_jitter_is_reproducible_with_a_seeded_rng() -> None:
    first = Backoff(0.5, 8.0, jitter=True, rng=random.Random(42))
    second = Backoff(0.5, 8.0, jitter=True, rng=random.Random(42))
    assert [first.delay(n) for n in range(1, 8)] == [second.delay(n) for n in range(1, 8)]


@pytest.mark.parametrize("attempt", [0, -1])
def test_attempts_count_from_one(attempt: int) -> None:
    with pytest.raises(ValueError, match="count from 1"):
        Backoff(1.0, 2.0).delay(attempt)


@pytest.mark.parametrize(("base_s", "cap_s"), [(-1.0, 2.0), (1.0, -2.0), (float("nan"), 1.0)])
def test_a_negative_base_or_cap_is_refused(base_s: float, cap_s: float) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        Backoff(base_s, cap_s)


def test_a_backoff_is_a_value() -> None:
    assert Backoff(1.0, 2.0) == Backoff(1.0, 2.0, rng=random.Random(1))
    assert Backoff(1.0, 2.0) != Backoff(1.0, 2.0, jitter=True)


# --- the callers keep their own base and cap ---------------------------------------------------


def test_the_model_client_draws_the_same_waits_as_its_backoff() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=8.0, rng=random.Random(3))
    backoff = Backoff(0.5, 8.0, jitter=True, rng=random.Random(3))
    assert [policy.delay(n) for n in range(1, 8)] == [backoff.delay(n) for n in range(1, 8)]


def test_the_worker_waits_its_retry_backoff_between_tries_without_jitter() -> None:
    config = WorkerConfig(retry_backoff_s=2.0)
    assert [config.retry_backoff.delay(n) for n in range(1, 8)] == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert WorkerConfig(retry_backoff_s=0.0).retry_backoff.delay(3) == 0.0
    assert config.retry_backoff.cap_s == MAX_BACKOFF_S


def test_a_busy_attacker_is_offered_the_match_again_after_at_least_the_busy_minimum() -> None:
    # A zero retry backoff (tests, fast setups) must not hammer a busy attacker.
    assert all(BUSY_MIN_BACKOFF_S / 2 <= _busy_backoff(0.0, 1) <= BUSY_MIN_BACKOFF_S for _ in range(50))
    assert all(MAX_BACKOFF_S / 2 <= _busy_backoff(2.0, 10**6) <= MAX_BACKOFF_S for _ in range(50))


def test_the_cli_backs_off_from_twice_its_poll_interval_to_five_seconds() -> None:
    assert [FOLLOW_BACKOFF.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


# --- who is tried again ---------------------------------------------------------------------------

PEER_FAILURES: list[tuple[ArenaError, bool]] = [
    (TargetUnreachableError("attacker went away"), True),
    (TargetUnavailableError("its model is down"), True),
    (AttackerBusyError("full"), True),
    (TargetRateLimitedError("slow down"), True),
    (StateUnavailableError("redis is away"), True),
    (ModelUnavailableError("model down"), True),
    # Our own peer answering off-protocol is most likely restarting: tried again too.
    (AgentCardError("no card"), True),
    (TargetProtocolError("502 without an error body"), True),
    (TargetAuthError("401"), True),
    (ConfigError("no ARENA_ATTACKER_URL"), False),
    (InvalidInputError("bad request"), False),
    (TargetNotAllowedError("not on the allowlist"), False),
    (ModelRequestError("bad model id"), False),
]


@pytest.mark.parametrize(("error", "retried"), PEER_FAILURES, ids=[e.kind for e, _ in PEER_FAILURES])
def test_retryable_peer_failure(error: ArenaError, retried: bool) -> None:
    assert retryable_peer_failure(error) is retried
    # The class's own verdict never says no where the peer rule says yes...
    assert not error.retryable or retryable_peer_failure(error)


# --- the CLI's follow loop ---------------------------------------------------------------------


def _progress(*, done: int, status: str = "running") -> CampaignProgress:
    counts = OutcomeCounts(defended=done)
    return CampaignProgress.model_validate(
        {
            "id": "c-1",
            "name": "demo",
            "status": status,
            "created_at": datetime(2026, 1, 1, tzinfo=UTC),
            "total": 2,
            "done": done,
            "running": 0,
            "counts": counts,
            "asr": Interval.of(0, done),
            "cells": [],
            "defenders": [],
            "tokens": TokenUsage(),
        }
    )


def _fetcher(*answers: CampaignProgress | ArenaError) -> Callable[[], CampaignProgress]:
    pending = list(answers)

    def fetch() -> CampaignProgress:
        answer = pending.pop(0)
        if isinstance(answer, ArenaError):
            raise answer
        return answer

    return fetch


def test_follow_backs_off_over_failed_polls_and_resets_after_a_good_one() -> None:
    sleeps: list[float] = []
    fetch = _fetcher(
        TargetUnreachableError("down"),
        TargetProtocolError("502"),
        TargetUnreachableError("down"),
        _progress(done=1),
        TargetProtocolError("503"),
        _progress(done=2, status="completed"),
    )
    last = follow(fetch, Console(file=io.StringIO()), sleep=sleeps.append)
    assert last.finished
    assert sleeps == [1.0, 2.0, 4.0, 0.5, 1.0]


@pytest.mark.parametrize(
    "error", [ConfigError("bad"), TargetNotAllowedError("no")], ids=["config", "refused"]
)
def test_follow_raises_a_failure_no_retry_can_fix_at_once(error: ArenaError) -> None:
    sleeps: list[float] = []
    with pytest.raises(type(error)):
        follow(_fetcher(error), Console(file=io.StringIO()), sleep=sleeps.append)
    assert sleeps == []


def test_follow_gives_up_after_its_patience() -> None:
    sleeps: list[float] = []
    with pytest.raises(TargetUnreachableError):
        follow(
            _fetcher(*(TargetUnreachableError("down") for _ in range(3))),
            Console(file=io.StringIO()),
            sleep=sleeps.append,
            patience_s=-1.0,
        )
    assert sleeps == []


def test_without_a_terminal_progress_is_printed_as_lines() -> None:
    out = io.StringIO()
    now = [0.0]
    lines = ProgressLines(Console(file=out, width=40), every_s=30.0, clock=lambda: now[0])
    lines.update(_progress(done=0))
    now[0] = 10.0
    lines.update(_progress(done=1))  # news, but the last line is too recent
    lines.update(_progress(done=0))
    now[0] = 45.0
    lines.update(_progress(done=1))
    lines.update(_progress(done=1))  # no news
    now[0] = 46.0
    lines.update(_progress(done=2, status="completed"))  # the end is always printed
    printed = out.getvalue().splitlines()
    assert [line.split("  ")[0] for line in printed] == [
        "demo: 0/2 matches",
        "demo: 1/2 matches",
        "demo: 2/2 matches",
    ]
    assert printed[-1].endswith("[completed]")


def test_on_a_terminal_the_bar_alone_shows_progress() -> None:
    out = io.StringIO()
    lines = ProgressLines(Console(file=out, force_terminal=True))
    lines.update(_progress(done=2, status="completed"))
    assert out.getvalue() == ""


def test_a_campaign_whose_status_turns_final_after_its_last_match_gets_its_last_line() -> None:
    out = io.StringIO()
    lines = ProgressLines(Console(file=out, width=200), every_s=30.0, clock=lambda: 0.0)
    lines.update(_progress(done=2))
    lines.update(_progress(done=2, status="completed"))
    printed = out.getvalue().splitlines()
    assert [line.split("  ")[0] for line in printed] == ["demo: 2/2 matches"] * 2
    assert printed[-1].endswith("[completed]")
