"""Bearer-token authentication of the arena's own endpoints (ARENA_API_TOKENS, ARENA_API_READ_TOKENS).

The defender's and the attacker's A2A endpoints (JSON-RPC and HTTP+JSON, both
protocol versions) and the orchestrator's /v1 API: 401 without a valid token,
403 for a read-only token on anything but GET/HEAD; cards, probes and the
dashboard's files stay public; cards and the OpenAPI description declare the
scheme; the attacker reaches a protected arena defender with the campaign's
named token; the CLI's client says what to set. The tokens are named entries of one caller
(``ops:...``), as a rotation and a read-only view of that caller's tasks are written; how
callers are kept apart is tests/integration/test_caller_isolation.py.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
import pytest_asyncio
from pydantic import SecretStr

from arena_attacker.app import create_attacker_app
from arena_attacker.match_runner import MatchRunner
from arena_core.match_models import MatchRequest
from arena_core.settings import load_settings
from arena_orchestrator.app import create_orchestrator_app
from conftest import InProcessArena
from support.asgi import client_for

pytestmark = pytest.mark.asyncio

FULL = "full-token-0123456789abcdef"
OLD = "old-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"
V10 = {"A2A-Version": "1.0", "Content-Type": "application/json"}
TARGET_VAR = "ARENA_TARGET_TOKEN_ARENA"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _send_rpc(version: str) -> dict[str, Any]:
    if version == "1.0":
        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
        return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    message = {
        "kind": "message",
        "messageId": "m1",
        "role": "user",
        "parts": [{"kind": "text", "text": "hello"}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}


def _auth_settings(**extra: object) -> dict[str, object]:
    # One caller, "ops": a token being rotated (FULL replaces OLD) and a read-only token.
    return {"api_tokens": f"ops:{FULL},ops:{OLD}", "api_read_tokens": f"ops:{READ}", **extra}


@pytest.fixture
def protected(arena: InProcessArena) -> InProcessArena:
    """A scripted model, a protected defender and a protected attacker that holds the defender's token."""
    arena.add_model(mode="echo")
    arena.add_defender(**_auth_settings())
    settings = load_settings(**_auth_settings(), target_tokens={TARGET_VAR: SecretStr(FULL)})
    app = create_attacker_app(
        settings,
        public_url="http://attacker",
        model_factory=lambda: arena.chat_model("model"),
        target_http=client_for(arena.router),
    )
    arena.add("attacker", app)
    return arena


# --- the agents ------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["defender", "attacker"])
async def test_card_and_probes_stay_public_and_the_card_declares_bearer(
    protected: InProcessArena, host: str
) -> None:
    for path in ("/healthz", "/readyz"):
        response = await protected.http.get(f"http://{host}{path}")
        assert response.status_code in (200, 503), (path, response.status_code)
    card_url = f"http://{host}/.well-known/agent-card.json"
    card = (await protected.http.get(card_url, headers={"A2A-Version": "1.0"})).json()
    assert card["securitySchemes"] == {
        "bearer": {
            "httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["description"],
            }
        }
    }
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]


@pytest.mark.parametrize("host", ["defender", "attacker"])
@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_jsonrpc_without_a_valid_token_is_401_with_a_challenge(
    protected: InProcessArena, host: str, version: str
) -> None:
    body = _send_rpc(version)
    headers = V10 if version == "1.0" else {"Content-Type": "application/json"}
    url = f"http://{host}/"
    missing = await protected.http.post(url, json=body, headers=headers)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="a2a-arena"'
    assert missing.json()["error"]["status"] == "UNAUTHENTICATED"
    wrong = await protected.http.post(url, json=body, headers={**headers, **_bearer(FULL[:-1] + "X")})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"] == 'Bearer realm="a2a-arena", error="invalid_token"'
    assert FULL[:-1] not in wrong.text
    basic = await protected.http.post(url, json=body, headers={**headers, "Authorization": f"Basic {FULL}"})
    assert basic.status_code == 401


async def test_the_defender_answers_with_a_full_token_and_refuses_a_read_token(
    protected: InProcessArena,
) -> None:
    for token in (FULL, OLD):
        ok = await protected.http.post(
            "http://defender/", json=_send_rpc("1.0"), headers={**V10, **_bearer(token)}
        )
        assert ok.status_code == 200, ok.text
        assert "result" in ok.json(), ok.text
    read = await protected.http.post(
        "http://defender/", json=_send_rpc("1.0"), headers={**V10, **_bearer(READ)}
    )
    assert read.status_code == 403
    assert read.headers["www-authenticate"] == 'Bearer realm="a2a-arena", error="insufficient_scope"'
    assert read.json()["error"]["status"] == "PERMISSION_DENIED"


@pytest.mark.parametrize("path", ["/rest/message:send", "/rest/v1/message:send"])
async def test_http_json_needs_a_token_on_both_versions(protected: InProcessArena, path: str) -> None:
    key = "parts" if "/v1/" not in path else "content"
    body = {"message": {"messageId": "r1", "role": "ROLE_USER", key: [{"text": "hi"}]}}
    headers = V10 if "/v1/" not in path else {"Content-Type": "application/json"}
    missing = await protected.http.post(f"http://defender{path}", json=body, headers=headers)
    assert missing.status_code == 401
    ok = await protected.http.post(f"http://defender{path}", json=body, headers={**headers, **_bearer(FULL)})
    assert ok.status_code == 200, ok.text


async def test_a_read_token_may_read_its_callers_task_but_not_write(protected: InProcessArena) -> None:
    sent = await protected.http.post(
        "http://defender/", json=_send_rpc("1.0"), headers={**V10, **_bearer(FULL)}
    )
    task_id = sent.json()["result"]["task"]["id"]
    path = f"http://defender/rest/tasks/{task_id}"
    assert (await protected.http.get(path, headers=V10)).status_code == 401
    for token in (READ, OLD):  # the same caller: its read token, the token being rotated out
        read = await protected.http.get(path, headers={**V10, **_bearer(token)})
        assert read.status_code == 200, read.text
        assert read.json()["id"] == task_id
    cancel = await protected.http.post(f"{path}:cancel", headers={**V10, **_bearer(READ)})
    assert cancel.status_code == 403


async def test_an_unauthenticated_oversized_body_is_refused_as_unauthenticated(
    protected: InProcessArena,
) -> None:
    # Authentication comes first: nobody without a token makes the agent read a body.
    huge = b"{" + b" " * 5_000_000 + b"}"
    response = await protected.http.post("http://defender/", content=huge, headers=V10)
    assert response.status_code == 401


async def test_the_attacker_reaches_a_protected_arena_defender_with_the_named_token(
    protected: InProcessArena,
) -> None:
    settings = load_settings(target_tokens={TARGET_VAR: SecretStr(FULL)})
    runner = MatchRunner(settings, model_factory=protected.chat_model, http=client_for(protected.router))
    request = MatchRequest.model_validate(
        {"target": "http://defender", "max_turns": 2, "strategy": "playbook", "target_token_env": TARGET_VAR}
    )
    result = await runner.run(request)
    assert result.outcome != "error", result.error
    assert len(result.turns) >= 1
    assert FULL not in result.model_dump_json()
    # Without the token the match is an error that says what is missing, not a defence.
    bare = await runner.run(request.model_copy(update={"target_token_env": None}))
    assert bare.outcome == "error"
    assert bare.error_kind == "target_unauthorized"
    assert "target_token_env" in (bare.error or "")


async def test_no_tokens_means_no_checks_and_no_scheme_on_the_card(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    arena.add_defender()
    card = (await arena.http.get("http://defender/.well-known/agent-card.json")).json()
    assert "securitySchemes" not in card and "securityRequirements" not in card
    ok = await arena.http.post("http://defender/", json=_send_rpc("1.0"), headers=V10)
    assert ok.status_code == 200


# --- the orchestrator ------------------------------------------------------------------------


@pytest_asyncio.fixture
async def orchestrator() -> Any:
    app = create_orchestrator_app(
        load_settings(**_auth_settings(attacker_url="http://attacker:8082")), run_worker=False
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://orch") as client:
        yield client


SPEC = json.dumps(
    {
        "name": "auth",
        "attackers": [{"strategy": "playbook"}],
        "defenders": [{"name": "d", "url": "http://defender:8081"}],
        "objectives": [{"name": "o", "phrase": "I Give Up"}],
        "repetitions": 1,
        "max_turns": 1,
    }
)


async def test_orchestrator_api_needs_a_token_and_a_read_token_only_reads(
    orchestrator: httpx.AsyncClient,
) -> None:
    missing = await orchestrator.get("/v1/campaigns")
    assert missing.status_code == 401
    assert missing.json()["error"]["kind"] == "unauthorized"
    assert missing.headers["www-authenticate"].startswith('Bearer realm="a2a-arena"')
    json_type = {"Content-Type": "application/json"}
    submitted = await orchestrator.post("/v1/campaigns", content=SPEC, headers={**json_type, **_bearer(FULL)})
    assert submitted.status_code in (200, 201, 202), submitted.text
    campaign_id = submitted.json()["id"]
    listed = await orchestrator.get("/v1/campaigns", headers=_bearer(READ))
    assert listed.status_code == 200
    assert [c["id"] for c in listed.json()["campaigns"]] == [campaign_id]
    report = await orchestrator.get(f"/v1/campaigns/{campaign_id}/report?format=json", headers=_bearer(READ))
    assert report.status_code == 200
    refused = await orchestrator.post(f"/v1/campaigns/{campaign_id}/cancel", headers=_bearer(READ))
    assert refused.status_code == 403
    assert refused.json()["error"]["kind"] == "forbidden"
    posted = await orchestrator.post("/v1/campaigns", content=SPEC, headers={**json_type, **_bearer(READ)})
    assert posted.status_code == 403
    canceled = await orchestrator.post(f"/v1/campaigns/{campaign_id}/cancel", headers=_bearer(OLD))
    assert canceled.status_code == 200


async def test_orchestrator_probes_dashboard_and_openapi_stay_public(orchestrator: httpx.AsyncClient) -> None:
    for path in (
        "/healthz",
        "/readyz",
        "/dashboard",
        "/dashboard/static/dashboard.js",
        "/favicon.ico",
        "/docs",
    ):
        response = await orchestrator.get(path)
        assert response.status_code == 200, path
    schema = (await orchestrator.get("/openapi.json")).json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert schema["security"] == [{"bearer": []}]
    # Unknown paths are not a way around the check.
    assert (await orchestrator.get("/v1/nothing-here")).status_code == 401
    assert (await orchestrator.get("/dashboard/static/../../v1/campaigns")).status_code in (401, 404)


async def test_the_cli_client_says_which_variable_to_set(orchestrator: httpx.AsyncClient) -> None:
    from arena.orchestrator_client import OrchestratorAuthError, OrchestratorClient, _error_from

    cases = [
        (None, "GET", "set ARENA_ORCHESTRATOR_TOKEN"),
        ("wrong-token-0123456789abcdef", "GET", "is not one it accepts"),
        (READ, "POST", "read-only token"),
    ]
    for token, method, hint in cases:
        response = await orchestrator.request(
            method, "/v1/campaigns", headers=_bearer(token) if token else {}
        )
        error = _error_from(response, "http://orch", sent_token=token is not None)
        assert isinstance(error, OrchestratorAuthError), error
        assert hint in str(error)
        assert error.exit_code == 2
    with OrchestratorClient("http://orch", token=FULL) as client:
        assert client._headers == _bearer(FULL)


async def test_the_token_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    settings = load_settings(**_auth_settings())
    create_orchestrator_app(settings, run_worker=False)
    assert FULL not in caplog.text and READ not in caplog.text
