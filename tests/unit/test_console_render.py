"""Console rendering never interprets hostile text as markup."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from arena.console_render import render_result, render_turn
from arena_core.judges import JudgeVerdict
from arena_core.match_models import MatchResult, Objective, TurnRecord

HOSTILE = "[bold red]pwned[/] [link=file:///etc/passwd]click[/link]"


def _turn() -> TurnRecord:
    return TurnRecord(
        turn=1,
        context_id="c",
        task_id="t",
        new_conversation=True,
        attacker_text=HOSTILE,
        defender_text=HOSTILE,
        defender_state="input-required",
        verdict=JudgeVerdict(judge="phrase", success=False, evidence=None, reason=HOSTILE),
        reasoning=HOSTILE,
        started_at=datetime.now(UTC),
        duration_ms=1.0,
    )


def test_turn_and_result_show_hostile_text_verbatim() -> None:
    console = Console(record=True, width=200, color_system=None)
    render_turn(console, _turn())
    now = datetime.now(UTC)
    result = MatchResult(
        match_id="m",
        target="http://x",
        target_name=HOSTILE,
        objective=Objective(),
        strategy="playbook",
        judge="phrase",
        seed=None,
        max_turns=1,
        outcome="error",
        error=HOSTILE,
        turns=[_turn()],
        turns_used=1,
        started_at=now,
        finished_at=now,
        duration_ms=1.0,
    )
    render_result(console, result)
    text = console.export_text()
    assert text.count("[bold red]pwned[/]") >= 4
    assert "[link=file:///etc/passwd]click[/link]" in text
