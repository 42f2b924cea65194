"""`arena experiment` end to end with the scripted model (plumbing, not robustness).

The experiment is a campaign: its page and JSON report carry the campaign engine's numbers,
the same ones `arena report` and `arena campaign run` give for the same matches.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from arena.experiment_command import start_agents
from arena.local_services import LocalServices
from arena_attacker.strategies import STRATEGY_NAMES
from arena_core.objective import Objective
from arena_core.settings import ArenaSettings
from arena_orchestrator.campaign_models import CampaignReport, CellProgress, Interval
from support.processes import clean_env, default_sigint, interrupt_when, run_arena

pytestmark = pytest.mark.system

PROFILES = ("naive", "hardened", "guarded")
STRATEGIES = ("playbook", "pair")
REPETITIONS = 2
SEED = 7


def percent(value: float) -> str:
    return f"{value:.0%}"


def page_rates(page: str) -> dict[tuple[str, str], str]:
    """The attack success rate table of the page: (attacker, defender) -> its text."""
    section = page.split("## Attack success rate", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    defenders = [cell.strip() for cell in rows[0].strip("|").split("|")][1:]
    rates = {}
    for row in rows[1:]:
        attacker, *cells = (cell.strip() for cell in row.strip("|").split("|"))
        rates.update({(attacker, d): text for d, text in zip(defenders, cells, strict=True)})
    return rates


def numbers(asr: Interval) -> str:
    """How any of our consoles and pages print an interval: whole percents."""
    if asr.rate is None:
        return "n/a"
    return f"{asr.wins}/{asr.trials} = {percent(asr.rate)} [{percent(asr.low)}, {percent(asr.high)}]"


def cell_numbers(report: CampaignReport) -> dict[tuple[str, str], tuple[object, ...]]:
    """Every cell's counts and interval, exactly (floats compared as they are)."""

    def of(cell: CellProgress) -> tuple[object, ...]:
        return (cell.counts, cell.asr)

    return {(c.cell.attacker, c.cell.defender): of(c) for c in report.progress.cells}


def run_experiment(tmp_path: Path) -> tuple[str, CampaignReport, str]:
    """Run the experiment in ``tmp_path``; return its page, its JSON report and its stdout."""
    out = tmp_path / "docs" / "results.md"
    done = run_arena(
        [
            "experiment",
            "--engine",
            "scripted",
            "--repetitions",
            str(REPETITIONS),
            "--max-turns",
            "2",
            "--strategies",
            ",".join(STRATEGIES),
            "--seed",
            str(SEED),
            "--reply-tokens",
            "64",
            "--out",
            str(out),
        ],
        timeout_s=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = CampaignReport.model_validate_json(out.with_suffix(".json").read_text())
    return out.read_text(), report, done.stdout


def run_campaign(tmp_path: Path, experiment: CampaignReport) -> CampaignReport:
    """`arena campaign run` on the experiment's spec, against the same agents started anew."""
    spec = experiment.campaign.spec
    with LocalServices(tmp_path / "campaign-logs", env=clean_env()) as services:
        defenders, attacker = start_agents(
            services, ArenaSettings(), PROFILES, Objective(), "scripted", Console(quiet=True)
        )
        same = spec.model_copy(
            update={
                "attackers": [a.model_copy(update={"url": attacker.url}) for a in spec.attackers],
                "defenders": [d.model_copy(update={"url": defenders[d.name].url}) for d in spec.defenders],
            }
        )
        spec_file = tmp_path / "experiment-campaign.json"
        spec_file.write_text(same.model_dump_json(exclude_none=True))
        out = tmp_path / "campaign-report"
        done = run_arena(["campaign", "run", str(spec_file), "--out", str(out)], timeout_s=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return CampaignReport.model_validate_json((out / "report.json").read_text())


@pytest.mark.timeout(900)  # two runs of 12 matches, each starting five services
def test_experiment_is_a_campaign_with_one_defender_per_profile(tmp_path: Path) -> None:
    page, report, stdout = run_experiment(tmp_path)

    # The page: the command, one row per strategy, one column per profile, the model warning.
    assert "uv run arena experiment --engine scripted --repetitions 2" in page
    assert "| attacker | naive | hardened | guarded |" in page
    for strategy in STRATEGIES:
        assert f"| {strategy} |" in page
    assert "NOT a robustness measurement" in page
    assert "Replies were capped at 64 tokens (`--reply-tokens`): the defenders', the attacker's" in page
    assert re.search(r"- 12 matches in \d+ minutes on \d+ CPU cores?\.", page)
    assert f"{REPETITIONS} match(es) per cell, seeds {SEED}..{SEED + 1}" in page

    # The JSON report beside it: the campaign, every cell played REPETITIONS times with seeds SEED + r.
    spec = report.campaign.spec
    assert [a.strategy for a in spec.attackers] == list(STRATEGIES)
    assert [d.name for d in spec.defenders] == list(PROFILES)
    assert report.progress.status == "completed"
    assert len(report.progress.cells) == 6
    assert all(cell.counts.finished == REPETITIONS for cell in report.progress.cells)
    assert len(report.matches) == 6 * REPETITIONS
    assert {(m.repetition, m.cell.attacker) for m in report.matches} == {
        (r, s) for r in range(REPETITIONS) for s in STRATEGIES
    }

    # Every number on the page is the report's.
    rates = page_rates(page)
    for cell in report.progress.cells:
        assert rates[(cell.cell.attacker, cell.cell.defender)].split(", turns")[0] == numbers(cell.asr)

    # The console shows the campaign table of `arena campaign run`.
    assert "ASR: won / (won + defended), Wilson 95% interval" in stdout

    # The campaign was saved like any in-process campaign: `arena report ID` gives the same report.
    saved = run_arena(["report", report.progress.id, "--format", "json"], cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert CampaignReport.model_validate_json(saved.stdout) == report
    transcripts = tmp_path / "out" / "campaigns" / report.progress.id / "matches"
    assert len(list(transcripts.glob("*/transcript.md"))) == 6 * REPETITIONS

    # `arena campaign run` on the same spec plays the same matches (the scripted model and the
    # strategies are deterministic for a seed) and reports identical counts, rates and intervals.
    campaign = run_campaign(tmp_path, report)
    assert cell_numbers(campaign) == cell_numbers(report)
    assert [(d.defender, d.asr) for d in campaign.progress.defenders] == [
        (d.defender, d.asr) for d in report.progress.defenders
    ]


def test_experiment_rejects_unknown_strategies(tmp_path: Path) -> None:
    done = run_arena(["experiment", "--strategies", "nope", "--out", str(tmp_path / "r.md")])
    assert done.returncode == 2
    assert "unknown strategy 'nope'" in done.stderr
    assert set(STRATEGY_NAMES) >= {"playbook", "agentic"}


def test_experiment_that_is_no_valid_campaign_is_rejected_before_anything_starts(tmp_path: Path) -> None:
    # A valid match seed, but a campaign keeps room for seed + repetition under 2**53.
    too_big = str(2**53 - 1 - 9_999)
    done = run_arena(
        ["experiment", "--engine", "scripted", "--seed", too_big, "--out", str(tmp_path / "r.md")],
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not a valid campaign: seed:" in done.stderr
    assert not (tmp_path / "r.md").exists()
    assert not list(tmp_path.glob("out/experiment-*/logs/*.log")), "a service was started"


def test_an_interrupted_experiment_keeps_the_matches_played(tmp_path: Path) -> None:
    """Ctrl-C cancels the campaign, and the page and the report of the matches played are written."""
    out = tmp_path / "docs" / "results.md"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "arena", "experiment", "--engine", "scripted", "--repetitions", "20"),
            *("--max-turns", "3", "--strategies", "playbook", "--profiles", "naive", "--out", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        # Debug logging gives the defender's access log, read below to see matches played.
        preexec_fn=default_sigint,
        env=clean_env(ARENA_MODEL_LATENCY_MS="100", ARENA_LOG_LEVEL="debug"),
    )
    # Two matches of three turns each: at least one match is recorded by then.
    output = interrupt_when(
        process, lambda: _defender_messages(tmp_path) >= 7, signal_number=signal.SIGINT, timeout_s=300
    )
    assert process.returncode == 130, output
    report = CampaignReport.model_validate_json(out.with_suffix(".json").read_text())
    assert report.progress.status == "canceled"
    counts = report.progress.counts
    played = counts.attacker_won + counts.defended + counts.attacker_refused + counts.error
    assert 1 <= played < 20
    partial = f"partial: the campaign is canceled; {played} of the 20 planned matches were played"
    assert partial in out.read_text()


def _defender_messages(root: Path) -> int:
    """How many A2A requests the experiment's defenders have answered (their access log)."""
    logs = root.glob("out/experiment-*/logs/defender*.log")
    return sum(log.read_text(errors="replace").count('"POST / HTTP') for log in logs)
