"""Hypothesis against the agents' A2A endpoints, in-process over httpx.ASGITransport.

For the defender and the attacker, on both protocol versions (1.0 with the
``A2A-Version: 1.0`` header, 0.3 without), both bindings:

* JSON-RPC at ``POST /``: arbitrary bytes, arbitrary JSON, JSON-RPC envelopes
  with random methods, ids and params, and real A2A methods with hostile params;
* HTTP+JSON under ``/rest`` (1.0) and ``/rest/v1`` (0.3): random methods, paths
  (task ids) and bodies.

Properties: never a 5xx, never a hang (each request is bounded), JSON-RPC
answers are well-formed responses with the spec's error codes and id echo, REST
errors are JSON ``google.rpc.Status`` bodies; and after the run the agent still
plays a normal turn on both versions (checked when the fixture tears down).

One app serves every example of a test, so state left by earlier examples
(parked tasks, histories) is part of what later ones meet.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

import httpx
import pytest
import pytest_asyncio
from hypothesis import example, given
from hypothesis import strategies as st

from support import fuzzing
from support.fuzzing import (
    A2A_ERROR_CODES,
    STREAMING_METHODS,
    V03_METHODS,
    V10_METHODS,
    assert_json_error,
    assert_jsonrpc_response,
    bounded,
)

if TYPE_CHECKING:
    from conftest import InProcessArena

pytestmark = [pytest.mark.fuzz, pytest.mark.asyncio]

VERSIONS = ("1.0", "0.3")
HEADERS = {"1.0": fuzzing.V10_HEADERS, "0.3": fuzzing.V03_HEADERS}
REST_PREFIX = {"1.0": "/rest", "0.3": "/rest/v1"}


@dataclass
class Agent:
    """An agent under fuzz, reachable at ``url`` through ``http``."""

    name: str
    url: str
    http: httpx.AsyncClient

    async def post(self, path: str, *, version: str, **kwargs: Any) -> httpx.Response:
        headers = {"Content-Type": "application/json", **HEADERS[version]}
        return await bounded(
            self.http.post(f"{self.url}{path}", headers=headers, **kwargs), f"{self.name} POST {path}"
        )

    async def request(self, method: str, path: str, *, version: str, body: bytes | None) -> httpx.Response:
        headers = {"Content-Type": "application/json", **HEADERS[version]}
        return await bounded(
            self.http.request(method, f"{self.url}{path}", headers=headers, content=body),
            f"{self.name} {method} {path}",
        )


def _match_request_part(version: str) -> dict[str, Any]:
    request = {"target": "http://defender", "strategy": "playbook", "max_turns": 1, "seed": 1}
    if version == "1.0":
        return {"data": request, "mediaType": "application/json"}
    return {"kind": "data", "data": request}


async def _assert_still_serving(agent: Agent) -> None:
    """After the fuzz run, a normal turn on each version gets a normal answer."""
    for version in VERSIONS:
        message = fuzzing.text_message(version, "Hello! Can you help me plan a picnic?")
        if agent.name == "attacker":
            message["parts"] = [_match_request_part(version)]
        method = "SendMessage" if version == "1.0" else "message/send"
        request = {"jsonrpc": "2.0", "id": "after", "method": method, "params": {"message": message}}
        response = await agent.post("/", version=version, json=request)
        body = assert_jsonrpc_response(response, request)
        assert "result" in body, body
        task = body["result"]["task"] if version == "1.0" else body["result"]
        state = task["status"]["state"]
        assert state in ("TASK_STATE_COMPLETED", "completed"), task  # both complete their task
        if agent.name == "defender":
            assert "picnic" in json.dumps(task["status"]["message"]), task
        else:
            assert any(a.get("name") == "match-result" for a in task.get("artifacts", [])), task


@pytest_asyncio.fixture(params=["defender", "attacker"])
async def agent(request: pytest.FixtureRequest, arena: InProcessArena) -> AsyncIterator[Agent]:
    # The echo model repeats what it hears: a reply that names the user's text proves a real turn.
    arena.add_model(mode="echo")
    arena.add_defender()
    if request.param == "attacker":
        # Its targets resolve only to the in-process apps: an unknown host fails, never dials out.
        arena.add_attacker()
    target = Agent(request.param, f"http://{request.param}", arena.http)
    yield target
    await _assert_still_serving(target)


def _parsed(body: bytes) -> tuple[bool, object]:
    try:
        return True, json.loads(body)
    except ValueError:
        return False, None


# --- JSON-RPC ---------------------------------------------------------------------------------


@given(body=fuzzing.raw_bodies, version=st.sampled_from(VERSIONS))
@example(body=b"\xff\xfe", version="1.0")
# Not Unicode text: a2a-sdk 1.3.0 answered -32603 (fixed by TextBodyGuard).
@example(body=b"\xf1", version="1.0")
@example(body=b"\xff\xfe\x00", version="0.3")
@example(body=b"\x00\x00\x00A\x00", version="1.0")
@example(body=b"{", version="0.3")
@example(body=b"[]", version="1.0")
@example(body=b'{"jsonrpc": "2.0", "id": true, "method": "GetTask", "params": {"id": "x"}}', version="1.0")
@example(body=b'{"jsonrpc": "2.0", "id": 1.5, "method": "tasks/get", "params": {"id": "x"}}', version="0.3")
async def test_jsonrpc_survives_arbitrary_bytes(agent: Agent, body: bytes, version: str) -> None:
    response = await agent.post("/", version=version, content=body)
    ok, request = _parsed(body)
    if not ok:
        reply = assert_jsonrpc_response(response, None, raw=body)
        assert reply["error"]["code"] == -32700, reply  # parse error
        return
    if _is_stream(response):
        return  # a valid streaming request by chance: covered by test_a2a_methods_with_hostile_params
    reply = assert_jsonrpc_response(response, request, raw=body)
    if not isinstance(request, dict):
        assert reply["error"]["code"] == -32600, reply  # invalid request: not an object


def _is_stream(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def _unstructured_params_codes(params: object) -> set[int]:
    """Params that are neither an object nor an array make an invalid request (JSON-RPC 2.0 section 4.2).

    a2a-sdk 1.3.0 reads a null ``params`` as params of the wrong shape (-32602 Invalid params) or,
    for methods without params, as none (the method's own answer, e.g. -32004 for the extended
    card); scalars get -32600.
    """
    return {-32600, -32602} | A2A_ERROR_CODES if params is None else {-32600}


def _expected_envelope_code(request: dict[str, Any]) -> set[int] | None:
    """The error codes JSON-RPC 2.0 gives ``request``; None when it names a real method properly."""
    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return {-32600}
    if request.get("id") is not None and not fuzzing.is_valid_id(request["id"]):
        return {-32600}  # a null id is allowed (section 4), and echoed
    if "params" in request and not isinstance(request["params"], dict | list):
        return _unstructured_params_codes(request["params"])
    if request["method"] == "":
        return {-32600, -32601}  # a2a-sdk: "Method is required" (-32600); no such method (-32601)
    if request["method"] not in V10_METHODS + V03_METHODS:
        return {-32601}
    return None


@given(request=st.sampled_from(VERSIONS).flatmap(lambda v: st.tuples(st.just(v), fuzzing.rpc_envelopes(v))))
@example(request=("1.0", {"jsonrpc": "2.0", "id": 1}))
@example(request=("1.0", {"jsonrpc": "1.0", "id": 2, "method": "GetTask", "params": {"id": "x"}}))
@example(request=("0.3", {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tasks/get", "params": {"id": "x"}}))
@example(request=("0.3", {"jsonrpc": "2.0", "id": "n", "method": "no/such/method"}))
@example(request=("1.0", {"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}}))
@example(request=("1.0", {"jsonrpc": "2.0", "id": 5, "method": ""}))
@example(request=("1.0", {"jsonrpc": "2.0", "id": None, "method": "SendMessage"}))
@example(request=("0.3", {"jsonrpc": "2.0", "id": 6, "method": "tasks/get", "params": "x"}))
@example(request=("0.3", {"jsonrpc": "2.0", "method": "message/send"}))
# A method of the other version: -32601 (a2a-sdk 1.3.0: -32603 / -32009).
@example(request=("1.0", {"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": "x"}}))
@example(request=("0.3", {"jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {"id": "x"}}))
async def test_jsonrpc_envelopes_get_spec_error_codes(
    agent: Agent, request: tuple[str, dict[str, Any]]
) -> None:
    version, envelope = request
    response = await agent.post("/", version=version, json=envelope)
    if _is_stream(response):
        _assert_stream(response, envelope)
        return
    reply = assert_jsonrpc_response(response, envelope)
    allowed = _expected_envelope_code(envelope)
    if allowed is not None:
        assert "error" in reply and reply["error"]["code"] in allowed, (allowed, envelope, reply)
    else:
        _assert_method_outcome(reply, envelope, version)


def _assert_method_outcome(reply: dict[str, Any], request: dict[str, Any], version: str) -> None:
    """A real A2A method: a result, or an error code the spec gives for bad params or A2A errors."""
    if "result" in reply:
        return
    code = reply["error"]["code"]
    method = request["method"]
    allowed = {-32602} | A2A_ERROR_CODES
    if not isinstance(request.get("params", {}), dict | list):
        allowed = _unstructured_params_codes(request["params"])
    elif method in (V03_METHODS if version == "1.0" else V10_METHODS):
        # A method of the other version does not exist in the version the request names: -32601
        # (A2aVersionGuard; a2a-sdk 1.3.0 answered -32603 for 0.3 methods under 1.0, -32009 for
        # 1.0 methods under 0.3).
        allowed = {-32601}
    elif method in V03_METHODS:
        # Invalid 0.3 params get -32602 (JsonRpcParamsGuard; a2a-sdk 1.3.0 answered -32600).
        if request.get("id") is None:
            # A2A 0.3's request objects require an id: a notification is an invalid request there.
            allowed.add(-32600)
        if _has_int32_overflow(request.get("params")):
            # a2a-sdk 1.3.0's 0.3 adapter converts params to protobuf after validating them: an
            # integer outside int32 (historyLength 2**31 on tasks/get) raises ValueError "Value out
            # of range" there, answered -32603 instead of -32602 (1.0 methods answer -32602).
            allowed.add(-32603)
    assert code in allowed, (version, request, reply)


def _has_int32_overflow(value: object) -> bool:
    """Whether ``value`` holds an integer outside protobuf's int32 anywhere inside."""
    if isinstance(value, dict):
        return any(_has_int32_overflow(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_int32_overflow(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool) and not -(2**31) <= value < 2**31


def _assert_stream(response: httpx.Response, request: dict[str, Any]) -> None:
    """An SSE answer: every event is a JSON-RPC response to ``request``."""
    assert response.status_code == 200, response.text[:500]
    events = [line[len("data:") :].strip() for line in response.text.splitlines() if line.startswith("data:")]
    assert events, response.text[:500]
    for data in events:
        event = json.loads(data)
        assert event.get("jsonrpc") == "2.0" and event.get("id") == request.get("id"), event
        assert ("result" in event) != ("error" in event), event


@given(request=st.sampled_from(VERSIONS).flatmap(lambda v: st.tuples(st.just(v), fuzzing.a2a_requests(v))))
@example(request=("1.0", {"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {}}}))
@example(request=("0.3", {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": {}}}))
@example(request=("1.0", {"jsonrpc": "2.0", "id": "s", "method": "SendMessage", "params": [1]}))
@example(request=("1.0", {"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {"pageSize": -1}}))
@example(request=("1.0", {"jsonrpc": "2.0", "id": 0, "method": "SendMessage", "params": False}))
@example(request=("1.0", {"jsonrpc": "2.0", "id": 0, "method": "SendMessage", "params": None}))
@example(
    request=(
        "0.3",
        {"jsonrpc": "2.0", "id": 0, "method": "agent/getAuthenticatedExtendedCard", "params": None},
    )
)
# a2a-sdk 1.3.0 answers -32603 (see _assert_method_outcome); 1.0's GetTask answers -32602.
@example(
    request=(
        "0.3",
        {"jsonrpc": "2.0", "id": 0, "method": "tasks/get", "params": {"id": "", "historyLength": 2**31}},
    )
)
@example(
    request=(
        "1.0",
        {"jsonrpc": "2.0", "id": 0, "method": "GetTask", "params": {"id": "", "historyLength": 2**31}},
    )
)
async def test_a2a_methods_with_hostile_params(agent: Agent, request: tuple[str, dict[str, Any]]) -> None:
    version, envelope = request
    response = await agent.post("/", version=version, json=envelope)
    if envelope["method"] in STREAMING_METHODS and _is_stream(response):
        _assert_stream(response, envelope)
        return
    reply = assert_jsonrpc_response(response, envelope)
    _assert_method_outcome(reply, envelope, version)


# --- HTTP+JSON --------------------------------------------------------------------------------

REST_PATHS = (
    "/message:send",
    "/message:stream",
    "/tasks",
    "/tasks/{id}",
    "/tasks/{id}:cancel",
    "/tasks/{id}:subscribe",
    "/tasks/{id}/pushNotificationConfigs",
    "/tasks/{id}/pushNotificationConfigs/{id}",
    "/extendedAgentCard",
    "/{id}",
)


def _rest_body(version: str) -> st.SearchStrategy[bytes | None]:
    messages = fuzzing.v10_messages if version == "1.0" else fuzzing.v03_rest_messages
    return st.one_of(
        st.none(),
        fuzzing.raw_bodies,
        st.fixed_dictionaries({"message": messages}).map(lambda d: json.dumps(d).encode()),
    )


@st.composite
def rest_requests(draw: st.DrawFn) -> tuple[str, str, str, bytes | None]:
    version = draw(st.sampled_from(VERSIONS))
    template = draw(st.sampled_from(REST_PATHS))
    path = template.replace("{id}", _quote(draw(fuzzing.task_ids)))
    method = draw(st.sampled_from(("GET", "POST", "DELETE", "PUT")))
    path = REST_PREFIX[version] + path
    if version == "1.0" and draw(st.booleans()):
        path = f"/{_quote(draw(fuzzing.texts))}{path}"  # the SDK also serves 1.0 under /{tenant}
    return version, method, path, draw(_rest_body(version))


def _quote(segment: str) -> str:
    return quote(segment, safe="") or "x"


@given(request=rest_requests())
@example(request=("1.0", "POST", "/rest/message:send", b"{"))
@example(request=("0.3", "POST", "/rest/v1/message:send", b"[]"))
@example(request=("1.0", "POST", "/rest/tasks/abc", b"{}"))
@example(request=("1.0", "GET", "/rest/message:send", None))
@example(request=("0.3", "GET", "/rest/v1/tasks/..%2F..", None))
# Not UTF-8: a2a-sdk 1.3.0 answered 500 (fixed by TextBodyGuard).
@example(request=("1.0", "POST", "/rest/message:send", b"\x80"))
@example(request=("0.3", "POST", "/rest/v1/message:send", b"\x80"))
@example(request=("0.3", "POST", "/rest/v1/message:stream", b"\x80"))
@example(request=("1.0", "POST", "/x/rest/message:send", b"\x80"))
# a2a-sdk 1.3.0 raised these out of the app after the SSE headers (fixed by V03RestStreamGuard).
@example(request=("0.3", "GET", "/rest/v1/tasks/x:subscribe", None))
@example(request=("0.3", "POST", "/rest/v1/message:stream", b"{}"))
# a2a-sdk 1.3.0's 0.3 conversion answered these 500 (fixed by V03RestMessageGuard): a part without
# content, a file sent as bytes.
@example(request=("0.3", "POST", "/rest/v1/message:send", b'{"message": {"content": [{}]}}'))
@example(
    request=(
        "0.3",
        "POST",
        "/rest/v1/message:stream",
        b'{"message": {"content": [{"file": {"fileWithBytes": "iVBORw0KGgo=", "mimeType": "text/plain"}}]}}',
    )
)
async def test_rest_answers_json_and_never_5xx(
    agent: Agent, request: tuple[str, str, str, bytes | None]
) -> None:
    version, method, path, body = request
    response = await agent.request(method, path, version=version, body=body)
    assert response.status_code < 500, (request, response.status_code, response.text[:500])
    if _is_stream(response):
        return
    # Each version's own JSON type, errors included (V10RestMediaType). Under /<tenant>/ the router
    # decides whether the path is an HTTP+JSON one at all.
    media_types = _rest_media_types(version, path)
    if response.status_code >= 400:
        assert_json_error(response, media_types)
    else:
        assert response.headers["content-type"] in media_types, response.headers["content-type"]
        assert isinstance(response.json(), dict), response.text[:500]


def _rest_media_types(version: str, path: str) -> set[str]:
    """The media types an answer to a ``version`` request at ``path`` may have."""
    if version == "0.3":
        return {"application/json"}
    if unquote(path).startswith("/rest/"):
        return {"application/a2a+json"}
    return {"application/a2a+json", "application/json"}
