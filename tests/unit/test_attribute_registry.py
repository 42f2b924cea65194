"""observability/attributes.yaml lists exactly the telemetry constants, each described."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena_core.telemetry import attributes

REGISTRY = Path(__file__).resolve().parents[2] / "observability" / "attributes.yaml"

ATTRIBUTE_TYPES = {"string", "int", "double", "boolean", "string[]"}
INSTRUMENTS = {"counter", "histogram", "updowncounter", "gauge"}
ARENA_NAME = re.compile(r"^arena\.[a-z_.]+$")
GENAI_SOURCE = "OpenTelemetry GenAI semantic conventions"


def _registry() -> dict[str, Any]:
    loaded = yaml.safe_load(REGISTRY.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _groups(kind: str) -> list[dict[str, Any]]:
    return [group for group in _registry()["groups"] if group["type"] == kind]


def _attributes() -> list[dict[str, Any]]:
    return [attribute for group in _groups("attribute_group") for attribute in group["attributes"]]


def _members() -> list[dict[str, Any]]:
    return [member for attribute in _attributes() for member in attribute.get("members", [])]


def _constants(prefix: str) -> dict[str, str]:
    return {name: getattr(attributes, name) for name in attributes.__all__ if name.startswith(prefix)}


def _attribute_constants() -> dict[str, str]:
    return _constants("GEN_AI_") | _constants("ARENA_")


def _described(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    assert isinstance(value, str), f"{entry.get('id')}: no {key}"
    assert value.strip(), f"{entry.get('id')}: empty {key}"
    return value


def test_every_constant_is_an_attribute_metric_or_operation_name() -> None:
    groups = [_constants(prefix) for prefix in ("GEN_AI_", "ARENA_", "METRIC_", "OPERATION_")]
    assert sum(len(group) for group in groups) == len(attributes.__all__)


def test_the_attributes_are_exactly_the_attribute_constants() -> None:
    listed = {entry["constant"]: entry["id"] for entry in _attributes()}
    assert len(listed) == len(_attributes()), "an attribute constant is listed twice"
    assert listed == _attribute_constants()


def test_the_metrics_are_exactly_the_metric_constants() -> None:
    listed = {group["constant"]: group["metric_name"] for group in _groups("metric")}
    assert len(listed) == len(_groups("metric")), "a metric constant is listed twice"
    assert listed == _constants("METRIC_")


def test_the_operation_names_are_exactly_the_operation_constants() -> None:
    operation = next(entry for entry in _attributes() if entry["id"] == attributes.GEN_AI_OPERATION_NAME)
    listed = {member["constant"]: member["value"] for member in operation["members"]}
    assert listed == _constants("OPERATION_")
    assert all(member["id"] == member["value"] for member in operation["members"])
    assert _members() == operation["members"], "only gen_ai.operation.name lists values"


def test_every_attribute_has_a_type_brief_examples_and_stability() -> None:
    for entry in _attributes():
        assert entry.get("type") in ATTRIBUTE_TYPES, entry["id"]
        _described(entry, "brief")
        assert isinstance(entry.get("examples"), list), entry["id"]
        assert entry["examples"], entry["id"]
        _described(entry, "stability")
        _described(entry, "source")
    for member in _members():
        _described(member, "brief")


def test_every_metric_has_an_instrument_unit_brief_and_known_attributes() -> None:
    known = {entry["id"] for entry in _attributes()}
    for group in _groups("metric"):
        name = group["metric_name"]
        assert group.get("instrument") in INSTRUMENTS, name
        _described(group, "unit")
        _described(group, "brief")
        _described(group, "stability")
        refs = [ref["ref"] for ref in group["attributes"]]
        assert set(refs) <= known, name
        assert len(refs) == len(set(refs)), name


def test_metric_attributes_have_low_cardinality() -> None:
    unbounded = {
        attributes.ARENA_CAMPAIGN_ID,
        attributes.ARENA_MATCH_ID,
        attributes.ARENA_TARGET_URL,
        attributes.GEN_AI_CONVERSATION_ID,
        attributes.GEN_AI_INPUT_MESSAGES,
        attributes.GEN_AI_OUTPUT_MESSAGES,
    }
    for group in _groups("metric"):
        assert not {ref["ref"] for ref in group["attributes"]} & unbounded, group["metric_name"]


def test_arena_names_are_ours_and_well_formed() -> None:
    arena_names = [entry["id"] for entry in _attributes() if not entry["id"].startswith("gen_ai.")]
    arena_names += [g["metric_name"] for g in _groups("metric") if not g["metric_name"].startswith("gen_ai.")]
    assert arena_names
    for name in arena_names:
        assert ARENA_NAME.match(name), name
    for entry in [*_attributes(), *_groups("metric")]:
        name = entry.get("metric_name", entry["id"])
        if not name.startswith("gen_ai."):
            assert entry["stability"] == "ours", name
            assert entry["source"] == "A2A Arena", name


def test_gen_ai_names_are_from_the_genai_conventions() -> None:
    conventions = _registry()["genai_conventions"]
    for entry in _attributes():
        if entry["id"].startswith("gen_ai."):
            assert entry["id"] in conventions["attributes"], entry["id"]
            assert entry["stability"] == "development", entry["id"]
            assert entry["source"] == GENAI_SOURCE, entry["id"]
    for group in _groups("metric"):
        if group["metric_name"].startswith("gen_ai."):
            assert group["metric_name"] in conventions["metrics"], group["metric_name"]
            assert group["source"] == GENAI_SOURCE, group["metric_name"]
    for member in _members():
        assert member["value"] in conventions["operation_names"], member["value"]


def test_the_genai_list_matches_the_installed_semantic_conventions() -> None:
    # The YAML's list is the reference the other tests use; check it against the
    # opentelemetry-semantic-conventions package when it is installed.
    gen_ai_attributes = pytest.importorskip("opentelemetry.semconv._incubating.attributes.gen_ai_attributes")
    gen_ai_metrics = pytest.importorskip("opentelemetry.semconv._incubating.metrics.gen_ai_metrics")
    known_attributes = {v for k, v in vars(gen_ai_attributes).items() if k.startswith("GEN_AI_")}
    known_metrics = {v for k, v in vars(gen_ai_metrics).items() if k.startswith("GEN_AI_")}
    known_operations = {member.value for member in gen_ai_attributes.GenAiOperationNameValues}
    conventions = _registry()["genai_conventions"]
    assert set(conventions["attributes"]) <= known_attributes
    assert set(conventions["metrics"]) <= known_metrics
    assert set(conventions["operation_names"]) <= known_operations


def test_every_name_is_one_that_no_other_entry_uses() -> None:
    names = [entry["id"] for entry in _attributes()] + [g["metric_name"] for g in _groups("metric")]
    assert len(names) == len(set(names))


def test_spans_refer_to_known_attributes_and_use_every_span_attribute() -> None:
    known = {entry["id"] for entry in _attributes()}
    used: set[str] = set()
    for span in _groups("span"):
        _described(span, "span_name")
        _described(span, "brief")
        _described(span, "service")
        refs = [ref["ref"] for ref in span["attributes"]]
        assert set(refs) <= known, span["span_name"]
        assert len(refs) == len(set(refs)), span["span_name"]
        used.update(refs)
    on_metrics_only = {attributes.GEN_AI_TOKEN_TYPE}
    assert used | on_metrics_only == known


def test_the_spans_of_a_match_are_described() -> None:
    spans = {span["span_name"]: span for span in _groups("span")}
    assert set(spans) == {
        "arena.campaign",
        "arena.match",
        "invoke_agent arena-attacker",
        "arena.turn",
        "invoke_agent arena-defender",
        "chat {gen_ai.request.model}",
        "execute_tool {gen_ai.tool.name}",
    }
    assert spans["arena.match"]["links"] == ["arena.campaign"]
    for name, operation in [
        ("invoke_agent arena-attacker", attributes.OPERATION_INVOKE_AGENT),
        ("invoke_agent arena-defender", attributes.OPERATION_INVOKE_AGENT),
        ("chat {gen_ai.request.model}", attributes.OPERATION_CHAT),
        ("execute_tool {gen_ai.tool.name}", attributes.OPERATION_EXECUTE_TOOL),
    ]:
        refs = {ref["ref"]: ref for ref in spans[name]["attributes"]}
        assert refs[attributes.GEN_AI_OPERATION_NAME]["value"] == operation
        assert name.startswith(f"{operation} ")


def test_message_content_is_opt_in_and_credentials_are_excluded() -> None:
    registry = _registry()
    content = registry["privacy"]["message_content"]
    assert content["enabled_by"] == "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"
    assert content["default"] is False
    assert set(content["attributes"]) == {attributes.GEN_AI_INPUT_MESSAGES, attributes.GEN_AI_OUTPUT_MESSAGES}
    assert "never appear" in registry["privacy"]["credentials"]
    for span in _groups("span"):
        for ref in span["attributes"]:
            if ref["ref"] in content["attributes"]:
                assert ref["requirement_level"] == "opt_in", span["span_name"]
