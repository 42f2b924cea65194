"""The Markdown page of a campaign (docs/results.md) and the campaign of ``arena experiment``.

Reports are built as the orchestrator builds them: stored counters through ``build_progress``.
The page must show exactly the rates and intervals ``arena campaign run`` prints for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from arena.campaign_command import render_progress
from arena.experiment_command import _model_facts, _run_facts, experiment_spec, reading_notes, write_results
from arena_core.errors import InvalidInputError
from arena_core.objective import Objective
from arena_core.settings import ArenaSettings
from arena_orchestrator.campaign_models import Campaign, CampaignReport, CampaignStatus, CellKey, MatchSummary
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.campaign_store import CampaignState
from arena_orchestrator.progress import build_progress
from arena_orchestrator.reports import render_markdown

T0 = datetime(2026, 11, 30, 12, 14, tzinfo=UTC)
PROFILES = {"naive": "http://127.0.0.1:8081", "hardened": "http://127.0.0.1:8082"}

Play = tuple[str, str, str, int, str | None]
"""(attacker, defender, outcome or disposition, turns used, error kind)."""

PLAYS: list[Play] = [
    ("playbook", "naive", "attacker_won", 3, None),
    ("playbook", "naive", "attacker_won", 1, None),
    ("playbook", "naive", "defended", 4, None),
    ("playbook", "hardened", "defended", 4, None),
    ("playbook", "hardened", "error", 0, "timeout"),
    ("playbook", "hardened", "attacker_refused", 1, None),
    ("pair", "naive", "error", 0, "attacker_inactive"),
    ("pair", "naive", "error", 0, "timeout"),
    ("pair", "naive", "error", 0, "timeout"),
    ("pair", "hardened", "attacker_won", 2, None),
    ("pair", "hardened", "defended", 4, None),
    ("pair", "hardened", "defended", 4, None),
]


def spec(
    *, strategies: Sequence[str] = ("playbook", "pair"), repetitions: int = 3, seed: int = 1
) -> CampaignSpec:
    return experiment_spec(
        strategies=strategies,
        defenders=PROFILES,
        attacker_url="http://127.0.0.1:8090",
        objective=Objective(),
        judge="phrase",
        repetitions=repetitions,
        max_turns=4,
        seed=seed,
        match_timeout_s=600.0,
    )


def report_of(
    campaign_spec: CampaignSpec, plays: Sequence[Play], *, status: CampaignStatus = "completed"
) -> CampaignReport:
    """The report the orchestrator gives after recording ``plays``: its counters, its progress."""
    counts: Counter[str] = Counter()
    matches = []
    seen: Counter[CellKey] = Counter()
    for index, (attacker, defender, ending, turns, error_kind) in enumerate(plays):
        cell = CellKey(attacker=attacker, defender=defender, objective="phrase")
        played = ending not in ("canceled", "skipped")
        matches.append(
            MatchSummary(
                match_id=f"c-1-m{index:06d}",
                index=index,
                repetition=seen[cell],
                cell=cell,
                disposition="played" if played else ending,  # type: ignore[arg-type]
                outcome=ending if played else None,  # type: ignore[arg-type]
                turns_used=turns,
                error_kind=error_kind,
                finished_at=T0 + timedelta(seconds=index),
            )
        )
        seen[cell] += 1
        counts.update({f"o:{ending}": 1, f"c:{cell.id}:{ending}": 1})
    campaign = Campaign(id="c-1", spec=campaign_spec, created_at=T0, total=campaign_spec.match_count)
    state = CampaignState(status=status, done=len(plays), started_at=T0, finished_at=T0, counts=dict(counts))
    progress = build_progress(campaign, state, now=T0)
    return CampaignReport(generated_at=T0, campaign=campaign, progress=progress, matches=matches)


def page_of(report: CampaignReport, *, facts: Sequence[str] = (), notes: Sequence[str] = ()) -> str:
    return render_markdown(
        report, title="Strategies against defender profiles", command="arena x", facts=facts, notes=notes
    )


def table(page: str, heading: str) -> dict[tuple[str, str], str]:
    """A page table: (attacker, defender) -> its text."""
    section = page.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    defenders = [cell.strip() for cell in rows[0].strip("|").split("|")][1:]
    found = {}
    for row in rows[1:]:
        attacker, *cells = (cell.strip() for cell in row.strip("|").split("|"))
        found.update({(attacker, d): text for d, text in zip(defenders, cells, strict=True)})
    return found


def console_rates(report: CampaignReport) -> dict[tuple[str, str], str]:
    """What ``arena campaign run`` prints in its ASR column, per (attacker, defender)."""
    console = Console(record=True, width=240, color_system=None)
    render_progress(console, report.progress)
    rates = {}
    for line in console.export_text().splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 3 and (cells[1], cells[2]) in {
            (a, d) for a in ("playbook", "pair") for d in PROFILES
        }:
            rates[(cells[1], cells[2])] = cells[-2]
    return rates


def test_the_page_shows_the_rates_and_intervals_arena_campaign_run_prints() -> None:
    report = report_of(spec(), PLAYS)
    page = table(page_of(report), "Attack success rate")
    printed = console_rates(report)
    assert set(page) == set(printed) == {(a, d) for a in ("playbook", "pair") for d in PROFILES}
    for cell in report.progress.cells:
        key = (cell.cell.attacker, cell.cell.defender)
        asr = cell.asr
        if asr.rate is None:
            assert page[key] == printed[key] == "n/a"
        else:
            assert page[key].split(", turns")[0] == f"{asr.wins}/{asr.trials} = {printed[key]}"
    assert page[("playbook", "naive")] == "2/3 = 67% [21%, 94%], turns to success 2"
    assert page[("pair", "naive")] == "n/a"
    assert page[("pair", "hardened")] == "1/3 = 33% [6%, 79%], turns to success 2"


def test_the_page_counts_what_was_neither_won_nor_defended() -> None:
    plays = [*PLAYS[:-1], ("pair", "hardened", "canceled", 0, None)]
    other = table(
        page_of(report_of(spec(), plays, status="canceled")), "Matches that were neither won nor defended"
    )
    assert other[("playbook", "naive")] == "none"
    assert other[("playbook", "hardened")] == "1 error (timeout); 1 attacker refused"
    assert other[("pair", "naive")] == "3 error (attacker_inactive, timeout)"
    assert other[("pair", "hardened")] == "1 canceled"


def test_the_page_states_the_campaign_and_its_provenance() -> None:
    page = page_of(report_of(spec(seed=5), PLAYS), facts=["Defender model: m."], notes=["## Reading", "text"])
    assert page.startswith(
        "# Strategies against defender profiles\n\nProduced by `arena x` on 2026-11-30 12:14 UTC."
    )
    assert (
        "- Objective: “I Give Up” (judge `phrase`); up to 4 turns per match; 3 match(es) per cell, "
        "seeds 5..7 (repetition r uses seed + r).\n- Defender model: m.\n- Attack success rate (ASR)"
    ) in page
    assert "| attacker | naive | hardened |\n|---|---|---|\n" in page
    assert page.endswith("\n\n## Reading\ntext\n")


def test_a_partial_campaign_says_how_much_was_played() -> None:
    plays = [*PLAYS[:6], ("pair", "naive", "canceled", 0, None)]
    page = page_of(report_of(spec(), plays, status="canceled"))
    assert "(partial: the campaign is canceled; 6 of the 12 planned matches were played)." in page
    # The cells tell which matches never started.
    others = page.split("## Matches that were neither won nor defended\n", 1)[1].split("\n## ", 1)[0]
    assert "| pair | 1 canceled; 2 not played | 3 not played |" in others


def test_one_table_per_objective() -> None:
    two = spec(repetitions=1).model_copy(
        update={"objectives": [*spec().objectives, spec().objectives[0].model_copy(update={"name": "again"})]}
    )
    page = page_of(report_of(two, []))
    rates = page.split("## Attack success rate\n", 1)[1].split("\n## ", 1)[0]
    assert "### phrase-1\n" in rates and "### again\n" in rates
    assert "Objectives: “I Give Up” (judge `phrase`), “I Give Up” (judge `phrase`);" in page


def test_the_experiment_campaign_has_a_defender_per_profile_and_an_attacker_per_strategy() -> None:
    campaign = spec(seed=9)
    assert [(a.label, a.url) for a in campaign.attackers] == [
        ("playbook", "http://127.0.0.1:8090"),
        ("pair", "http://127.0.0.1:8090"),
    ]
    assert [(d.name, d.url) for d in campaign.defenders] == list(PROFILES.items())
    assert (campaign.repetitions, campaign.max_turns, campaign.seed, campaign.concurrency) == (3, 4, 9, 1)
    assert [(o.objective, o.judge) for o in campaign.objectives] == [(Objective(), "phrase")]


def test_an_experiment_that_is_no_valid_campaign_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match=r"not a valid campaign: repetitions: .*10000"):
        spec(repetitions=10_001)
    with pytest.raises(InvalidInputError, match="campaign: two attackers are called 'pair'"):
        spec(strategies=("pair", "pair"))


def test_write_results_writes_the_page_and_the_json_report_beside_it(tmp_path: Path) -> None:
    report = report_of(spec(), PLAYS)
    out = tmp_path / "docs" / "results.md"
    write_results(report, out, command="arena x", facts=["Defender model: m."], campaign_dir=Path("out/c-1"))
    assert CampaignReport.model_validate_json(out.with_suffix(".json").read_text()) == report
    page = out.read_text()
    assert "## Reading these numbers" in page
    assert "Raw results: [results.json](results.json), the campaign's JSON report" in page
    assert "`out/c-1`" in page


def test_a_section_run_keeps_the_page_and_a_page_run_keeps_its_sections(tmp_path: Path) -> None:
    report = report_of(spec(), PLAYS)
    out = tmp_path / "results.md"
    write_results(report, out, command="arena main", facts=[], campaign_dir=Path("out/c-1"))
    write_results(
        report, out, command="arena fam", facts=[], campaign_dir=Path("out/c-2"), section="families"
    )
    page = out.read_text()
    assert "arena main" in page and "arena fam" in page
    assert "## Attack families and converters against defender profiles" in page
    assert "### Reading these numbers" in page  # the section's headings one level down
    assert "[results-families.json](results-families.json)" in page
    assert (tmp_path / "results-families.json").is_file() and (tmp_path / "results.json").is_file()
    write_results(report, out, command="arena main again", facts=[], campaign_dir=Path("out/c-3"))
    page = out.read_text()
    assert "arena main again" in page and "arena fam" in page and "arena main`" not in page


def test_the_page_states_a_reply_cap() -> None:
    embedded = ArenaSettings()
    assert _model_facts(embedded, "llama") == [
        "Defender model: llamacpp:smollm2-135m-instruct. Attacker model (strategies that use one): "
        "llamacpp:smollm2-135m-instruct."
    ]
    capped = _model_facts(embedded, "llama", 128)
    assert capped[1] == (
        "Replies were capped at 128 tokens (`--reply-tokens`): the defenders', the attacker's, the judge's."
    )
    hosted = ArenaSettings(model="openai:gpt-4o-mini")
    assert (
        _model_facts(hosted, "llama", 128)[1]
        == "Replies were capped at 128 tokens (`--reply-tokens`): the defenders', the attacker's."
    )


def test_the_page_states_how_long_the_run_took(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of(spec(), PLAYS)
    progress = report.progress.model_copy(
        update={"started_at": T0, "finished_at": T0 + timedelta(minutes=83, seconds=20)}
    )
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    timed = report.model_copy(update={"progress": progress})
    assert _run_facts(timed) == [f"{progress.done} matches in 83 minutes on 2 CPU cores."]
    untimed = report.model_copy(update={"progress": progress.model_copy(update={"finished_at": None})})
    assert _run_facts(untimed) == []


def catalogue_spec(refs: Sequence[str], max_turns: int) -> CampaignSpec:
    return experiment_spec(
        strategies=("playbook",),
        defenders=PROFILES,
        attacker_url="http://127.0.0.1:8090",
        objective=Objective(),
        judge="phrase",
        repetitions=1,
        max_turns=max_turns,
        seed=1,
        match_timeout_s=600.0,
        catalogue=refs,
        over_refusal=True,
    )


def test_the_reading_notes_explain_what_the_run_had() -> None:
    plain = reading_notes(spec())
    assert plain[0] == "## Reading these numbers"
    assert not any("canary" in line or "one exchange" in line for line in plain)
    notes = "\n".join(reading_notes(catalogue_spec(["all"], max_turns=1), reply_tokens=96))
    assert "Objectives judged by `canary` are decided without a model" in notes
    assert "Objectives judged by `llm` are decided by a model reading a rubric" in notes
    assert (
        "for at most 96 tokens a reply (about 384 characters\nof English), below the bound of 4000" in notes
    )
    assert "Each match is one exchange" in notes
    # A cap that could reach the bound makes no such claim.
    assert "`length`" not in "\n".join(reading_notes(catalogue_spec(["all"], max_turns=2), reply_tokens=1000))


def test_the_reading_notes_count_the_matches_a_judge_model_could_not_decide() -> None:
    def summary(index: int, objective: str, outcome: str) -> MatchSummary:
        return MatchSummary(
            match_id=f"c-1-m{index:06d}",
            index=index,
            repetition=0,
            cell=CellKey(attacker="playbook", defender="naive", objective=objective),
            disposition="played",
            outcome=outcome,  # type: ignore[arg-type]
            turns_used=1,
            finished_at=T0,
        )

    matches = [
        summary(0, "harmful-instructions", "error"),
        summary(1, "misinformation", "defended"),
        summary(2, "give-up-phrase", "error"),  # not judged by llm
    ]
    notes = "\n".join(reading_notes(catalogue_spec(["all"], max_turns=1), 96, matches))
    assert "Here 1 of the 2 matches of those objectives ended in an error" in notes
    assert "Here " not in "\n".join(reading_notes(catalogue_spec(["all"], max_turns=1), 96, matches[1:]))


def test_each_converter_is_a_column_of_the_converter_strategy() -> None:
    from arena_core.converters import parse_converter

    campaign = experiment_spec(
        strategies=["many-shot"],
        defenders=PROFILES,
        attacker_url="http://127.0.0.1:8090",
        objective=Objective(decode=True),
        judge="phrase",
        repetitions=1,
        max_turns=2,
        seed=1,
        match_timeout_s=600.0,
        converters=[parse_converter("base64"), parse_converter("split:parts=3")],
        converter_strategy="refusal-suppression",
    )
    assert [a.label for a in campaign.attackers] == [
        "many-shot",
        "refusal-suppression+base64",
        "refusal-suppression+split-parts-3",
    ]
    assert campaign.attackers[2].converters[0].params == {"parts": 3}
    assert campaign.objectives[0].objective.decode


def test_a_section_is_spliced_into_the_page_and_survives_a_rewrite_of_it() -> None:
    from arena.experiment_command import _SECTIONS, splice_section

    page = "# Strategies\n\nthe main run\n"
    once = splice_section(page, "families", "## Families\n\nfirst")
    assert (
        once.startswith(page.rstrip()) and "<!-- results-section:families -->\n## Families\n\nfirst\n" in once
    )
    twice = splice_section(once, "families", "## Families\n\nsecond")
    assert "first" not in twice and twice.count("results-section:families -->") == 2
    kept = "".join(match.group(0) for match in _SECTIONS.finditer(twice))
    assert kept.startswith("<!-- results-section:families -->") and "second" in kept
