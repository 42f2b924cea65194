"""Size limits at the HTTP boundary: request bodies (413) and A2A messages (invalid params).

``ARENA_MAX_REQUEST_BYTES`` is enforced by ``BodySizeLimit`` (arena_core/http_limits.py)
on the agents and the orchestrator, with and without ``Content-Length``, for every
method (a GET may carry a body too), with a deadline for the whole body (408) and a
strict ``Content-Length`` (400); bodies nested more than 100 levels deep get the
binding's parse error before anything parses them (arena_core/a2a/json_depth_guard.py);
``ARENA_MAX_MESSAGE_PARTS`` and ``ARENA_MAX_MESSAGE_TEXT_BYTES`` by the agents'
request handler (arena_core/a2a/message_limits.py), on both protocol versions
and both bindings.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi import FastAPI

from arena_attacker.app import create_attacker_app
from arena_core.http_limits import DRAIN_BYTES
from arena_core.settings import load_settings
from arena_orchestrator.app import create_orchestrator_app
from support.asgi import client_for

if TYPE_CHECKING:
    # Only for annotations: imported at run time, ``conftest`` is whichever conftest.py pytest
    # loaded last (tests/system/conftest.py when this file runs along with tests/system).
    from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

LIMIT = 2048
V10 = {"A2A-Version": "1.0"}
JSON = {"Content-Type": "application/json"}


def _message(version: str, parts: list[str], message_id: str = "m1") -> dict[str, Any]:
    if version == "1.0":
        return {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": t} for t in parts]}
    return {
        "kind": "message",
        "messageId": message_id,
        "role": "user",
        "parts": [{"kind": "text", "text": t} for t in parts],
    }


def _rest_message(version: str, parts: list[str]) -> dict[str, Any]:
    # HTTP+JSON 0.3 is the 0.3 protobuf JSON: the parts are in "content".
    key = "parts" if version == "1.0" else "content"
    return {"message": {"messageId": "r1", "role": "ROLE_USER", key: [{"text": t} for t in parts]}}


def _rpc(version: str, parts: list[str], *, stream: bool = False, message_id: str = "m1") -> dict[str, Any]:
    if version == "1.0":
        method = "SendStreamingMessage" if stream else "SendMessage"
    else:
        method = "message/stream" if stream else "message/send"
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": method,
        "params": {"message": _message(version, parts, message_id)},
    }


def _headers(version: str) -> dict[str, str]:
    return {**JSON, **(V10 if version == "1.0" else {})}


def _rest_path(version: str, stream: bool = False) -> str:
    return f"/rest{'' if version == '1.0' else '/v1'}/message:{'stream' if stream else 'send'}"


def _padded(payload: dict[str, Any], size: int) -> bytes:
    """``payload`` as JSON, padded with trailing whitespace (still valid JSON) to exactly ``size`` bytes."""
    body = json.dumps(payload).encode()
    assert len(body) <= size
    return body + b" " * (size - len(body))


class Endless:
    """A chunked request body that never ends; counts the chunks the server pulled."""

    def __init__(self, chunk: bytes = b"x" * 512) -> None:
        self.chunk = chunk
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            self.sent += 1
            yield self.chunk


# The most chunks of 512 bytes an endless body may have pulled by the 413: the limit, then
# the bounded drain (DRAIN_BYTES) before the answer, then the chunk in flight.
def _most_chunks(limit: int) -> int:
    return (limit + DRAIN_BYTES) // 512 + 2


class Stalled:
    """A chunked request body that sends ``head`` then nothing more, ever (until cancelled)."""

    def __init__(self, head: bytes = b"{") -> None:
        self.head = head

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        await asyncio.Event().wait()
        yield b"never"


def _assert_rpc_413(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 413, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600
    assert (
        f"limit is {limit} bytes" in body["error"]["message"]
        or f"limit of {limit} bytes" in body["error"]["message"]
    )
    assert body["error"]["message"].startswith("Request too large")
    assert body["error"]["data"] == {"limit_bytes": limit}


def _assert_status_413(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == 413 and error["status"] == "INVALID_ARGUMENT"
    assert str(limit) in error["message"] and error["message"].startswith("Request too large")


# --- request bodies -------------------------------------------------------------------------------


async def test_jsonrpc_body_over_the_limit_is_413_with_a_jsonrpc_error(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    for version in ("1.0", "0.3"):
        body = _padded(_rpc(version, ["hello"]), LIMIT + 1)
        response = await arena.http.post(url, content=body, headers=_headers(version))
        _assert_rpc_413(response, LIMIT)
        assert f"is {LIMIT + 1} bytes" in response.json()["error"]["message"]
        assert response.headers["connection"] == "close"


async def test_chunked_bodies_are_cut_off_at_the_limit(arena: InProcessArena) -> None:
    """No Content-Length: the body is counted as it arrives and never read past the limit."""
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    rpc_body = Endless()
    response = await asyncio.wait_for(arena.http.post(url, content=rpc_body, headers=_headers("1.0")), 10)
    assert "content-length" not in response.request.headers
    _assert_rpc_413(response, LIMIT)
    assert rpc_body.sent <= _most_chunks(LIMIT)
    for version in ("1.0", "0.3"):
        rest_body = Endless()
        response = await asyncio.wait_for(
            arena.http.post(f"{url}{_rest_path(version)}", content=rest_body, headers=_headers(version)), 10
        )
        _assert_status_413(response, LIMIT)
        assert rest_body.sent <= _most_chunks(LIMIT)


async def test_rest_bodies_over_the_limit_are_413_on_both_versions(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    for version in ("1.0", "0.3"):
        for stream in (False, True):
            body = _padded(_rest_message(version, ["hello"]), LIMIT + 1)
            response = await arena.http.post(
                f"{url}{_rest_path(version, stream)}", content=body, headers=_headers(version)
            )
            _assert_status_413(response, LIMIT)


async def test_a_body_of_exactly_the_limit_is_served(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(max_request_bytes=LIMIT)
    for version in ("1.0", "0.3"):
        body = _padded(_rpc(version, ["exactly at the limit"], message_id=f"at-{version}"), LIMIT)
        assert len(body) == LIMIT
        response = await arena.http.post(url, content=body, headers=_headers(version))
        assert response.status_code == 200, response.text
        assert "exactly at the limit" in response.text and "error" not in response.json()
        rest = _padded(_rest_message(version, ["rest at the limit"]), LIMIT)
        response = await arena.http.post(
            f"{url}{_rest_path(version)}", content=rest, headers=_headers(version)
        )
        assert response.status_code == 200, response.text
        assert "rest at the limit" in response.text


async def test_streaming_responses_and_reads_pass_through(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(max_request_bytes=LIMIT)
    async with arena.http.stream(
        "POST", url, json=_rpc("1.0", ["stream me"], stream=True), headers=_headers("1.0")
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [
            json.loads(line[5:])
            for line in [line async for line in response.aiter_lines()]
            if line.startswith("data:")
        ]
    assert events and "stream me" in json.dumps(events[-1])
    # Reads pass with a body within the limit; a body over it is refused on every method.
    for path in ("/healthz", "/.well-known/agent-card.json"):
        response = await arena.http.request("GET", f"{url}{path}", content=b"x" * LIMIT)
        assert response.status_code == 200
        response = await arena.http.request("GET", f"{url}{path}", content=b"x" * (LIMIT + 1))
        _assert_status_413(response, LIMIT)
        assert response.headers["connection"] == "close"


# Before the fix GET, HEAD and OPTIONS bodies were never counted, and TextBodyGuard buffered the
# body of any method under /rest/ and /<tenant>/rest/ (an endless GET body: unbounded memory).
READ_PATHS = (
    "/",
    "/healthz",
    "/readyz",
    "/.well-known/agent-card.json",
    "/rest/tasks/t-1",
    "/rest/tasks/t-1:subscribe",
    "/rest/v1/tasks/t-1",
    "/tenant/rest/tasks/t-1",
    "/tenant/rest/message:send",
)


@pytest.mark.parametrize("method", ["GET", "DELETE", "OPTIONS", "PUT"])
async def test_bodies_over_the_limit_are_413_on_every_method(arena: InProcessArena, method: str) -> None:
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    for path in READ_PATHS:
        response = await arena.http.request(method, f"{url}{path}", content=b"x" * (LIMIT + 1))
        _assert_status_413(response, LIMIT)
        assert f"is {LIMIT + 1} bytes" in response.json()["error"]["message"]
        # Chunked, without an end: refused without the client sending everything.
        endless = Endless()
        response = await asyncio.wait_for(arena.http.request(method, f"{url}{path}", content=endless), 10)
        assert "content-length" not in response.request.headers
        _assert_status_413(response, LIMIT)
        assert endless.sent <= _most_chunks(LIMIT)


async def test_a_head_with_a_body_over_the_limit_is_413(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    for path in ("/healthz", "/rest/tasks/t-1"):
        response = await arena.http.request("HEAD", f"{url}{path}", content=b"x" * (LIMIT + 1))
        assert response.status_code == 413 and response.content == b""
        endless = Endless()
        response = await asyncio.wait_for(arena.http.request("HEAD", f"{url}{path}", content=endless), 10)
        assert response.status_code == 413 and endless.sent <= _most_chunks(LIMIT)


async def test_a_body_that_stops_arriving_is_408(
    arena: InProcessArena, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole body must arrive within the read deadline (30 s by default; 0.3 s here)."""
    monkeypatch.setattr("arena_core.http_limits.BODY_READ_TIMEOUT_S", 0.3)
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    response = await asyncio.wait_for(arena.http.post(url, content=Stalled(), headers=_headers("1.0")), 10)
    assert response.status_code == 408, response.text
    assert response.headers["connection"] == "close"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"] == {
        "code": -32600,
        "message": "Request timeout: the request body did not arrive within 0.3 seconds",
        "data": {"timeout_s": 0.3},
    }
    for method, path in (
        ("POST", _rest_path("1.0")),
        ("GET", "/healthz"),
        ("POST", "/tenant/rest/message:send"),
    ):
        response = await asyncio.wait_for(
            arena.http.request(method, f"{url}{path}", content=Stalled(), headers=_headers("1.0")), 10
        )
        assert response.status_code == 408, response.text
        error = response.json()["error"]
        assert error["code"] == 408 and error["status"] == "DEADLINE_EXCEEDED"
        assert error["message"].startswith("Request timeout")
    # The agent still answers.
    response = await arena.http.post(url, json=_rpc("1.0", ["after"]), headers=_headers("1.0"))
    assert response.status_code == 200 and "after" in response.text


async def test_an_invalid_content_length_is_400(arena: InProcessArena) -> None:
    """A Content-Length of byte 0xB2 ("²" in latin-1) passed str.isdigit(); int() then raised (a 500)."""
    arena.add_model()
    url = arena.add_defender(max_request_bytes=LIMIT)
    body = json.dumps(_rpc("1.0", ["hi"])).encode()
    for value in (b"\xb2", b"1\xb9", "١٢".encode(), b"12x"):
        headers = [
            (b"Content-Type", b"application/json"),
            (b"A2A-Version", b"1.0"),
            (b"Content-Length", value),
        ]
        response = await arena.http.post(url, content=body, headers=headers)
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert response.json()["id"] is None and error["code"] == -32600
        assert error["message"].startswith("Bad request: the Content-Length header")
        response = await arena.http.post(f"{url}{_rest_path('1.0')}", content=body, headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["status"] == "INVALID_ARGUMENT"


async def test_the_attacker_has_the_same_body_limit(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_attacker()  # default settings: 1_000_000 bytes
    body = _padded(_rpc("1.0", ["hi"]), 1_000_001)
    _assert_rpc_413(await arena.http.post(url, content=body, headers=_headers("1.0")), 1_000_000)
    rest = _padded(_rest_message("1.0", ["hi"]), 1_000_001)
    _assert_status_413(
        await arena.http.post(f"{url}/rest/message:send", content=rest, headers=_headers("1.0")), 1_000_000
    )


# --- nesting depth --------------------------------------------------------------------------------


def _nested_metadata(payload: dict[str, Any], levels: int) -> bytes:
    """``payload`` with ``levels`` nested objects as its message's metadata (deep, and valid JSON)."""
    inner = b'{"a":' * levels + b"1" + b"}" * levels
    text = json.dumps(payload).encode()
    marker = b'"messageId"'
    return text.replace(marker, b'"metadata": ' + inner + b", " + marker, 1)


async def test_a_body_nested_thousands_deep_is_a_parse_error_not_a_crash(
    arena: InProcessArena, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK recursed into it (RecursionError: -32603 and a traceback); now -32700 / 400, quietly."""
    arena.add_model(mode="echo")
    url = arena.add_defender()
    for version in ("1.0", "0.3"):
        for stream in (False, True):
            body = _nested_metadata(_rpc(version, ["deep"], stream=stream), 5000)
            response = await arena.http.post(url, content=body, headers=_headers(version))
            assert response.status_code == 200, response.text
            answer = response.json()
            assert answer["id"] is None
            assert answer["error"] == {"code": -32700, "message": "Parse error: nesting deeper than 100"}
            rest = _nested_metadata(_rest_message(version, ["deep"]), 5000)
            response = await arena.http.post(
                f"{url}{_rest_path(version, stream)}", content=rest, headers=_headers(version)
            )
            assert response.status_code == 400, response.text
            assert response.headers["content-type"] == (
                "application/a2a+json" if version == "1.0" else "application/json"
            )
            error = response.json()["error"]
            assert error["status"] == "INVALID_ARGUMENT"
            assert "nesting deeper than 100" in error["message"]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text
    listed = await arena.http.get(f"{url}/rest/tasks", headers=V10)
    assert listed.json().get("tasks", []) == []  # nothing reached the agent


async def test_nesting_up_to_the_limit_is_not_refused_for_depth(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    # The metadata sits 3 levels deep (request, params, message): 97 more levels make 100.
    # (At 100 protobuf's own recursion limit refuses the metadata: invalid params, not our parse error.)
    body = _nested_metadata(_rpc("1.0", ["at the limit"]), 100 - 3)
    answer = (await arena.http.post(url, content=body, headers=_headers("1.0"))).json()
    assert "nesting deeper" not in json.dumps(answer)
    deeper = _nested_metadata(_rpc("1.0", ["past the limit"]), 100 - 2)
    answer = (await arena.http.post(url, content=deeper, headers=_headers("1.0"))).json()
    assert answer["error"]["message"] == "Parse error: nesting deeper than 100"
    # Brackets inside strings are text: a message full of them is served.
    text = "[{" * 3000
    answer = (await arena.http.post(url, json=_rpc("1.0", [text]), headers=_headers("1.0"))).json()
    assert "result" in answer and "heard 1 user message" in json.dumps(answer), answer


async def test_the_attacker_refuses_deep_bodies_too(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_attacker()
    body = _nested_metadata(_rpc("1.0", ["deep"]), 1000)
    answer = (await arena.http.post(url, content=body, headers=_headers("1.0"))).json()
    assert answer["error"]["code"] == -32700


# --- message parts and text ----------------------------------------------------------------------


def _assert_invalid_params(body: dict[str, Any], needle: str) -> None:
    error = body["error"]
    assert error["code"] == -32602, body
    assert error["message"].startswith("Message too large") and needle in error["message"], body


async def _rpc_error(
    http: httpx.AsyncClient, url: str, payload: dict[str, Any], version: str
) -> dict[str, Any]:
    response = await http.post(url, json=payload, headers=_headers(version))
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        # 0.3 message/stream: the SDK answers errors as the stream's one event.
        data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        assert len(data) == 1, response.text
        return dict(json.loads(data[0]))
    return dict(response.json())


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_too_many_parts_is_invalid_params(arena: InProcessArena, version: str) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    parts = [f"part {i}" for i in range(17)]
    for stream in (False, True):
        body = await _rpc_error(arena.http, url, _rpc(version, parts, stream=stream), version)
        _assert_invalid_params(body, "17 parts; the limit is 16 (ARENA_MAX_MESSAGE_PARTS)")
        assert body["id"] == 7
    for stream in (False, True):
        response = await arena.http.post(
            f"{url}{_rest_path(version, stream)}",
            json=_rest_message(version, parts),
            headers=_headers(version),
        )
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["status"] == "INVALID_ARGUMENT"
        assert "17 parts; the limit is 16 (ARENA_MAX_MESSAGE_PARTS)" in error["message"]
    # Exactly at the limit: answered.
    ok = await arena.http.post(
        url, json=_rpc(version, [f"p{i}" for i in range(16)]), headers=_headers(version)
    )
    assert ok.status_code == 200 and "error" not in ok.json(), ok.text


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_too_much_text_is_invalid_params(arena: InProcessArena, version: str) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender()
    # Counted in UTF-8 bytes: 16_001 two-byte characters are 32_002 bytes.
    over = ["é" * 16_001]
    for stream in (False, True):
        body = await _rpc_error(arena.http, url, _rpc(version, over, stream=stream), version)
        _assert_invalid_params(
            body, "32002 bytes of UTF-8; the limit is 32000 (ARENA_MAX_MESSAGE_TEXT_BYTES)"
        )
    split = ["a" * 20_000, "b" * 12_001]  # the total over all text parts counts
    body = await _rpc_error(arena.http, url, _rpc(version, split), version)
    _assert_invalid_params(body, "32001 bytes")
    response = await arena.http.post(
        f"{url}{_rest_path(version)}", json=_rest_message(version, over), headers=_headers(version)
    )
    assert (
        response.status_code == 400 and "ARENA_MAX_MESSAGE_TEXT_BYTES" in response.json()["error"]["message"]
    )
    # Exactly at the limit: answered by the model.
    ok = await arena.http.post(url, json=_rpc(version, ["é" * 16_000]), headers=_headers(version))
    assert ok.status_code == 200 and "error" not in ok.json(), ok.text


async def test_a_refused_message_creates_no_task_and_settings_apply(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(max_message_parts=2, max_message_text_bytes=1_000)
    body = await _rpc_error(arena.http, url, _rpc("1.0", ["a", "b", "c"]), "1.0")
    _assert_invalid_params(body, "3 parts; the limit is 2")
    body = await _rpc_error(arena.http, url, _rpc("1.0", ["x" * 1_001]), "1.0")
    _assert_invalid_params(body, "1001 bytes of UTF-8; the limit is 1000")
    listed = await arena.http.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}, headers=_headers("1.0")
    )
    assert listed.json()["result"].get("tasks", []) == []


async def test_a_parked_conversation_survives_a_refused_follow_up(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    url = arena.add_defender(defender_turn_mode="input-required")
    first = (await arena.http.post(url, json=_rpc("1.0", ["first turn"]), headers=_headers("1.0"))).json()
    task = first["result"]["task"]
    follow = _rpc("1.0", ["x"] * 17, message_id="m2")
    follow["params"]["message"] |= {"taskId": task["id"], "contextId": task["contextId"]}
    _assert_invalid_params(await _rpc_error(arena.http, url, follow, "1.0"), "17 parts")
    again = _rpc("1.0", ["second turn"], message_id="m3")
    again["params"]["message"] |= {"taskId": task["id"], "contextId": task["contextId"]}
    result = (await arena.http.post(url, json=again, headers=_headers("1.0"))).json()["result"]["task"]
    assert result["id"] == task["id"] and result["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "second turn" in json.dumps(result["status"]["message"])


async def test_the_attacker_refuses_oversized_messages_before_playing(arena: InProcessArena) -> None:
    arena.add_model()
    settings = load_settings(max_message_parts=1)
    app = create_attacker_app(
        settings,
        public_url="http://limited",
        model_factory=lambda: arena.chat_model(),
        target_http=arena.http,
    )
    url = arena.add("limited", app)
    request = json.dumps({"target": "http://defender", "strategy": "playbook", "max_turns": 1, "seed": 1})
    for version in ("1.0", "0.3"):
        body = await _rpc_error(arena.http, url, _rpc(version, [request, "extra"]), version)
        _assert_invalid_params(body, "2 parts; the limit is 1 (ARENA_MAX_MESSAGE_PARTS)")


# --- the orchestrator ----------------------------------------------------------------------------


def _orchestrator(arena: InProcessArena, **overrides: Any) -> tuple[FastAPI, httpx.AsyncClient]:
    settings = load_settings(attacker_url="http://attacker", **overrides)
    app = create_orchestrator_app(settings, http=arena.http, run_worker=False)
    arena.add("orchestrator", app)
    return app, client_for(arena.router)


def _spec_yaml(size: int) -> bytes:
    text = "name: big\nattackers: [{strategy: playbook}]\ndefenders: [{name: d, url: http://d}]\n"
    text += "objectives: [{phrase: I Give Up}]\n"
    return (text + "#" * (size - len(text) - 1) + "\n").encode()


async def test_orchestrator_refuses_bodies_over_the_request_limit(arena: InProcessArena) -> None:
    _, http = _orchestrator(arena, max_request_bytes=LIMIT)
    url = "http://orchestrator/v1/campaigns"
    yaml = {"Content-Type": "application/yaml"}
    response = await http.post(url, content=_spec_yaml(LIMIT + 1), headers=yaml)
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["kind"] == "too_large" and f"the limit is {LIMIT} bytes" in error["message"]
    assert error["problems"] == []
    endless = Endless()
    response = await asyncio.wait_for(http.post(url, content=endless, headers=yaml), 10)
    assert response.status_code == 413 and f"limit of {LIMIT} bytes" in response.json()["error"]["message"]
    assert endless.sent <= _most_chunks(LIMIT)
    # Within the limit: parsed as usual (this one is a valid spec).
    response = await http.post(url, content=_spec_yaml(LIMIT), headers=yaml)
    assert response.status_code == 201, response.text
    assert (await http.get("http://orchestrator/healthz")).status_code == 200
    # Reads with a body over the limit are refused too.
    for path in ("/healthz", "/v1/campaigns"):
        response = await http.request("GET", f"http://orchestrator{path}", content=b"x" * (LIMIT + 1))
        assert response.status_code == 413 and response.json()["error"]["kind"] == "too_large"
        endless = Endless()
        response = await asyncio.wait_for(
            http.request("GET", f"http://orchestrator{path}", content=endless), 10
        )
        assert response.status_code == 413 and endless.sent <= _most_chunks(LIMIT)
    await http.aclose()


async def test_orchestrator_refusals_keep_its_error_shape(
    arena: InProcessArena, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("arena_core.http_limits.BODY_READ_TIMEOUT_S", 0.3)
    _, http = _orchestrator(arena, max_request_bytes=LIMIT)
    url = "http://orchestrator/v1/campaigns"
    yaml = {"Content-Type": "application/yaml"}
    response = await asyncio.wait_for(http.post(url, content=Stalled(b"name: x\n"), headers=yaml), 10)
    assert response.status_code == 408
    error = response.json()["error"]
    assert set(error) == {"kind", "message", "problems"} and error["problems"] == []
    assert error["message"].startswith("Request timeout")
    response = await http.post(
        url,
        content=b"name: x\n",
        headers=[(b"Content-Type", b"application/yaml"), (b"Content-Length", b"\xb2")],
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"kind", "message", "problems"}
    assert error["message"].startswith("Bad request: the Content-Length header")
    await http.aclose()


async def test_the_smaller_of_the_two_limits_applies_to_specs(arena: InProcessArena) -> None:
    _, http = _orchestrator(arena, max_request_bytes=1_000_000, orchestrator_max_spec_bytes=1_000)
    response = await http.post(
        "http://orchestrator/v1/campaigns",
        content=_spec_yaml(1_500),
        headers={"Content-Type": "application/yaml"},
    )
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["kind"] == "too_large" and "the limit is 1000" in error["message"]
    await http.aclose()
