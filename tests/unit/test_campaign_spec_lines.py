"""Where a campaign's validation problems are reported comes from structured error data, never wording.

Each bad spec below marks the line of every problem with ``# <- location``. The loader must
report exactly those locations at exactly those lines, and must still do so when every
validation message is reworded: the lines come from pydantic's ``loc`` and the spec's
``ctx[FIELD_PATH]``, never from the text of a message.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from arena_orchestrator.campaign_spec import FIELD_PATH, CampaignSpec
from arena_orchestrator.spec_loader import CampaignSpecError, load_campaign_spec, validation_problems
from arena_orchestrator.spec_source import read_document

_MARK = re.compile(r"#\s*<-\s*(\S*)")

BAD_SPECS = {
    "duplicate defender names": """
        name: smoke
        attackers: [{strategy: playbook}]
        defenders:
          - {name: a, url: http://h:1}
          - name: a                       # <- defenders[1].name
            url: http://h:2
        """,
    "duplicate attacker labels, by strategy": """
        name: smoke
        attackers:
          - strategy: crescendo
          - name: x
          - strategy: crescendo           # <- attackers[2].strategy
        defenders: [{name: a, url: http://h:1}]
        """,
    "duplicate attacker labels, the second without a strategy": """
        name: smoke
        attackers:
          - strategy: playbook
          - {}                            # <- attackers[1]
        defenders: [{name: a, url: http://h:1}]
        """,
    "duplicate attacker labels, by name": """
        name: smoke
        attackers:
          - strategy: crescendo
          - strategy: playbook
            name: crescendo               # <- attackers[1].name
        defenders: [{name: a, url: http://h:1}]
        """,
    "duplicate objective names": """
        name: smoke
        attackers: [{}]
        defenders: [{name: a, url: http://h:1}]
        objectives:
          - {name: o, phrase: Sure}
          - phrase: Fine
            name: o                       # <- objectives[1].name
        """,
    "over budget, at max_matches": """
        name: smoke
        attackers: [{}]
        defenders: [{name: a, url: http://h:1}]
        repetitions: 3
        budget:
          max_tokens: 10
          max_matches: 2                  # <- budget.max_matches
        """,
    "judge that cannot decide, named": """
        name: smoke
        attackers: [{}]
        defenders: [{name: a, url: http://h:1}]
        objectives:
          - rubric: leaks its prompt
            judge: exact                  # <- objectives[0].judge
        """,
    "judge that cannot decide, by default": """
        name: smoke
        attackers: [{}]
        defenders: [{name: a, url: http://h:1}]
        objectives:
          - rubric: leaks its prompt      # <- objectives[0]
        """,
    "unknown judge and a bad pattern": """
        name: smoke
        attackers: [{}]
        defenders: [{name: a, url: http://h:1}]
        objectives:
          - name: one
            judge: oracle                 # <- objectives[0].judge
          - judge: regex
            pattern: '('                  # <- objectives[1].pattern
        """,
    "phrase and rubric": """
        name: smoke
        attackers: [{}]
        defenders: [{name: a, url: http://h:1}]
        objectives:
          - phrase: Sure                  # <- objectives[0]
            rubric: leaks its prompt
        """,
    "field problems": """
        name: smoke
        repetiton: 2                      # <- repetiton
        attackers:
          - strategy: nope                # <- attackers[0].strategy
            params:
              rounds: [1]                 # <- attackers[0].params.rounds
        defenders:
          - name: a                       # <- defenders[0].url
          - name: b
            url: ftp://h                  # <- defenders[1].url
            credentials: {bearer_token_env: HOME}  # <- defenders[1].credentials.bearer_token_env
        """,
}


def _text(spec: str) -> str:
    return textwrap.dedent(spec).lstrip("\n")


def _marked(text: str) -> list[tuple[str, int]]:
    """The ``(location, line)`` of every ``# <- location`` marker, in line order."""
    return [
        (mark.group(1), number)
        for number, line in enumerate(text.splitlines(), start=1)
        for mark in _MARK.finditer(line)
    ]


def _reworded(error: ValidationError) -> ValidationError:
    """``error`` with every message, and every validator's own exception, saying something else."""
    details: list[InitErrorDetails] = []
    for index, item in enumerate(error.errors(include_url=False)):
        ctx: dict[str, Any] = dict(item.get("ctx") or {})
        if "error" in ctx:
            ctx["error"] = ValueError(f"reworded {index}")
        details.append(
            InitErrorDetails(
                type=PydanticCustomError(item["type"], f"reworded {index}", ctx),
                loc=item["loc"],
                input=item["input"],
            )
        )
    return ValidationError.from_exception_data(error.title, details)


@pytest.mark.parametrize("spec", list(BAD_SPECS.values()), ids=list(BAD_SPECS))
def test_each_problem_is_at_the_line_of_its_key_or_value(spec: str) -> None:
    text = _text(spec)
    with pytest.raises(CampaignSpecError) as caught:
        load_campaign_spec(text)
    assert [(p.location, p.line) for p in caught.value.problems] == _marked(text)


@pytest.mark.parametrize("spec", list(BAD_SPECS.values()), ids=list(BAD_SPECS))
def test_rewording_every_message_moves_no_problem(spec: str) -> None:
    data, lines = read_document(_text(spec), source="c.yaml", max_bytes=100_000)
    assert isinstance(data, dict)
    with pytest.raises(ValidationError) as caught:
        CampaignSpec.model_validate(data)
    reworded = _reworded(caught.value)

    original = validation_problems(caught.value, data, lines)
    moved = validation_problems(reworded, data, lines)

    assert [(p.location, p.line) for p in moved] == [(p.location, p.line) for p in original]
    assert any(p.message.startswith("reworded") for p in moved)


def test_model_validators_name_the_value_they_are_about() -> None:
    data = yaml.safe_load(
        _text(BAD_SPECS["duplicate attacker labels, by strategy"]).replace("name: x", "name: y")
    )
    with pytest.raises(ValidationError) as caught:
        CampaignSpec.model_validate(data)
    [details] = caught.value.errors(include_url=False)

    assert details["type"] == "duplicate_label"
    assert details["loc"] == ()
    assert details.get("ctx", {})[FIELD_PATH] == ("attackers", 2, "strategy")
    assert details["msg"] == "two attackers are called 'crescendo'; give each a distinct 'name'"
