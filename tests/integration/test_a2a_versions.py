"""A2A version negotiation (A2A 1.0 section 3.6) on both bindings, in process.

a2a-sdk 1.3.0 compared the major number only (``A2A-Version: 1.1`` was served as
1.0, ``0.5`` as 0.3), answered a 0.3 method under 1.0 with -32603 Internal error
and a 1.0 method under 0.3 with -32009 (0.3 is supported), and ignored the version
sent as the ``A2A-Version`` query parameter.
:class:`arena_core.a2a.version_guard.A2aVersionGuard` now serves exactly 1.0 and 0.3
(a patch number ignored), answers VersionNotSupportedError otherwise (-32009 / 400),
answers a method of the other version with -32601 naming the method to call, and
reads ``?A2A-Version=`` when no header is sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types.a2a_pb2 import AgentCard
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from arena_core.a2a.protocol_versions import (
    V03_TO_V10_METHODS,
    V10_METHODS,
    V10_TO_V03_METHODS,
)
from arena_core.a2a.rest_media_type import V10RestMediaType
from arena_core.a2a.v03_rest_message_guard import V03RestMessageGuard
from arena_core.a2a.version_guard import A2aVersionGuard
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

UNKNOWN = "no-such-task"
UNSUPPORTED = ["1.1", "1.5", "2.0", "0.5", "0.2", "garbage", "1", "v1.0", "1.0-rc1", "1.0, 0.3"]
V10_PATCHES = ["1.0", "1.0.0", "1.0.7", " 1.0 "]
V03_PATCHES = ["0.3", "0.3.0", "0.3.2"]
V10_MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "plan a picnic"}]}


@pytest.fixture
def defender(arena: InProcessArena) -> InProcessArena:
    arena.add_model(mode="echo")
    arena.add_defender()
    return arena


async def rpc(
    arena: InProcessArena,
    method: str,
    params: object,
    headers: dict[str, str] | None = None,
    *,
    query: str = "",
    request_id: object = 7,
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    response = await arena.http.post(f"http://defender/{query}", json=body, headers=headers or {})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json", response.headers
    reply: dict[str, Any] = response.json()
    return reply


def code_of(reply: dict[str, Any]) -> int | None:
    error = reply.get("error")
    return error["code"] if isinstance(error, dict) else None


# --- unsupported versions -------------------------------------------------------------------------


@pytest.mark.parametrize("version", UNSUPPORTED)
@pytest.mark.parametrize("method", ["GetTask", "tasks/get"])
async def test_jsonrpc_unsupported_version_gets_version_not_supported(
    defender: InProcessArena, version: str, method: str
) -> None:
    reply = await rpc(defender, method, {"id": UNKNOWN}, {"A2A-Version": version})
    assert reply["id"] == 7, reply
    error = reply["error"]
    assert error["code"] == -32009, reply
    assert "1.0" in error["message"] and "0.3" in error["message"], error
    assert version.strip() in error["message"], error
    (info,) = error["data"]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert (info["reason"], info["domain"]) == ("VERSION_NOT_SUPPORTED", "a2a-protocol.org")
    assert info["metadata"] == {"requestedVersion": version.strip(), "supportedVersions": "1.0, 0.3"}


@pytest.mark.parametrize("version", UNSUPPORTED)
@pytest.mark.parametrize(
    ("verb", "path"),
    [
        ("GET", "/rest/tasks/x"),
        ("GET", "/rest/v1/tasks/x"),
        ("POST", "/rest/message:send"),
        ("GET", "/rest/nope"),
    ],
)
async def test_rest_unsupported_version_gets_version_not_supported(
    defender: InProcessArena, version: str, verb: str, path: str
) -> None:
    response = await defender.http.request(
        verb, f"http://defender{path}", headers={"A2A-Version": version}, json={"message": V10_MESSAGE}
    )
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (400, "FAILED_PRECONDITION"), error
    assert error["details"][0]["reason"] == "VERSION_NOT_SUPPORTED", error
    assert "1.0" in error["message"] and "0.3" in error["message"], error


async def test_a_refused_version_never_reaches_the_agent(defender: InProcessArena) -> None:
    reply = await rpc(defender, "SendMessage", {"message": V10_MESSAGE}, {"A2A-Version": "1.1"})
    assert code_of(reply) == -32009, reply
    rest = await defender.http.post(
        "http://defender/rest/message:send", json={"message": V10_MESSAGE}, headers={"A2A-Version": "2.0"}
    )
    assert rest.status_code == 400, rest.text
    listed = await rpc(defender, "ListTasks", {}, {"A2A-Version": "1.0"})
    assert listed["result"].get("tasks", []) == [], listed


@pytest.mark.parametrize("version", V10_PATCHES)
async def test_1_0_with_a_patch_number_is_1_0(defender: InProcessArena, version: str) -> None:
    reply = await rpc(defender, "GetTask", {"id": UNKNOWN}, {"A2A-Version": version})
    assert code_of(reply) == -32001, reply  # served: the task store says no such task
    rest = await defender.http.get(f"http://defender/rest/tasks/{UNKNOWN}", headers={"A2A-Version": version})
    assert rest.status_code == 404 and rest.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize("version", V03_PATCHES)
async def test_0_3_with_a_patch_number_is_0_3(defender: InProcessArena, version: str) -> None:
    reply = await rpc(defender, "tasks/get", {"id": UNKNOWN}, {"A2A-Version": version})
    assert code_of(reply) == -32001, reply
    rest = await defender.http.get(
        f"http://defender/rest/v1/tasks/{UNKNOWN}", headers={"A2A-Version": version}
    )
    assert rest.status_code == 404, rest.text


# --- a method of the other version ----------------------------------------------------------------


@pytest.mark.parametrize(("v03", "v10"), sorted(V03_TO_V10_METHODS.items()))
@pytest.mark.parametrize("version", ["1.0", "1.0.1"])
async def test_a_0_3_method_under_1_0_is_not_found(
    defender: InProcessArena, v03: str, v10: str, version: str
) -> None:
    reply = await rpc(defender, v03, {"id": UNKNOWN}, {"A2A-Version": version}, request_id="r")
    assert reply["id"] == "r", reply
    error = reply["error"]
    assert error["code"] == -32601, reply  # a2a-sdk 1.3.0: -32603 Internal error
    assert f"'{v03}' is an A2A 0.3 method" in error["message"], error
    assert f"call '{v10}'" in error["message"], error


@pytest.mark.parametrize("v10", sorted(V10_METHODS))
@pytest.mark.parametrize("headers", [{}, {"A2A-Version": ""}, {"A2A-Version": "0.3"}])
async def test_a_1_0_method_under_0_3_is_not_found(
    defender: InProcessArena, v10: str, headers: dict[str, str]
) -> None:
    reply = await rpc(defender, v10, {"id": UNKNOWN}, headers)
    error = reply["error"]
    assert error["code"] == -32601, reply  # a2a-sdk 1.3.0: -32009, though 0.3 is supported
    assert f"'{v10}' is an A2A 1.0 method" in error["message"], error
    assert "send A2A-Version: 1.0" in error["message"], error
    v03 = V10_TO_V03_METHODS[v10]
    assert (f"the 0.3 method '{v03}'" if v03 else "A2A 0.3 has no such method") in error["message"], error
    assert "data" not in error, error  # a JSON-RPC error, like the SDK's own -32601


async def test_an_unsupported_version_on_a_0_3_method_is_version_not_supported(
    defender: InProcessArena,
) -> None:
    reply = await rpc(defender, "tasks/get", {"id": UNKNOWN}, {"A2A-Version": "2.0"})
    assert code_of(reply) == -32009, reply  # a2a-sdk 1.3.0: -32603


async def test_a_method_name_spelled_with_escapes_is_still_recognised(defender: InProcessArena) -> None:
    """The guard parses only bodies that can name a method of the other version; escapes can."""
    for body, headers in (
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tasks\\/get", "params": {"id": "x"}}',
            {"A2A-Version": "1.0"},
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "\\u0047etTask", "params": {"id": "x"}}', {}),
    ):
        response = await defender.http.post(
            "http://defender/", content=body, headers={"Content-Type": "application/json", **headers}
        )
        assert response.json()["error"]["code"] == -32601, response.text


async def test_method_not_found_and_invalid_requests_keep_the_sdks_answers(defender: InProcessArena) -> None:
    assert code_of(await rpc(defender, "no/such", {}, {"A2A-Version": "1.0"})) == -32601
    assert code_of(await rpc(defender, "NoSuch", {}, {})) == -32601
    # Not a request object: the SDK's -32600, whatever the version.
    for headers in ({"A2A-Version": "1.0"}, {}, {"A2A-Version": "1.1"}):
        response = await defender.http.post("http://defender/", json=[1], headers=headers)
        assert response.json()["error"]["code"] == -32600, response.text
        response = await defender.http.post(
            "http://defender/", content=b"{", headers={"Content-Type": "application/json", **headers}
        )
        assert response.json()["error"]["code"] == -32700, response.text


# --- the version as a query parameter -------------------------------------------------------------


@pytest.mark.parametrize("query", ["?A2A-Version=1.0", "?a2a-version=1.0", "?x=1&A2A-Version=1.0.0"])
async def test_jsonrpc_honours_the_version_query_parameter(defender: InProcessArena, query: str) -> None:
    reply = await rpc(defender, "GetTask", {"id": UNKNOWN}, query=query)
    assert code_of(reply) == -32001, reply  # served as 1.0; a2a-sdk 1.3.0: -32009 (read as 0.3)
    reply = await rpc(defender, "SendMessage", {"message": V10_MESSAGE}, query=query)
    assert reply["result"]["task"]["status"]["state"].startswith("TASK_STATE_"), reply
    assert "picnic" in str(reply["result"]["task"]), reply


async def test_rest_honours_the_version_query_parameter(defender: InProcessArena) -> None:
    response = await defender.http.get(f"http://defender/rest/tasks/{UNKNOWN}?A2A-Version=1.0")
    assert response.status_code == 404, response.text  # a2a-sdk 1.3.0: 400 VERSION_NOT_SUPPORTED
    assert response.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    response = await defender.http.post(
        "http://defender/rest/message:send?A2A-Version=1.0", json={"message": V10_MESSAGE}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/a2a+json"
    assert "picnic" in str(response.json()["task"])


async def test_the_header_wins_over_the_query_parameter(defender: InProcessArena) -> None:
    reply = await rpc(defender, "GetTask", {"id": UNKNOWN}, {"A2A-Version": "0.3"}, query="?A2A-Version=1.0")
    assert code_of(reply) == -32601, reply  # read as 0.3
    reply = await rpc(defender, "GetTask", {"id": UNKNOWN}, {"A2A-Version": "1.0"}, query="?A2A-Version=0.3")
    assert code_of(reply) == -32001, reply  # read as 1.0
    # An empty header is no header: the parameter counts.
    reply = await rpc(defender, "GetTask", {"id": UNKNOWN}, {"A2A-Version": ""}, query="?A2A-Version=1.0")
    assert code_of(reply) == -32001, reply
    response = await defender.http.get(
        f"http://defender/rest/tasks/{UNKNOWN}?A2A-Version=1.0", headers={"A2A-Version": "0.3"}
    )
    assert response.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED", response.text


async def test_an_unsupported_version_in_the_query_is_refused(defender: InProcessArena) -> None:
    reply = await rpc(defender, "GetTask", {"id": UNKNOWN}, query="?A2A-Version=1.1")
    assert code_of(reply) == -32009, reply
    assert "?A2A-Version=1.1" in reply["error"]["message"], reply
    response = await defender.http.get(f"http://defender/rest/tasks/{UNKNOWN}?A2A-Version=2.0")
    assert response.status_code == 400 and "?A2A-Version=2.0" in response.json()["error"]["message"]


# --- every new middleware passes non-http scopes straight through ---------------------------------


async def _lifespan_app(scope: Scope, receive: Receive, send: Send) -> None:
    assert scope["type"] == "lifespan"
    while True:
        message = await receive()
        await send({"type": f"{message['type']}.complete"})
        if message["type"] == "lifespan.shutdown":
            return


@pytest.mark.parametrize(
    "wrap",
    [
        lambda app: A2aVersionGuard(app, rpc_path="/", rest_prefix="/rest"),
        lambda app: V10RestMediaType(app, rest_prefix="/rest"),
        lambda app: V03RestMessageGuard(app, rest_prefix="/rest", card=AgentCard()),
    ],
    ids=["A2aVersionGuard", "V10RestMediaType", "V03RestMessageGuard"],
)
async def test_a_new_middleware_passes_the_lifespan_scope_through(wrap: Any) -> None:
    incoming: list[Message] = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> Message:
        return incoming.pop(0)

    async def send(message: Message) -> None:
        sent.append(message["type"])

    app: ASGIApp = wrap(_lifespan_app)
    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
