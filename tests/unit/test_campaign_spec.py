"""Reading campaign specs: the example file, JSON, and every problem reported with its line."""

from __future__ import annotations

import json
import pickle
import textwrap
from pathlib import Path

import pytest

from arena_attacker.strategies.registry import validate_strategy
from arena_core.errors import InvalidInputError, exit_code_for_kind
from arena_core.strategy_names import BUILTIN_STRATEGY_NAMES
from arena_orchestrator.campaign_spec import CampaignSpec
from arena_orchestrator.spec_loader import (
    MAX_CAMPAIGN_BYTES,
    CampaignSpecError,
    load_campaign_spec,
    parse_campaign_object,
)
from arena_orchestrator.spec_problem import SpecProblem
from arena_orchestrator.spec_source import MAX_DEPTH, SourceLines

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "campaign.yaml"

VALID = """\
name: smoke
attackers:
  - strategy: playbook
defenders:
  - name: hardened
    url: http://127.0.0.1:8081
"""


def _doc(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _fail(text: str | bytes, **kwargs: object) -> CampaignSpecError:
    with pytest.raises(CampaignSpecError) as caught:
        load_campaign_spec(text, **kwargs)  # type: ignore[arg-type]
    return caught.value


def _where(error: CampaignSpecError) -> list[tuple[str, int | None]]:
    return [(p.location, p.line) for p in error.problems]


# The example ---------------------------------------------------------------------------------


def test_example_file_loads_and_expands_to_20_matches() -> None:
    spec = load_campaign_spec(EXAMPLE.read_bytes(), source=str(EXAMPLE))

    assert spec.match_count == 20
    assert [a.label for a in spec.attackers] == ["playbook", "crescendo-patient"]
    assert [a.strategy for a in spec.attackers] == ["playbook", "crescendo"]
    assert spec.uses_builtin_attacker
    assert [(d.name, d.url) for d in spec.defenders] == [
        ("hardened", "http://127.0.0.1:8081"),
        ("naive", "http://127.0.0.1:8083"),
    ]
    assert [d.max_concurrency for d in spec.defenders] == [1, None]
    assert spec.objective_labels() == ["give-up"]
    assert spec.objectives[0].objective.phrase == "I Give Up"
    assert spec.objectives[0].judge == "phrase"
    assert (spec.repetitions, spec.max_turns, spec.concurrency) == (5, 5, 2)
    assert spec.match_timeout_s == 900
    assert spec.budget.max_matches is not None and spec.budget.max_matches >= spec.match_count
    assert spec.budget.max_tokens is not None
    assert spec.seed == 42


def test_example_strategy_params_are_accepted_by_the_attacker() -> None:
    spec = load_campaign_spec(EXAMPLE.read_text(encoding="utf-8"))
    for attacker in spec.attackers:
        for objective in spec.objectives:
            validate_strategy(attacker.strategy, attacker.params, objective.objective)


def test_example_documents_bearer_token_env_in_a_comment() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "#   bearer_token_env: ARENA_TARGET_TOKEN_" in text


def test_minimal_spec_gets_defaults() -> None:
    spec = load_campaign_spec(VALID)
    assert spec.match_count == 1
    assert spec.objective_labels() == ["phrase"]
    assert spec.repetitions == 1


# JSON ---------------------------------------------------------------------------------------


def test_json_gives_the_same_spec_as_yaml() -> None:
    from_yaml = load_campaign_spec(EXAMPLE.read_bytes())
    as_json = json.dumps(from_yaml.model_dump(mode="json"), indent=2)

    assert load_campaign_spec(as_json, source="campaign.json") == from_yaml
    assert load_campaign_spec(as_json.encode()) == from_yaml  # detected by its first character


def test_json_keeps_json_semantics_and_accepts_tabs() -> None:
    text = '{\n\t"name": "j",\n\t"attackers": [{"strategy": "playbook"}],\n\t"defenders": [{"name": "a", '
    text += '"url": "http://h:1"}],\n\t"match_timeout_s": 1e3\n}'
    spec = load_campaign_spec(text)
    assert spec.match_timeout_s == 1000.0  # YAML 1.1 would read 1e3 as a string


def test_json_problems_have_lines() -> None:
    text = '{"name": "j",\n "attackers": [{"strategy": "playbook"}],\n "defenders": [{"name": "a",\n'
    text += '   "url": "ftp://h"}],\n "repetitions": 0}'
    error = _fail(text, source="c.json")
    assert _where(error) == [("defenders[0].url", 4), ("repetitions", 5)]


def test_json_syntax_error_has_line_and_column() -> None:
    error = _fail('{"name": "j",\n "attackers": [{"strategy": "playbook"},]}', source="c.json")
    assert _where(error) == [("", 2)]
    assert "JSON syntax error at line 2, column 41: Expecting value" in str(error)


def test_json_duplicate_keys_are_rejected() -> None:
    error = _fail('{"name": "a",\n "attackers": [],\n "name": "b"}')
    assert _where(error) == [("name", 3)]
    assert "duplicate key 'name' (first at line 1)" in error.problems[0].message


def test_json_body_via_parse_campaign_object() -> None:
    body: dict[str, object] = {
        "name": "api",
        "attackers": [{}],
        "defenders": [{"name": "a", "url": "http://h:1/"}],
    }
    spec = parse_campaign_object(body, source="request body")
    assert isinstance(spec, CampaignSpec)
    assert spec.defenders[0].url == "http://h:1"

    body["repetitions"] = -1
    with pytest.raises(CampaignSpecError) as caught:
        parse_campaign_object(body, source="request body")
    assert _where(caught.value) == [("repetitions", None)]
    assert str(caught.value).startswith("request body: 1 problem:\n  repetitions: ")


def test_parse_campaign_object_uses_given_lines() -> None:
    lines = SourceLines(values={(): 1, ("repetitions",): 7}, keys={("repetitions",): 7})
    with pytest.raises(CampaignSpecError) as caught:
        parse_campaign_object({"name": "x", "attackers": [{}], "repetitions": 0}, lines=lines)
    assert _where(caught.value) == [("defenders", 1), ("repetitions", 7)]


def test_parse_campaign_object_rejects_a_non_mapping() -> None:
    with pytest.raises(CampaignSpecError) as caught:
        parse_campaign_object(["a"])
    assert "the top level must be a mapping" in str(caught.value)


# Field problems, with their lines --------------------------------------------------------------


def test_unknown_strategy_names_the_known_ones_and_the_line() -> None:
    error = _fail(VALID.replace("strategy: playbook", "strategy: jailbreak"), source="c.yaml")
    assert _where(error) == [("attackers[0].strategy", 3)]
    message = error.problems[0].message
    assert "unknown strategy 'jailbreak'" in message
    assert all(name in message for name in BUILTIN_STRATEGY_NAMES)
    assert str(error).startswith("c.yaml: 1 problem:\n  line 3, attackers[0].strategy: unknown strategy")


def test_bad_url_points_at_the_url_value() -> None:
    text = _doc(
        """
        name: smoke
        attackers: [{strategy: playbook}]
        defenders:
          - name: a
            url: http://127.0.0.1:8081
          - name: b
            url:
              not-a-url
        """
    )
    error = _fail(text)
    assert _where(error) == [("defenders[1].url", 8)]
    assert "defender url must be an http(s) URL" in error.problems[0].message
    assert not error.problems[0].message.startswith("Value error")


def test_attacker_url_is_checked_too() -> None:
    error = _fail(VALID.replace("- strategy: playbook", "- url: ws://h:1"))
    assert _where(error) == [("attackers[0].url", 3)]
    assert "attacker url must be an http(s) URL" in str(error)


def test_negative_repetitions() -> None:
    error = _fail(VALID + "repetitions: -3\n")
    assert _where(error) == [("repetitions", 7)]
    assert error.problems[0].message == "Input should be greater than or equal to 1"


def test_wrong_type_says_what_it_got() -> None:
    error = _fail(VALID + "max_turns: many\n")
    assert _where(error) == [("max_turns", 7)]
    assert "valid integer" in str(error)

    error = _fail(VALID.replace("  - strategy: playbook", "  - playbook"))
    assert _where(error) == [("attackers[0]", 3)]
    assert "expected a mapping of fields, got a string ('playbook')" in str(error)

    error = _fail(VALID.replace("attackers:\n  - strategy: playbook", "attackers: playbook"))
    assert "attackers: expected a list, got a string" in str(error)


def test_param_of_the_wrong_type_is_one_problem() -> None:
    text = VALID.replace(
        "  - strategy: playbook", "  - strategy: crescendo\n    params: {max_backtracks: [1, 2]}"
    )
    error = _fail(text)
    assert _where(error) == [("attackers[0].params.max_backtracks", 4)]
    assert "boolean, integer, number or string, got a list" in error.problems[0].message


def test_unknown_field_suggests_a_close_match() -> None:
    error = _fail(VALID + "repetiton: 3\n")
    assert _where(error) == [("repetiton", 7)]
    assert error.problems[0].message == "unknown field 'repetiton'; did you mean 'repetitions'?"


def test_unknown_nested_field_suggests_from_its_own_model() -> None:
    text = VALID.replace(
        "    url: http://127.0.0.1:8081", "    url: http://127.0.0.1:8081\n    max_concurency: 2"
    )
    error = _fail(text)
    assert _where(error) == [("defenders[0].max_concurency", 7)]
    assert "did you mean 'max_concurrency'?" in str(error)


def test_unknown_field_without_a_close_match_lists_the_fields() -> None:
    error = _fail(VALID + "budget:\n  dollars: 5\n")
    assert _where(error) == [("budget.dollars", 8)]
    assert error.problems[0].message == "unknown field 'dollars'; the fields are: max_matches, max_tokens"


def test_missing_defenders_points_at_the_enclosing_mapping() -> None:
    error = _fail("# a campaign\nname: smoke\nattackers: [{}]\n")
    assert _where(error) == [("defenders", 2)]
    assert error.problems[0].message == "missing required field 'defenders'"


def test_missing_nested_field_points_at_its_mapping() -> None:
    error = _fail(VALID.replace("    url: http://127.0.0.1:8081\n", "") + "seed: 1\n")
    assert _where(error) == [("defenders[0].url", 5)]
    assert "missing required field 'url'" in str(error)


def test_duplicate_defender_names_point_at_the_second_name() -> None:
    text = VALID + "  - name: hardened\n    url: http://127.0.0.1:8083\n"
    error = _fail(text)
    assert _where(error) == [("defenders[1].name", 7)]
    assert "two defenders are called 'hardened'" in error.problems[0].message


def test_duplicate_attacker_labels_point_at_the_second_attacker() -> None:
    text = VALID.replace("  - strategy: playbook\n", "  - strategy: playbook\n  - {}\n")
    error = _fail(text)
    assert _where(error) == [("attackers[1]", 4)]
    assert "two attackers are called 'playbook'" in str(error)


def test_invalid_name() -> None:
    error = _fail(VALID.replace("name: hardened", "name: hard ened"))
    assert _where(error) == [("defenders[0].name", 5)]
    assert "'hard ened' is not a valid name" in str(error)


def test_rubric_with_the_phrase_judge_uses_the_judges_message() -> None:
    text = VALID + "objectives:\n  - rubric: reveals its system prompt\n    judge: phrase\n"
    error = _fail(text)
    assert _where(error) == [("objectives[0].judge", 9)]
    assert error.problems[0].message == "judge 'phrase' cannot decide a rubric objective; use the llm judge"


def test_rubric_with_the_default_judge_points_at_the_objective() -> None:
    error = _fail(VALID + "objectives:\n  - rubric: reveals its system prompt\n")
    assert _where(error) == [("objectives[0]", 8)]
    assert "cannot decide a rubric objective" in str(error)


def test_unknown_judge_and_bad_pattern() -> None:
    text = VALID + "objectives:\n  - judge: oracle\n  - judge: regex\n    pattern: '('\n"
    error = _fail(text)
    assert _where(error) == [("objectives[0].judge", 8), ("objectives[1].pattern", 10)]
    assert "unknown judge 'oracle'; choose one of: phrase" in str(error)
    assert "pattern is not a valid regular expression" in str(error)


def test_budget_max_matches_exceeded() -> None:
    text = VALID + "repetitions: 10\nbudget:\n  max_matches: 4\n"
    error = _fail(text)
    assert _where(error) == [("budget.max_matches", 9)]
    assert error.problems[0].message == "the campaign expands to 10 matches, above budget.max_matches (4)"


def test_bearer_token_env_must_be_an_arena_target_token_variable() -> None:
    text = VALID + "    credentials:\n      bearer_token_env: OPENAI_API_KEY\n"
    error = _fail(text)
    assert _where(error) == [("defenders[0].credentials.bearer_token_env", 8)]
    assert "'OPENAI_API_KEY' is not allowed" in str(error)
    assert "ARENA_TARGET_TOKEN_<NAME>" in str(error)

    good = load_campaign_spec(text.replace("OPENAI_API_KEY", "ARENA_TARGET_TOKEN_HARDENED"))
    assert good.defenders[0].credentials is not None
    assert good.defenders[0].credentials.bearer_token_env == "ARENA_TARGET_TOKEN_HARDENED"


def test_credentials_in_the_url_are_refused() -> None:
    error = _fail(VALID.replace("http://127.0.0.1:8081", "http://admin:s3cret@127.0.0.1:8081"))
    assert _where(error) == [("defenders[0].url", 6)]
    assert "must not carry credentials; use credentials.bearer_token_env" in str(error)
    assert "s3cret" not in str(error)


def test_several_problems_in_one_readable_message_sorted_by_line() -> None:
    text = _doc(
        """
        name: smoke
        repetitions: 0
        attackers:
          - strategy: playbook
        defenders:
          - name: a
            url: nope
        """
    )
    error = _fail(text, source="campaign.yaml")
    assert str(error) == (
        "campaign.yaml: 2 problems:\n"
        "  line 2, repetitions: Input should be greater than or equal to 1\n"
        "  line 7, defenders[0].url: defender url must be an http(s) URL such as "
        "http://127.0.0.1:8081, got 'nope'"
    )
    assert error.message == str(error)


# YAML problems ---------------------------------------------------------------------------------


def test_yaml_syntax_error_has_line_and_column() -> None:
    text = "name: smoke\nattackers:\n  - strategy: playbook\n   url: x\n"
    error = _fail(text, source="c.yaml")
    assert _where(error) == [("", 4)]
    assert error.problems[0].message.startswith("YAML syntax error at line 4, column 4: ")
    assert str(error).startswith("c.yaml: 1 problem:\n  YAML syntax error at line 4, column 4")


def test_yaml_unclosed_quote_names_where_it_started() -> None:
    error = _fail("name: 'smoke\nrepetitions: 3\n")
    assert "YAML syntax error at line 3, column 1" in str(error)
    assert "while scanning a quoted scalar at line 1, column 7" in str(error)


def test_tab_indentation_gets_a_hint() -> None:
    error = _fail("name: smoke\nattackers:\n\t- strategy: playbook\n")
    assert _where(error) == [("", 3)]
    assert "YAML syntax error at line 3, column 1" in str(error)
    assert "indented with spaces, not tabs" in str(error)


def test_duplicate_keys_are_rejected() -> None:
    text = VALID + "name: other\n"
    error = _fail(text)
    assert _where(error) == [("name", 7)]
    assert error.problems[0].message.startswith("duplicate key 'name' (first at line 1)")


def test_nested_duplicate_keys_are_rejected() -> None:
    text = VALID + "    url: http://127.0.0.1:9999\n"
    error = _fail(text)
    assert _where(error) == [("defenders[0].url", 7)]
    assert "duplicate key 'url' (first at line 6)" in str(error)


def test_anchors_aliases_and_merge_keys_work() -> None:
    text = _doc(
        """
        name: merged
        attackers: [{strategy: playbook}]
        defenders:
          - &base
            name: a
            url: http://127.0.0.1:8081
            max_concurrency: 2
          - <<: *base
            name: b
        objectives:
          - &phrase {phrase: I Give Up, name: one}
          - {<<: *phrase, name: two}
        """
    )
    spec = load_campaign_spec(text)
    assert [(d.name, d.url, d.max_concurrency) for d in spec.defenders] == [
        ("a", "http://127.0.0.1:8081", 2),
        ("b", "http://127.0.0.1:8081", 2),
    ]
    assert spec.objective_labels() == ["one", "two"]


def test_problem_in_a_merged_value_points_at_its_definition() -> None:
    text = (
        VALID.replace("    url: http://127.0.0.1:8081\n", "    url: &u nope\n") + "  - name: b\n    url: *u\n"
    )
    error = _fail(text)
    assert _where(error) == [("defenders[0].url", 6), ("defenders[1].url", 6)]


def test_non_mapping_top_level() -> None:
    error = _fail("- name: smoke\n- name: other\n")
    assert _where(error) == [("", 1)]
    assert "the top level must be a mapping of campaign fields" in str(error)
    assert "got a list" in str(error)

    assert "got a string ('smoke')" in str(_fail("smoke\n"))
    assert "got a list" in str(_fail("[1, 2]"))


def test_empty_document() -> None:
    for text in ("", "# only a comment\n", "---\n"):
        error = _fail(text)
        assert "the campaign is empty" in str(error)


def test_two_documents_are_refused() -> None:
    error = _fail(VALID + "---\nname: second\n")
    assert _where(error) == [("", 7)]
    assert "YAML syntax error at line 7" in str(error)


def test_python_tags_are_never_constructed() -> None:
    text = VALID.replace("name: smoke", "name: !!python/object/apply:os.system ['echo pwned']")
    error = _fail(text)
    assert _where(error) == [("name", 1)]
    assert "unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system'" in str(error)

    error = _fail(VALID + "budget: !!set {a, b}\n")
    assert _where(error) == [("budget", 7)]
    assert "unsupported YAML tag" in str(error)


def test_unreadable_scalar_is_located() -> None:
    error = _fail(VALID + "seed: 2024-13-45\n")
    assert _where(error) == [("seed", 7)]
    assert "cannot read the value '2024-13-45'" in str(error)


def test_billion_laughs_is_stopped() -> None:
    text = _doc(
        """
        a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]
        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
        i: [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
        """
    )
    error = _fail(text)
    assert len(error.problems) == 1
    assert "more than 100,000 values" in str(error)
    assert "billion laughs" in str(error)


def test_node_limit_is_configurable() -> None:
    assert load_campaign_spec(VALID, max_nodes=100).name == "smoke"
    error = _fail(VALID, max_nodes=5)
    assert "more than 5 values" in str(error)


def test_recursive_alias_is_refused() -> None:
    error = _fail(VALID + "objectives: &o [*o]\n")
    assert _where(error) == [("objectives[0]", 7)]
    assert "recursive alias" in str(error)


def test_deep_nesting_is_refused() -> None:
    deep = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    error = _fail(VALID + f"description: {deep}\n")
    assert "nested more than" in str(error)

    very_deep = "[" * 5000 + "]" * 5000
    error = _fail(VALID + f"description: {very_deep}\n")
    assert len(error.problems) == 1
    assert "nest" in str(error)


def test_control_characters_are_refused_with_their_position() -> None:
    error = _fail("name: smoke\nattackers: [{}]\x00\n")
    assert _where(error) == [("", 2)]
    assert "line 2, column 16" in str(error)
    assert "U+0000" in str(error)


# Size and encoding -----------------------------------------------------------------------------


def test_oversized_input_is_refused_before_parsing() -> None:
    big = VALID + "description: '" + "x" * 2000 + "'\n"
    error = _fail(big.encode(), max_bytes=1000)
    assert len(error.problems) == 1
    assert _where(error) == [("", None)]
    assert f"the campaign is {len(big.encode()):,} bytes, above the limit of 1,000 bytes" in str(error)

    assert "above the limit of 1,000 bytes" in str(_fail(big, max_bytes=1000))
    assert "above the limit" in str(_fail("#" * (MAX_CAMPAIGN_BYTES + 1)))


def test_size_limit_counts_utf8_bytes() -> None:
    text = VALID + "description: " + "é" * 10 + "\n"
    size = len(text.encode())
    assert load_campaign_spec(text, max_bytes=size).description == "é" * 10
    assert f"the campaign is {size} bytes" in str(_fail(text, max_bytes=size - 1))


def test_non_utf8_bytes_are_refused_clearly() -> None:
    error = _fail(VALID.encode() + b"description: caf\xe9\n")
    assert _where(error) == [("", 7)]
    assert "not UTF-8 text: byte 0xe9" in str(error)


def test_utf8_byte_order_mark_is_ignored() -> None:
    assert load_campaign_spec(b"\xef\xbb\xbf" + VALID.encode()).name == "smoke"
    assert load_campaign_spec("\ufeff" + VALID).name == "smoke"


# The error type --------------------------------------------------------------------------------


def test_error_is_an_invalid_input_error() -> None:
    error = _fail(VALID + "repetitions: 0\n")
    assert isinstance(error, InvalidInputError)
    assert error.kind == "invalid_campaign"
    assert error.http_status == 400
    assert error.exit_code == 2
    assert exit_code_for_kind("invalid_campaign") == 2
    assert error.source == "<campaign>"


def test_error_survives_pickling() -> None:
    error = _fail(VALID + "repetitions: 0\n", source="c.yaml")
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, CampaignSpecError)
    assert copy.problems == error.problems
    assert str(copy) == str(error)


def test_spec_problem_renders_line_and_location() -> None:
    assert str(SpecProblem(location="a.b", line=3, message="bad")) == "line 3, a.b: bad"
    assert str(SpecProblem(location="a.b", message="bad")) == "a.b: bad"
    assert str(SpecProblem(line=4, message="YAML syntax error at line 4, column 1: x")) == (
        "YAML syntax error at line 4, column 1: x"
    )
    assert str(SpecProblem(line=40, message="YAML syntax error at line 4, column 1: x")).startswith(
        "line 40: "
    )
    with pytest.raises(ValueError, match="frozen"):
        SpecProblem(message="x").message = "y"


# Converters ---------------------------------------------------------------------------------


def test_attackers_take_converters_by_name_or_as_objects_and_are_labelled_by_them() -> None:
    spec = load_campaign_spec(
        _doc(
            """
            name: c
            attackers:
              - strategy: playbook
              - strategy: playbook
                converters: [base64, "noise:sigma=0.3"]
              - strategy: playbook
                converters:
                  - {name: translate, params: {language: Zulu}}
                  - {name: split, params: {parts: 3}}
            defenders:
              - {name: d, url: "http://127.0.0.1:8081"}
            """
        )
    )
    assert [a.label for a in spec.attackers] == [
        "playbook",
        "playbook+base64+noise",
        "playbook+translate+split",
    ]
    assert spec.attackers[1].converters[1].params == {"sigma": 0.3}


@pytest.mark.parametrize(
    ("converters", "says"),
    [
        ("[bas64]", "unknown converter 'bas64'"),
        ("[split, base64]", "put it last"),
        ('["noise:sigma=9"]', "invalid params for converter 'noise'"),
        ("[{name: hex, params: {separator: abcd}}]", "separator"),
    ],
)
def test_a_bad_converter_is_refused_with_its_line(converters: str, says: str) -> None:
    error = _fail(
        "name: c\nattackers:\n  - strategy: playbook\n"
        f"    converters: {converters}\n"
        "defenders:\n  - {name: d, url: 'http://127.0.0.1:8081'}\n"
    )
    assert says in str(error)
    assert any(
        location.startswith("attackers[0].converters") and line == 4 for location, line in _where(error)
    )
