"""Invalid params get -32602 Invalid params on both A2A versions; a broken envelope keeps -32600.

JSON-RPC 2.0 (section 5.1): -32600 for JSON that is not a valid request object, -32602 for
invalid method parameters. a2a-sdk 1.3.0 answered every invalid 0.3 ``message/send`` and
``message/stream`` params with -32600; :class:`arena_core.a2a.jsonrpc_params_guard.JsonRpcParamsGuard`
answers -32602 naming the problem, as the SDK already does for 1.0's ``SendMessage``.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from arena_core.a2a.jsonrpc_params_guard import invalid_params_response
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

V10 = {"A2A-Version": "1.0"}
V03_MESSAGE: dict[str, Any] = {
    "kind": "message",
    "messageId": "m-1",
    "role": "user",
    "parts": [{"kind": "text", "text": "Hello! Can you help me plan a picnic?"}],
}
V10_MESSAGE: dict[str, Any] = {
    "messageId": "m-1",
    "role": "ROLE_USER",
    "parts": [{"text": "Hello! Can you help me plan a picnic?"}],
}


def _broken(message: dict[str, Any], field: str, value: object) -> dict[str, Any]:
    """``message`` with ``field`` set to ``value`` (removed when ``value`` is ...)."""
    broken = copy.deepcopy(message)
    if value is ...:
        del broken[field]
    else:
        broken[field] = value
    return broken


# The same class of mistake in each version's own shape; (field named in the error, params).
V03_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "message not an object": ("params.message", {"message": "hello"}),
    "parts not a list": ("params.message.parts", {"message": _broken(V03_MESSAGE, "parts", "hello")}),
    "a part without kind": (
        "params.message.parts.0.kind",
        {"message": _broken(V03_MESSAGE, "parts", [{"text": "hello"}])},
    ),
    "role invalid": ("params.message.role", {"message": _broken(V03_MESSAGE, "role", "robot")}),
    "missing messageId": ("params.message.messageId", {"message": _broken(V03_MESSAGE, "messageId", ...)}),
}
V10_CASES: dict[str, dict[str, Any]] = {
    "message not an object": {"message": "hello"},
    "parts not a list": {"message": _broken(V10_MESSAGE, "parts", "hello")},
    "role invalid": {"message": _broken(V10_MESSAGE, "role", "ROBOT")},
    "missing messageId": {"message": _broken(V10_MESSAGE, "messageId", ...)},
}


async def _call(arena: InProcessArena, method: str, params: object, *, version: str) -> dict[str, Any]:
    """POST one JSON-RPC request to a fresh defender; its JSON answer (never a stream here)."""
    arena.add_model(mode="echo")
    url = arena.add_defender()
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    response = await arena.http.post(f"{url}/", json=body, headers=V10 if version == "1.0" else {})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    reply: dict[str, Any] = response.json()
    return reply


@pytest.mark.parametrize("method", ["message/send", "message/stream"])
@pytest.mark.parametrize("case", list(V03_CASES))
async def test_v03_invalid_message_params_get_invalid_params(
    arena: InProcessArena, method: str, case: str
) -> None:
    field, params = V03_CASES[case]
    reply = await _call(arena, method, params, version="0.3")
    assert reply["id"] == 7, reply
    error = reply["error"]
    assert error["code"] == -32602, reply
    assert field in error["message"], reply  # the reason names the field
    assert any(problem["field"] == field for problem in error["data"]), reply


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
@pytest.mark.parametrize("case", list(V10_CASES))
async def test_v10_invalid_message_params_get_invalid_params(
    arena: InProcessArena, method: str, case: str
) -> None:
    reply = await _call(arena, method, V10_CASES[case], version="1.0")
    assert reply["error"]["code"] == -32602, reply


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
async def test_v10_part_without_content_gets_invalid_params(arena: InProcessArena, method: str) -> None:
    params = {"message": _broken(V10_MESSAGE, "parts", [{"metadata": {}}])}
    reply = await _call(arena, method, params, version="1.0")
    assert reply.get("error", {}).get("code") == -32602, reply


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("message/send", None, "params"),  # params omitted: valid JSON-RPC, but the method needs them
        ("message/send", [], "params"),  # by position: the method takes named params
        ("tasks/get", {"id": 5}, "params.id"),
        ("tasks/cancel", {}, "params.id"),
    ],
)
async def test_other_v03_params_problems_are_invalid_params_too(
    arena: InProcessArena, method: str, params: object, field: str
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": "x", "method": method}
    if params is not None:
        body["params"] = params
    reply = (await arena.http.post(f"{url}/", json=body)).json()
    assert reply["error"]["code"] == -32602, reply
    assert reply["id"] == "x"
    assert field in reply["error"]["message"], reply


VALID_PARAMS = {"message": V03_MESSAGE}


@pytest.mark.parametrize(
    "envelope",
    [
        pytest.param({"id": 1, "method": "message/send", "params": VALID_PARAMS}, id="no jsonrpc"),
        pytest.param({"jsonrpc": "1.0", "id": 1, "method": "message/send", "params": {}}, id="jsonrpc 1.0"),
        pytest.param({"jsonrpc": "2.0", "id": 1, "method": 5, "params": {}}, id="method not a string"),
        pytest.param(
            {"jsonrpc": "2.0", "id": True, "method": "message/send", "params": {}}, id="id a boolean"
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1.5, "method": "message/send", "params": {}}, id="id a fraction"
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": "x"}, id="params a string"
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}, "extra": 1}, id="extra member"
        ),
        pytest.param([{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}], id="batch"),
    ],
)
async def test_an_invalid_envelope_is_still_an_invalid_request(
    arena: InProcessArena, envelope: object
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    reply = (await arena.http.post(f"{url}/", json=envelope)).json()
    assert reply["error"]["code"] == -32600, reply


async def test_valid_v03_requests_still_reach_the_agent(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": VALID_PARAMS}
    reply = (await arena.http.post(f"{url}/", json=body)).json()
    assert "picnic" in str(reply["result"]["status"]["message"]), reply
    # A stream too: the guard hands the body it read on to the SDK unchanged.
    stream = {**body, "method": "message/stream"}
    async with arena.http.stream("POST", f"{url}/", json=stream) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = (await response.aread()).decode()
    assert "picnic" in text


async def test_a_body_that_is_not_json_is_still_a_parse_error(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    response = await arena.http.post(
        f"{url}/", content=b'{"jsonrpc": "2.0",', headers={"Content-Type": "application/json"}
    )
    assert response.json()["error"]["code"] == -32700, response.text
    assert invalid_params_response(b"[" * 100_000) is None  # too deep for json: left to the SDK


async def test_the_refusal_is_answered_before_the_sdk_logs_a_traceback(
    arena: InProcessArena, caplog: pytest.LogCaptureFixture
) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": "hello"}}
    reply = (await arena.http.post(f"{url}/", json=body)).json()
    assert reply["error"]["code"] == -32602
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


async def test_the_guard_only_reads_what_it_must() -> None:
    """Unit-level: 1.0 methods and valid 0.3 requests get no answer from the guard."""
    v10 = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": "x"}}
    assert invalid_params_response(httpx.Request("POST", "/", json=v10).content) is None
    v03 = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": VALID_PARAMS}
    assert invalid_params_response(httpx.Request("POST", "/", json=v03).content) is None
