"""The agent card: discovery, required fields, declared interfaces, caching.

One endpoint serves the card in two renderings (``ARENA_CARD_V03_COMPAT=auto``, the
default): to a request naming ``A2A-Version: 1.0`` the strict 1.0 card, to one without the
header (0.3, 1.0 3.6.2) the card with the 0.3 fields. ``1.0-card`` checks the first against
the 1.0 specification, ``0.3-card`` the second against 0.3. The caching requirements exist
in 1.0 only (8.6); they are checked on both renderings, the 0.3 one marked ``(1.0)``.
"""

from __future__ import annotations

from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from conformance.checks import MAJOR_MINOR, non_camel_keys
from conformance.spec import Requirement, on_versions
from conformance.wire import (
    CARD_PATH,
    TASK_NOT_FOUND,
    V03_JSONRPC,
    V03_REST,
    V10_JSONRPC,
    V10_REST,
    VERSION_HEADER,
    Agent,
    Endpoints,
    Exchange,
    Wire,
    card_endpoints,
    expect_error,
    explain,
)

pytestmark = pytest.mark.system

VERSIONS = ("1.0", "0.3")
WIRE_OF = {("1.0", "JSONRPC"): V10_JSONRPC, ("1.0", "HTTP+JSON"): V10_REST}
WIRE_OF_V03 = {"JSONRPC": V03_JSONRPC, "HTTP+JSON": V03_REST}


def fetch_card(http: httpx.Client, url: str, version: str, **headers: str) -> Exchange:
    """GET the card as a client of ``version`` would (1.0 names the version; 0.3 sends no header)."""
    sent = {VERSION_HEADER: "1.0"} if version == "1.0" else {}
    sent |= {name.replace("_", "-"): value for name, value in headers.items()}
    response = http.get(f"{url}{CARD_PATH}", headers=sent)
    return Exchange(
        "GET", str(response.request.url), sent, "", response.status_code, response.headers, response.text
    )


def card_json(exchange: Exchange) -> dict[str, Any]:
    assert exchange.status == 200, explain("the card must be served", exchange)
    try:
        card = exchange.json()
    except ValueError:
        raise AssertionError(explain("the card must be JSON", exchange)) from None
    assert isinstance(card, dict), explain("the card must be a JSON object", exchange)
    return card


SERVED = Requirement("the agent card is served at /.well-known/agent-card.json as JSON", "MUST", "8.2", "5.3")


@on_versions(SERVED, VERSIONS, "card")
def test_card_is_served_at_the_well_known_uri(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card_json(exchange)
    assert exchange.media_type in {"application/json", "application/a2a+json"}, explain(
        "the card is a JSON document (1.0 14.3; 0.3 5.3)", exchange
    )


REQUIRED_FIELDS = Requirement("AgentCard has its required fields", "MUST", "4.4.1", "5.5")
V10_CARD_FIELDS = {
    "name": str,
    "description": str,
    "supportedInterfaces": list,
    "version": str,
    "capabilities": dict,
    "defaultInputModes": list,
    "defaultOutputModes": list,
    "skills": list,
}
V03_CARD_FIELDS = {
    "name": str,
    "description": str,
    "url": str,
    "preferredTransport": str,
    "protocolVersion": str,
    "version": str,
    "capabilities": dict,
    "defaultInputModes": list,
    "defaultOutputModes": list,
    "skills": list,
}
SKILL_FIELDS = {"id": str, "name": str, "description": str, "tags": list}


@on_versions(REQUIRED_FIELDS, VERSIONS, "card")
def test_card_has_required_fields(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card = card_json(exchange)
    fields = V10_CARD_FIELDS if version == "1.0" else V03_CARD_FIELDS
    problems = [
        f"{name}: missing or not {kind.__name__}"
        for name, kind in fields.items()
        if not isinstance(card.get(name), kind)
    ]
    if version == "1.0" and not card.get("supportedInterfaces"):
        problems.append("supportedInterfaces: must list at least one interface (1.0 5.7)")
    for index, skill in enumerate(card.get("skills") or []):
        problems += [
            f"skills[{index}].{name}: missing or not {kind.__name__}"
            for name, kind in SKILL_FIELDS.items()
            if not isinstance(skill.get(name) if isinstance(skill, dict) else None, kind)
        ]
    assert not problems, explain(
        "AgentCard required fields (1.0 4.4.1/4.4.5; 0.3 5.5, 5.6.1):\n" + "\n".join(problems), exchange
    )


INTERFACE_FIELDS = Requirement(
    "each AgentInterface declares url, protocolBinding and protocolVersion", "MUST", "4.4.6"
)


@on_versions(INTERFACE_FIELDS, VERSIONS, "card")
def test_card_interfaces_are_complete(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card = card_json(exchange)
    problems = []
    for index, interface in enumerate(card.get("supportedInterfaces") or []):
        url = interface.get("url") if isinstance(interface, dict) else None
        parsed = urlparse(url) if isinstance(url, str) else None
        if parsed is None or parsed.scheme not in {"http", "https"} or not parsed.netloc:
            problems.append(f"supportedInterfaces[{index}].url: {url!r} is not an absolute URL")
        for name in ("protocolBinding", "protocolVersion"):
            if not isinstance(interface.get(name), str) or not interface.get(name):
                problems.append(f"supportedInterfaces[{index}].{name}: required")
    assert not problems, explain("\n".join(problems), exchange)


ALL_DECLARED = Requirement(
    "supportedInterfaces declares every protocol combination the agent serves",
    "SHOULD",
    "8.3.1",
    "8.3.1(1.0)",
)
SERVED_COMBINATIONS = {(b, v) for b in ("JSONRPC", "HTTP+JSON") for v in ("1.0", "0.3")}


@on_versions(ALL_DECLARED, VERSIONS, "card")
def test_card_declares_every_served_interface(
    http: httpx.Client, defender_url: str, version: str, request: pytest.FixtureRequest
) -> None:
    if version == "1.0":
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="deliberate (ADR 0001): the card served to 1.0 clients lists the 1.0 interfaces only, "
                "because a2a-sdk adds the legacy 0.3 top-level fields to any card listing 0.3 interfaces",
            )
        )
    exchange = fetch_card(http, defender_url, version)
    card = card_json(exchange)
    declared = {
        (i.get("protocolBinding"), i.get("protocolVersion"))
        for i in card.get("supportedInterfaces") or []
        if isinstance(i, dict)
    }
    assert declared >= SERVED_COMBINATIONS, explain(
        f"the agent serves {sorted(SERVED_COMBINATIONS)}; the card declares {sorted(declared)}", exchange
    )


DECLARED_SERVE = Requirement(
    "each declared interface serves its binding at its URL", "MUST", "8.3.1", "5.6.2"
)


@on_versions(DECLARED_SERVE, VERSIONS, "card")
def test_card_interfaces_serve_their_binding(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card = card_json(exchange)
    declared: list[tuple[Wire, str]] = []
    if version == "1.0":
        for interface in card.get("supportedInterfaces") or []:
            wire = WIRE_OF.get((interface.get("protocolVersion"), interface.get("protocolBinding")))
            if wire is not None:
                declared.append((wire, interface["url"]))
    else:
        # 0.3 5.6.1: the main url MUST serve preferredTransport; 5.6.2: each additional interface, its own.
        main = WIRE_OF_V03.get(card.get("preferredTransport", "JSONRPC"))
        assert main is not None and isinstance(card.get("url"), str), explain(
            "no main url/transport", exchange
        )
        declared.append((main, card["url"]))
        for interface in card.get("additionalInterfaces") or []:
            wire = WIRE_OF_V03.get(interface.get("transport"))
            if wire is not None:
                declared.append((wire, interface["url"]))
    assert {wire for wire, _ in declared} >= (
        {V10_JSONRPC, V10_REST} if version == "1.0" else {V03_JSONRPC, V03_REST}
    ), explain("the card must declare both bindings the agent serves", exchange)
    for wire, url in declared:
        agent = Agent(http, wire, Endpoints(jsonrpc=url, rest=url))
        probe = agent.get_task("no-such-task-conformance")
        expect_error(
            wire, probe, TASK_NOT_FOUND, f"{wire.id} declared at {url} must answer GetTask in that binding"
        )


MAIN_URL_LISTED = Requirement(
    "additionalInterfaces includes the main url and preferredTransport", "SHOULD", v03="5.6.4"
)


@on_versions(MAIN_URL_LISTED, VERSIONS, "card")
def test_card_additional_interfaces_include_the_main_url(
    http: httpx.Client, defender_url: str, version: str
) -> None:
    exchange = fetch_card(http, defender_url, version)
    card = card_json(exchange)
    listed = {
        (i.get("url"), i.get("transport"))
        for i in card.get("additionalInterfaces") or []
        if isinstance(i, dict)
    }
    main = (card.get("url"), card.get("preferredTransport", "JSONRPC"))
    assert main in listed, explain(
        f"0.3 5.6.2/5.6.4: additionalInterfaces SHOULD include the main {main}; it lists {sorted(listed)}",
        exchange,
    )


MAJOR_MINOR_ONLY = Requirement(
    "protocol versions in the card are Major.Minor, without patch", "SHOULD", "3.6"
)


@on_versions(MAJOR_MINOR_ONLY, VERSIONS, "card")
def test_card_versions_have_no_patch_number(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card = card_json(exchange)
    versions = [
        i.get("protocolVersion") for i in card.get("supportedInterfaces") or [] if isinstance(i, dict)
    ]
    bad = [v for v in versions if not (isinstance(v, str) and MAJOR_MINOR.match(v))]
    assert not bad, explain(f"protocolVersion values {bad} are not Major.Minor (1.0 3.6)", exchange)


CAMEL_CASE = Requirement("card field names are camelCase", "MUST", "5.5", "5.5")


@on_versions(CAMEL_CASE, VERSIONS, "card")
def test_card_field_names_are_camel_case(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    bad = list(non_camel_keys(card_json(exchange)))
    assert not bad, explain(f"field names that are not camelCase: {bad}", exchange)


# --- Caching (1.0 8.6) ----------------------------------------------------------------------------

CACHE_CONTROL = Requirement("card response has Cache-Control with max-age", "SHOULD", "8.6.1", "8.6.1(1.0)")


@on_versions(CACHE_CONTROL, VERSIONS, "card")
def test_card_has_cache_control_max_age(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card_json(exchange)
    directives = [d.strip().lower() for d in exchange.headers.get("cache-control", "").split(",")]
    max_age = [d for d in directives if d.startswith("max-age=") and d.removeprefix("max-age=").isdigit()]
    assert max_age, explain("Cache-Control with a max-age directive expected", exchange)
    assert "no-store" not in directives, explain("a cacheable card must not say no-store", exchange)


ETAG = Requirement("card response has an ETag", "SHOULD", "8.6.1", "8.6.1(1.0)")


@on_versions(ETAG, VERSIONS, "card")
def test_card_has_etag(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card_json(exchange)
    etag = exchange.headers.get("etag", "")
    assert etag.removeprefix("W/").startswith('"') and etag.endswith('"'), explain(
        "an ETag (a quoted entity tag, RFC 9110 8.8.3) expected", exchange
    )
    again = fetch_card(http, defender_url, version)
    assert again.headers.get("etag") == etag, explain("the same card must keep its ETag", exchange, again)


LAST_MODIFIED = Requirement("card response has Last-Modified", "MAY", "8.6.1", "8.6.1(1.0)")


@on_versions(LAST_MODIFIED, VERSIONS, "card")
def test_card_has_last_modified(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    card_json(exchange)
    value = exchange.headers.get("last-modified")
    assert value is not None, explain("Last-Modified expected", exchange)
    try:
        parsedate_to_datetime(value)
    except (TypeError, ValueError):
        raise AssertionError(explain(f"Last-Modified {value!r} is not an HTTP date", exchange)) from None


IF_NONE_MATCH = Requirement(
    "a conditional GET with the card's ETag (If-None-Match) gets 304", "SHOULD", "8.6.2", "8.6.2(1.0)"
)


@on_versions(IF_NONE_MATCH, VERSIONS, "card")
def test_card_if_none_match_gets_304(http: httpx.Client, defender_url: str, version: str) -> None:
    first = fetch_card(http, defender_url, version)
    card_json(first)
    etag = first.headers.get("etag")
    assert etag, explain("the card has no ETag to revalidate with", first)
    again = fetch_card(http, defender_url, version, if_none_match=etag)
    assert again.status == 304, explain(
        "If-None-Match with the current ETag must get 304 (RFC 9110 13.1.2)", first, again
    )
    assert again.body == "", explain("a 304 has no body", again)
    assert again.headers.get("etag") == etag, explain("a 304 repeats the ETag (RFC 9110 15.4.5)", again)
    other = fetch_card(http, defender_url, version, if_none_match='"not-the-card"')
    assert other.status == 200 and card_json(other), explain("a stale ETag must get the full card", other)


IF_MODIFIED_SINCE = Requirement(
    "a conditional GET with If-Modified-Since at Last-Modified gets 304", "SHOULD", "8.6.2", "8.6.2(1.0)"
)


@on_versions(IF_MODIFIED_SINCE, VERSIONS, "card")
def test_card_if_modified_since_gets_304(http: httpx.Client, defender_url: str, version: str) -> None:
    first = fetch_card(http, defender_url, version)
    card_json(first)
    last_modified = first.headers.get("last-modified")
    assert last_modified, explain("the card has no Last-Modified to revalidate with", first)
    again = fetch_card(http, defender_url, version, if_modified_since=last_modified)
    assert again.status == 304, explain(
        "If-Modified-Since equal to Last-Modified must get 304 (RFC 9110 13.1.3)", first, again
    )
    assert again.body == "", explain("a 304 has no body", again)
    older = fetch_card(http, defender_url, version, if_modified_since="Thu, 01 Jan 1970 00:00:00 GMT")
    assert older.status == 200 and card_json(older), explain("an older date must get the full card", older)


VARY = Requirement(
    "a card that differs by A2A-Version says Vary: A2A-Version and has an ETag per rendering",
    "SHOULD",
    "8.6.1",
    "8.6.1(1.0)",
)


@on_versions(VARY, ("1.0",), "card")
def test_card_varies_by_version(http: httpx.Client, defender_url: str, version: str) -> None:
    v10 = fetch_card(http, defender_url, "1.0")
    v03 = fetch_card(http, defender_url, "0.3")
    if card_json(v10) == card_json(v03):
        pytest.skip("both versions get the same card: nothing varies")
    for exchange in (v10, v03):
        vary = [token.strip().lower() for token in exchange.headers.get("vary", "").split(",")]
        assert "a2a-version" in vary or "*" in vary, explain(
            "the card depends on A2A-Version, so a shared cache must be told (RFC 9110 12.5.5, RFC 9111 4.1)",
            v10,
            v03,
        )
    assert v10.headers.get("etag") != v03.headers.get("etag"), explain(
        "two different bodies must not share a strong ETag (RFC 9110 8.8.3)", v10, v03
    )


ENDPOINTS_IN_CARD = Requirement(
    "a client finds both bindings of its version in the card", "MUST", "8.3.2", "5.6.3"
)


@on_versions(ENDPOINTS_IN_CARD, VERSIONS, "card")
def test_card_gives_a_client_its_endpoints(http: httpx.Client, defender_url: str, version: str) -> None:
    exchange = fetch_card(http, defender_url, version)
    try:
        card_endpoints(card_json(exchange), version)
    except AssertionError as exc:
        raise AssertionError(explain(str(exc), exchange)) from None
