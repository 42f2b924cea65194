"""`arena experiment` end to end with the scripted model (plumbing, not robustness)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena_attacker.strategies import STRATEGY_NAMES
from support.processes import run_arena

pytestmark = pytest.mark.system


def test_experiment_writes_a_report_for_every_cell(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    done = run_arena(
        [
            "experiment",
            "--engine",
            "scripted",
            "--repetitions",
            "2",
            "--max-turns",
            "2",
            "--strategies",
            "playbook,pair",
            "--out",
            str(out),
        ],
        timeout_s=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = out.read_text()
    assert "uv run arena experiment --engine scripted --repetitions 2" in report
    assert "| strategy | naive | hardened | guarded |" in report
    for strategy in ("playbook", "pair"):
        assert f"| {strategy} |" in report
    assert "NOT a robustness measurement" in report
    raw = json.loads(out.with_suffix(".json").read_text())
    assert len(raw) == 6
    assert all(len(cell["results"]) == 2 for cell in raw)


def test_experiment_rejects_unknown_strategies(tmp_path: Path) -> None:
    done = run_arena(["experiment", "--strategies", "nope", "--out", str(tmp_path / "r.md")])
    assert done.returncode == 2
    assert "unknown strategy 'nope'" in done.stderr
    assert set(STRATEGY_NAMES) >= {"playbook", "agentic"}
