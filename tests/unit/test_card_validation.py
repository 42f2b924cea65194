"""Agent cards: strict 1.0 validation, card URLs, parsing and interface choice."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from arena_core.a2a.card_validation import card_problems_v1
from arena_core.a2a.client.card_resolver import card_url_for, choose_interface, parse_card
from arena_core.errors import AgentCardError

SOURCE = "http://agent.example/.well-known/agent-card.json"


def iface(url: str, binding: str = "JSONRPC", version: str | None = "1.0") -> dict[str, Any]:
    interface: dict[str, Any] = {"url": url, "protocolBinding": binding}
    if version is not None:
        interface["protocolVersion"] = version
    return interface


def card_v1(*interfaces: dict[str, Any]) -> dict[str, Any]:
    """A complete A2A 1.0 card."""
    return {
        "name": "Defender",
        "description": "Keeps a secret phrase to itself",
        "version": "1.0.0",
        "supportedInterfaces": list(interfaces) or [iface("http://agent.example/a2a/jsonrpc")],
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chat", "name": "Chat", "description": "Talk with the agent", "tags": ["chat"]}],
    }


def card_v03() -> dict[str, Any]:
    """A 0.3-style card: one top-level url, no supportedInterfaces."""
    card = card_v1()
    del card["supportedInterfaces"]
    card.update(
        url="http://old.example/a2a",
        preferredTransport="HTTP+JSON",
        protocolVersion="0.3.0",
    )
    return card


def _without(card: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in card.items() if key not in keys}


# --- card_problems_v1 ---------------------------------------------------------------------------


def test_complete_v1_card_has_no_problems() -> None:
    assert card_problems_v1(card_v1()) == []


def test_legacy_fields_are_reported_and_the_rest_checked() -> None:
    card = {**card_v1(), "url": "http://agent.example", "protocolVersion": "0.3.0"}
    assert card_problems_v1(card) == [
        "has A2A 0.3 legacy fields url, protocolVersion (fine for 0.3 clients, not strict 1.0)"
    ]


def test_pure_v03_card_reports_legacy_and_missing_interfaces() -> None:
    problems = card_problems_v1(card_v03())
    assert problems[0] == (
        "has A2A 0.3 legacy fields url, preferredTransport, protocolVersion "
        "(fine for 0.3 clients, not strict 1.0)"
    )
    assert problems[1].startswith("misses required fields: ")
    assert "supported_interfaces" in problems[1]


@pytest.mark.parametrize(
    ("missing", "field"),
    [
        ("name", "name"),
        ("description", "description"),
        ("version", "version"),
        ("skills", "skills"),
        ("supportedInterfaces", "supported_interfaces"),
        ("defaultInputModes", "default_input_modes"),
    ],
)
def test_missing_required_field_is_reported(missing: str, field: str) -> None:
    problems = card_problems_v1(_without(card_v1(), missing))
    assert len(problems) == 1
    assert problems[0].startswith("misses required fields: ")
    assert field in problems[0]


def test_unknown_field_breaks_the_schema() -> None:
    problems = card_problems_v1({**card_v1(), "homepage": "http://agent.example"})
    assert len(problems) == 1
    assert problems[0].startswith("does not match the 1.0 AgentCard schema: ")
    assert "homepage" in problems[0]


def test_wrong_type_breaks_the_schema() -> None:
    problems = card_problems_v1({**card_v1(), "skills": "chat"})
    assert problems[0].startswith("does not match the 1.0 AgentCard schema: ")


def test_interface_without_protocol_version_is_reported() -> None:
    card = card_v1(iface("http://a/1"), iface("http://a/2", version=None))
    problems = card_problems_v1(card)
    # Reported once, as a missing required field.
    assert problems == ["misses required fields: supported_interfaces[1].protocol_version"]


def test_incomplete_skill_is_reported() -> None:
    card = card_v1()
    card["skills"] = [{"id": "chat"}]
    (problem,) = card_problems_v1(card)
    assert "skills[0].name" in problem
    assert "skills[0].tags" in problem


def test_check_does_not_change_the_card() -> None:
    card = {**card_v1(), "url": "http://agent.example"}
    before = copy.deepcopy(card)
    card_problems_v1(card)
    assert card == before


# --- card_url_for -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "card_url"),
    [
        ("http://agent.example", "http://agent.example/.well-known/agent-card.json"),
        ("http://agent.example/", "http://agent.example/.well-known/agent-card.json"),
        ("  http://agent.example:8081/  ", "http://agent.example:8081/.well-known/agent-card.json"),
        ("http://agent.example/a2a", "http://agent.example/a2a/.well-known/agent-card.json"),
        (
            "http://agent.example/.well-known/agent-card.json",
            "http://agent.example/.well-known/agent-card.json",
        ),
        ("https://agent.example/cards/defender.json", "https://agent.example/cards/defender.json"),
    ],
)
def test_card_url_for(url: str, card_url: str) -> None:
    assert card_url_for(url) == card_url


# --- parse_card ---------------------------------------------------------------------------------


def test_parse_v1_card() -> None:
    card = parse_card(card_v1(), SOURCE)
    assert card.name == "Defender"
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        ("http://agent.example/a2a/jsonrpc", "JSONRPC", "1.0")
    ]


def test_parse_v03_card_yields_a_03_interface() -> None:
    raw = card_v03()
    card = parse_card(raw, SOURCE)
    chosen = choose_interface(card)
    assert (chosen.url, chosen.protocol_binding, chosen.protocol_version) == (
        "http://old.example/a2a",
        "HTTP+JSON",
        "0.3.0",
    )
    assert raw == card_v03()  # the caller's dict is left alone


def test_parse_v03_card_defaults_to_jsonrpc_and_03() -> None:
    raw = _without(card_v03(), "preferredTransport", "protocolVersion")
    chosen = choose_interface(parse_card(raw, SOURCE))
    assert (chosen.protocol_binding, chosen.protocol_version) == ("JSONRPC", "0.3.0")


def test_parse_v03_card_with_additional_interfaces() -> None:
    raw = {
        **card_v03(),
        "additionalInterfaces": [{"url": "http://old.example/rpc", "transport": "JSONRPC"}],
    }
    card = parse_card(raw, SOURCE)
    assert [(i.url, i.protocol_binding) for i in card.supported_interfaces] == [
        ("http://old.example/a2a", "HTTP+JSON"),
        ("http://old.example/rpc", "JSONRPC"),
    ]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(_without(card_v1(), "name"), "missing name", id="no-name"),
        pytest.param(_without(card_v1(), "skills"), "missing skills", id="no-skills"),
        pytest.param(
            _without(card_v1(), "supportedInterfaces"), "missing supportedInterfaces", id="no-interfaces"
        ),
        pytest.param({}, "missing name, skills, supportedInterfaces", id="empty"),
        pytest.param({**card_v1(), "supportedInterfaces": []}, "lists no interface", id="empty-interfaces"),
        pytest.param({**card_v1(), "skills": "chat"}, "is not a valid A2A agent card", id="bad-type"),
    ],
)
def test_parse_rejects_bad_cards(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(AgentCardError, match=message) as caught:
        parse_card(raw, SOURCE)
    assert str(caught.value).startswith(SOURCE)


def test_parse_ignores_unknown_fields() -> None:
    assert parse_card({**card_v1(), "homepage": "http://x"}, SOURCE).name == "Defender"


# --- choose_interface ---------------------------------------------------------------------------


def _chosen_url(*interfaces: dict[str, Any]) -> str:
    return choose_interface(parse_card(card_v1(*interfaces), SOURCE)).url


@pytest.mark.parametrize(
    ("interfaces", "url"),
    [
        pytest.param(
            [iface("http://a/v1", version="1.0"), iface("http://a/v03", version="0.3.0")],
            "http://a/v1",
            id="1.0-first",
        ),
        pytest.param(
            [iface("http://a/v03", version="0.3.0"), iface("http://a/v1", version="1.0")],
            "http://a/v1",
            id="1.0-second",
        ),
        pytest.param(
            [iface("http://a/v03", "HTTP+JSON", "0.3"), iface("http://a/v12", "HTTP+JSON", "1.2")],
            "http://a/v12",
            id="any-1.x",
        ),
        pytest.param(
            [iface("http://a/rpc", "JSONRPC"), iface("http://a/rest", "HTTP+JSON")],
            "http://a/rpc",
            id="card-order-rpc-first",
        ),
        pytest.param(
            [iface("http://a/rest", "HTTP+JSON"), iface("http://a/rpc", "JSONRPC")],
            "http://a/rest",
            id="card-order-rest-first",
        ),
        pytest.param(
            [iface("http://a/grpc", "GRPC", "1.0"), iface("http://a/v03", "JSONRPC", "0.3.0")],
            "http://a/v03",
            id="grpc-skipped",
        ),
        pytest.param(
            [iface("http://a/unversioned", version=None), iface("http://a/v03", version="0.3.0")],
            "http://a/v03",
            id="0.3-over-unversioned",
        ),
        pytest.param(
            [iface("http://a/v2", version="2.0"), iface("http://a/unversioned", version=None)],
            "http://a/v2",
            id="unknown-versions-in-card-order",
        ),
    ],
)
def test_choose_interface(interfaces: list[dict[str, Any]], url: str) -> None:
    assert _chosen_url(*interfaces) == url


@pytest.mark.parametrize(
    ("interfaces", "offered"),
    [
        ([iface("http://a/grpc", "GRPC")], "offered: GRPC;"),
        ([iface("http://a/grpc", "GRPC"), iface("http://a/ws", "WEBSOCKET")], "offered: GRPC, WEBSOCKET;"),
    ],
)
def test_no_usable_interface_is_a_card_error(interfaces: list[dict[str, Any]], offered: str) -> None:
    card = parse_card(card_v1(*interfaces), SOURCE)
    with pytest.raises(AgentCardError, match="offers no interface the arena speaks") as caught:
        choose_interface(card)
    assert offered in str(caught.value)
    assert "supported: JSONRPC, HTTP+JSON" in str(caught.value)
