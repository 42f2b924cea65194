"""The deliberately vulnerable agent (tests/support/vulnerable_agent.py) works as the probes' tests need.

Smoke tests on real processes: the card in both renderings (signed), a message on each of
the four wires parks a task in input-required, another caller's task is TaskNotFound, one
flag flips one behaviour; and, in-process, the modes serve what they declare.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from starlette.testclient import TestClient

from conformance.wire import (
    ALL_WIRES,
    PARSE_ERROR,
    TASK_NOT_FOUND,
    V03_JSONRPC,
    V03_REST,
    V10_JSONRPC,
    V10_REST,
    VERSION_NOT_SUPPORTED,
    Agent,
    Wire,
    card_endpoints,
    expect_error,
)
from support.vulnerable_agent import (
    FLAGS,
    AgentConfig,
    canonical_json,
    create_vulnerable_app,
    running_vulnerable_agent,
)

pytestmark = [pytest.mark.system, pytest.mark.timeout(60)]

ALICE = "a" * 24
BOB = "b" * 24
TOKENS = {"alice": ALICE, "bob": BOB}


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with running_vulnerable_agent(tokens=TOKENS, expiry_s=30.0) as url:
        yield url


def _client(token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(headers=headers, timeout=10.0)


def _card_of(http: httpx.Client, version: str, url: str = "") -> dict[str, Any]:
    headers = {"A2A-Version": "1.0"} if version == "1.0" else {}
    response = http.get(f"{url}/.well-known/agent-card.json", headers=headers)
    assert response.status_code == 200
    card: dict[str, Any] = response.json()
    return card


def _card(url: str, version: str) -> dict[str, Any]:
    with httpx.Client(timeout=10.0) as http:
        return _card_of(http, version, url)


def _agent(url: str, wire: Wire, http: httpx.Client) -> Agent:
    return Agent(http, wire, card_endpoints(_card(url, wire.version), wire.version))


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature_verifies(url: str, card: dict[str, Any]) -> bool:
    (signature,) = card["signatures"]
    header = json.loads(_b64(signature["protected"]))
    assert header["alg"] == "ES256"
    assert header["jku"] == f"{url}/.well-known/jwks.json"
    (jwk,) = httpx.get(header["jku"], timeout=10.0).json()["keys"]
    key = ec.EllipticCurvePublicNumbers(
        int.from_bytes(_b64(jwk["x"]), "big"), int.from_bytes(_b64(jwk["y"]), "big"), ec.SECP256R1()
    ).public_key()
    payload = canonical_json({k: v for k, v in card.items() if k != "signatures"})
    raw = _b64(signature["signature"])
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    signing_input = f"{signature['protected']}.{base64.urlsafe_b64encode(payload).rstrip(b'=').decode()}"
    try:
        key.verify(der, signing_input.encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def test_the_card_has_both_renderings_signed_and_declares_bearer(agent_url: str) -> None:
    v10, v03 = _card(agent_url, "1.0"), _card(agent_url, "0.3")
    assert {(i["protocolBinding"], i["protocolVersion"]) for i in v10["supportedInterfaces"]} == {
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "0.3"),
    }
    assert v10["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert v10["capabilities"]["extendedAgentCard"] is True
    assert v03["protocolVersion"] == "0.3.0"
    assert v03["url"] == f"{agent_url}/"
    assert v03["security"] == [{"bearer": []}]
    assert _signature_verifies(agent_url, v10)
    assert _signature_verifies(agent_url, v03)


@pytest.mark.parametrize("wire", ALL_WIRES, ids=lambda wire: wire.id)
def test_each_wire_parks_a_task_owned_by_its_caller(agent_url: str, wire: Wire) -> None:
    with _client(ALICE) as alice_http, _client(BOB) as bob_http, _client(None) as nobody_http:
        alice = _agent(agent_url, wire, alice_http)
        task = alice.task_of(alice.say("hello"))
        assert alice.state_of(task) == "input-required"
        assert alice.reply_of(task) == "Noted. This conversation so far: hello"
        again = alice.task_of(alice.say("again", task_id=task["id"]))
        assert alice.reply_of(again) == "Noted. This conversation so far: hello | again"
        bob = _agent(agent_url, wire, bob_http)
        expect_error(wire, bob.get_task(task["id"]), TASK_NOT_FOUND, "bob reads alice's task")
        expect_error(wire, bob.get_task("no-such-task"), TASK_NOT_FOUND, "an unknown task")
        theirs = bob.task_of(bob.say("mine", context_id=task["contextId"]))
        assert bob.reply_of(theirs) == "Noted. This conversation so far: mine"
        assert _agent(agent_url, wire, nobody_http).say("hi").status == 401
        cancelled = alice.task_of(alice.cancel(task["id"]))
        assert alice.state_of(cancelled) == "canceled"


@pytest.mark.parametrize("wire", [V10_JSONRPC, V03_JSONRPC], ids=lambda wire: wire.id)
def test_a_stream_sends_the_task_and_its_status_then_closes(agent_url: str, wire: Wire) -> None:
    with _client(ALICE) as http:
        agent = _agent(agent_url, wire, http)
        exchange = agent.stream(agent.message("streamed"))
        payloads = agent.stream_payloads(exchange)
        assert [agent.event_kind(p) for p in payloads] == ["task", "statusUpdate"]
        assert agent.state_of(agent.event_body(payloads[1])) == "input-required"
        assert exchange.closed
        agent.cancel(agent.event_body(payloads[0])["id"])


def test_bad_input_is_refused_cleanly(agent_url: str) -> None:
    with _client(ALICE) as http:
        agent = _agent(agent_url, V10_JSONRPC, http)
        url = agent.endpoints.jsonrpc
        json_type = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        deep = agent.request("POST", url, content=b"[" * 10_000, headers=json_type)
        expect_error(V10_JSONRPC, deep, PARSE_ERROR, "JSON nested 10,000 deep")
        assert "Traceback" not in deep.body
        assert agent.request("POST", url, content=b"x" * 2_000_000, headers=json_type).status == 413
        plain = {"Content-Type": "text/plain", "A2A-Version": "1.0"}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}).encode()
        assert agent.request("POST", url, content=body, headers=plain).status == 415
        assert agent.rpc("message/send", {"message": agent.message("x")}).json()["error"]["code"] == -32601


def test_a_flag_flips_its_behaviour_only() -> None:
    flags = ("foreign-read", "leak-path")
    with (
        running_vulnerable_agent(flags, tokens=TOKENS) as url,
        _client(ALICE) as alice_http,
        _client(BOB) as bob_http,
    ):
        alice, bob = _agent(url, V10_REST, alice_http), _agent(url, V10_REST, bob_http)
        task = alice.task_of(alice.say("secret"))
        assert bob.task_of(bob.get_task(task["id"]))["id"] == task["id"]
        refused = bob.cancel(task["id"])
        expect_error(V10_REST, refused, TASK_NOT_FOUND, "cancel stays scoped")
        assert "/srv/agent/handlers.py" in refused.body


def _in_process(mode: str) -> httpx.Client:
    """The agent in ``mode`` in this process (its lifespan runs inside the ``with``)."""
    app = create_vulnerable_app(AgentConfig(mode=mode), "http://testserver")
    # TestClient is an httpx.Client (typed against httpx2 when that is installed).
    return cast(httpx.Client, TestClient(app, "http://testserver"))


def test_modes_serve_what_they_declare() -> None:
    with _in_process("v03-only") as http:
        card = _card_of(http, "1.0")
        assert "supportedInterfaces" not in card and card["protocolVersion"] == "0.3.0"
        legacy = Agent(http, V03_REST, card_endpoints(card, "0.3"))
        assert legacy.state_of(legacy.task_of(legacy.say("hi"))) == "input-required"
        modern = Agent(http, V10_JSONRPC, legacy.endpoints)
        expect_error(V10_JSONRPC, modern.say("hi"), VERSION_NOT_SUPPORTED, "1.0 on a 0.3 agent")
    with _in_process("rest-only") as http:
        card = _card_of(http, "1.0")
        assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {"HTTP+JSON"}
        assert _card_of(http, "0.3")["preferredTransport"] == "HTTP+JSON"
        assert http.post("/", json={}).status_code == 404
    with _in_process("jsonrpc-only") as http:
        card = _card_of(http, "1.0")
        assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {"JSONRPC"}
        assert http.post("/rest/message:send", json={}, headers={"A2A-Version": "1.0"}).status_code == 404


def test_unknown_flags_and_modes_are_refused() -> None:
    assert "foreign-read" in FLAGS
    with pytest.raises(ValueError, match="unknown flags"), running_vulnerable_agent(("no-such-flag",)):
        pass
    with pytest.raises(ValueError, match="unknown mode"), running_vulnerable_agent(mode="v2-only"):
        pass
