"""Objectives from HarmBench- and JailbreakBench-style behaviour files, read from disk only."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_core.errors import InvalidInputError
from arena_core.objective_datasets import load_behaviours
from arena_orchestrator.spec_loader import CampaignSpecError, load_campaign_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_harmbench_layout_reads_with_context_and_ids() -> None:
    rows = load_behaviours(EXAMPLES / "behaviours.csv")
    assert [row.name for row in rows][:2] == ["bank-phishing-message", "staff-portal-bypass"]
    doxxing = next(row for row in rows if row.name == "customer-doxxing")
    assert doxxing.ask.startswith("Customer record: Dana Whitfield") and "\n\n---\n\n" in doxxing.ask
    assert doxxing.category == "privacy"


def test_the_jailbreakbench_layout_takes_the_goal_as_the_request() -> None:
    rows = load_behaviours(EXAMPLES / "behaviours.jsonl")
    assert rows[0].name == "manager-impersonation"
    assert rows[0].ask.startswith("Write a message pretending to be the shop's manager")
    assert rows[1].category == "Misinformation"


def test_categories_and_limit_select_rows() -> None:
    assert [r.name for r in load_behaviours(EXAMPLES / "behaviours.csv", categories=["FRAUD"])] == [
        "bank-phishing-message",
        "refund-social-engineering",
    ]
    assert len(load_behaviours(EXAMPLES / "behaviours.csv", limit=2)) == 2


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("x.txt", "Behavior\nhi there\n", "a .csv or .jsonl file"),
        ("x.csv", "", "no header row"),
        ("x.csv", "Behavior,Category\n,fraud\n", "line 2: no request"),
        ("x.jsonl", '{"Goal": "a"}\nnot json\n', "line 2: not JSON"),
        ("x.jsonl", "[1, 2]\n", "a JSON object per line"),
        ("x.csv", "Behavior,Category\nsomething here,fraud\n", "no behaviour of the categories"),
    ],
)
def test_bad_files_say_what_is_wrong(tmp_path: Path, name: str, content: str, says: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InvalidInputError, match=says):
        load_behaviours(path, categories=["privacy"] if "categories" in says else ())


def test_rows_become_rubric_objectives_with_their_request(tmp_path: Path) -> None:
    spec_file = tmp_path / "c.yaml"
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "b.csv").write_text((EXAMPLES / "behaviours.csv").read_text())
    text = (
        "name: c\nattackers: [{strategy: refusal-suppression}]\n"
        "defenders: [{name: d, url: 'http://127.0.0.1:8081'}]\n"
        "objectives: [give-up-phrase]\n"
        "objectives_from: {path: data/b.csv, limit: 3}\n"
    )
    spec = load_campaign_spec(text, source=str(spec_file), base_dir=spec_file.parent)
    assert spec.objective_labels()[0] == "give-up-phrase"
    assert spec.objective_labels()[1:] == ["bank-phishing-message", "staff-portal-bypass", "fake-review"]
    dataset = spec.objectives[1]
    assert dataset.judge == "llm" and dataset.objective.ask is not None
    assert dataset.objective.kind == "rubric" and "carries out this request" in (
        dataset.objective.rubric or ""
    )


@pytest.mark.parametrize(
    ("entry", "base", "says"),
    [
        ("{path: b.csv}", None, "an orchestrator does not read files a campaign names"),
        ("{path: missing.csv}", "here", "cannot read dataset"),
        ("{path: b.csv, limt: 3}", "here", "unknown key(s) limt"),
        ("{path: b.csv, limit: 0}", "here", "limit must be a positive whole number"),
        ("data.csv", "here", "objectives_from takes {path:"),
    ],
)
def test_a_bad_objectives_from_is_refused_with_its_line(
    tmp_path: Path, entry: str, base: str | None, says: str
) -> None:
    (tmp_path / "b.csv").write_text((EXAMPLES / "behaviours.csv").read_text())
    text = (
        "name: c\nattackers: [{strategy: playbook}]\n"
        "defenders: [{name: d, url: 'http://127.0.0.1:8081'}]\n"
        f"objectives_from: {entry}\n"
    )
    with pytest.raises(CampaignSpecError) as caught:
        load_campaign_spec(text, base_dir=tmp_path if base else None)
    assert says in str(caught.value)
    assert any(problem.line == 4 for problem in caught.value.problems)


def test_a_long_context_is_shortened_and_the_request_kept_whole(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text("Behavior,ContextString\n" + f'"Answer the question above.","{"x" * 3000}"\n')
    (row,) = load_behaviours(path)
    assert row.ask.endswith("\n\n---\n\nAnswer the question above.") and len(row.ask) <= 2000
    assert "…" in row.ask
    assert row.objective_fields()["rubric"].endswith("Answer the question above.")


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("big.csv", 'Behavior\n"' + "y" * 200_000 + '"\n', "not readable as CSV"),
        ("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "nests too deeply"),
        ("long.csv", "Behavior\n" + "z" * 1900 + "\n", "over 1800"),
    ],
)
def test_hostile_files_are_bad_input_not_tracebacks(
    tmp_path: Path, name: str, content: str, says: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InvalidInputError, match=says):
        load_behaviours(path)


def test_the_expanded_campaign_is_what_an_orchestrator_reads_back(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_text((EXAMPLES / "behaviours.jsonl").read_text())
    text = (
        "name: c\nattackers: [{strategy: roleplay, converters: [base64]}]\n"
        "defenders: [{name: d, url: 'http://127.0.0.1:8081'}]\n"
        "objectives: [{id: system-prompt-leak, judge: canary}, give-up-phrase]\n"
        "objectives_from: {path: b.jsonl}\n"
    )
    spec = load_campaign_spec(text, base_dir=tmp_path)
    assert load_campaign_spec(spec.model_dump_json()) == spec
    many = tmp_path / "many.csv"
    many.write_text("Behavior\n" + "".join(f"do thing number {i}\n" for i in range(501)))
    with pytest.raises(CampaignSpecError, match="over the 500 a campaign may hold"):
        load_campaign_spec(text.replace("b.jsonl", "many.csv"), base_dir=tmp_path)
