"""HTTP+JSON request media types: both JSON types accepted, anything else 415, the same on 1.0 and 0.3.

a2a-sdk 1.3.0 parsed any body as JSON whatever its ``Content-Type`` (``text/plain``, a form,
none). :class:`arena_core.a2a.rest_content_type_guard.RestContentTypeGuard` now accepts
``application/json`` and ``application/a2a+json`` and answers 415 to the rest, on both protocol
versions alike. What the agents send back is pinned here too (it is documented): 1.0 answers,
errors included, are ``application/a2a+json``, 0.3 answers ``application/json``. The JSON-RPC
endpoint holds to the same rule (:mod:`arena_core.a2a.jsonrpc_content_type_guard`): JSON or a
``+json`` type, else 415 with a JSON-RPC error, before anything parses the body.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

V10 = {"A2A-Version": "1.0"}
BODIES = {
    "1.0": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "plan a picnic"}]}},
    "0.3": {"message": {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "plan a picnic"}]}},
}
SEND = {"1.0": "/rest/message:send", "0.3": "/rest/v1/message:send"}
STREAM = {"1.0": "/rest/message:stream", "0.3": "/rest/v1/message:stream"}
SUCCESS_MEDIA_TYPE = {"1.0": "application/a2a+json", "0.3": "application/json"}
VERSIONS = ("1.0", "0.3")


async def _post(
    arena: InProcessArena, version: str, path: str, content_type: str | None, body: bytes | None = None
) -> tuple[int, str, dict[str, Any], dict[str, str]]:
    headers = dict(V10) if version == "1.0" else {}
    if content_type is not None:
        headers["Content-Type"] = content_type
    content = json.dumps(BODIES[version]).encode() if body is None else body
    response = await arena.http.post(f"http://defender{path}", content=content, headers=headers)
    media_type = response.headers.get("content-type", "")
    parsed = {} if media_type.startswith("text/event-stream") else response.json()
    return response.status_code, media_type, parsed, dict(response.headers)


@pytest.fixture
def defender(arena: InProcessArena) -> InProcessArena:
    arena.add_model(mode="echo")
    arena.add_defender()
    return arena


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "content_type", ["application/json", "application/a2a+json", "Application/JSON; charset=UTF-8"]
)
async def test_both_json_media_types_are_accepted(
    defender: InProcessArena, version: str, content_type: str
) -> None:
    status, media_type, body, _ = await _post(defender, version, SEND[version], content_type)
    assert status == 200, body
    assert "picnic" in json.dumps(body["task"]), body
    # What is sent back: the SDK labels 1.0 answers application/a2a+json, 0.3 answers application/json.
    assert media_type == SUCCESS_MEDIA_TYPE[version]
    status, media_type, _, _ = await _post(defender, version, STREAM[version], content_type)
    assert status == 200 and media_type.startswith("text/event-stream")


WRONG_TYPES = [
    "text/plain",
    "application/x-www-form-urlencoded",  # what curl -d sends by default
    "application/xml",
    "application/json; charset=latin-1",
    None,  # a body without any Content-Type
]


@pytest.mark.parametrize("content_type", WRONG_TYPES)
async def test_a_wrong_media_type_gets_415_on_both_versions(
    defender: InProcessArena, content_type: str | None
) -> None:
    answers = {}
    for version in VERSIONS:
        for path in (SEND[version], STREAM[version]):
            status, media_type, body, headers = await _post(defender, version, path, content_type)
            assert status == 415, (version, path, body)
            # The binding's error shape (google.rpc.Status), JSON like its other errors.
            assert media_type == SUCCESS_MEDIA_TYPE[version]  # 1.0: application/a2a+json, errors too
            error = body["error"]
            assert (error["code"], error["status"]) == (415, "INVALID_ARGUMENT")
            assert "application/json or application/a2a+json" in error["message"], error
            assert headers["accept"] == "application/json, application/a2a+json"
            answers[(version, path)] = error["message"]
    # The same request gets the same answer from both versions, streaming or not.
    assert len(set(answers.values())) == 1, answers


async def test_a_refused_body_never_reaches_the_agent(defender: InProcessArena) -> None:
    await _post(defender, "1.0", SEND["1.0"], "text/plain")
    await _post(defender, "0.3", SEND["0.3"], "text/plain")
    listed = await defender.http.get("http://defender/rest/tasks", headers=V10)
    assert listed.status_code == 200, listed.text
    assert listed.json().get("tasks", []) == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_requests_without_a_body_are_not_checked(defender: InProcessArena, version: str) -> None:
    prefix = "/rest" if version == "1.0" else "/rest/v1"
    headers = dict(V10) if version == "1.0" else {}
    cancel = await defender.http.post(f"http://defender{prefix}/tasks/unknown:cancel", headers=headers)
    assert cancel.status_code == 404, cancel.text  # the SDK's answer: no such task, not 415
    get = await defender.http.get(f"http://defender{prefix}/tasks/unknown", headers=headers)
    assert get.status_code == 404, get.text


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_malformed_json_body_is_still_the_sdks_400(defender: InProcessArena, version: str) -> None:
    status, media_type, body, _ = await _post(
        defender, version, SEND[version], "application/json", b'{"message": 5}'
    )
    assert status == 400, body
    assert media_type == SUCCESS_MEDIA_TYPE[version] and body["error"]["status"] == "INVALID_ARGUMENT"


# --- the JSON-RPC endpoint --------------------------------------------------------------------
# arena_core.a2a.jsonrpc_content_type_guard: the same rule, a JSON-RPC error body (-32600, id null).

RPC_BODIES = {
    "1.0": {"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": BODIES["1.0"]},
    "0.3": {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "message/send",
        "params": {
            "message": {
                "kind": "message",
                "messageId": "m-1",
                "role": "user",
                "parts": [{"kind": "text", "text": "x"}],
            }
        },
    },
}


async def _post_rpc(
    arena: InProcessArena, version: str, content_type: str | None, body: bytes | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    headers = dict(V10) if version == "1.0" else {}
    if content_type is not None:
        headers["Content-Type"] = content_type
    content = json.dumps(RPC_BODIES[version]).encode() if body is None else body
    response = await arena.http.post("http://defender/", content=content, headers=headers)
    return response.status_code, response.json(), dict(response.headers)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "content_type",
    ["application/json", "Application/JSON; charset=UTF-8", "application/a2a+json", "application/vnd.x+json"],
)
async def test_jsonrpc_accepts_json_and_any_json_suffix_type(
    defender: InProcessArena, version: str, content_type: str
) -> None:
    status, body, _ = await _post_rpc(defender, version, content_type)
    assert status == 200 and "result" in body, body


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "content_type", [*WRONG_TYPES, "multipart/form-data; boundary=x", "application/json-rpc"]
)
async def test_jsonrpc_with_a_wrong_media_type_gets_415_and_a_jsonrpc_error(
    defender: InProcessArena, version: str, content_type: str | None
) -> None:
    status, body, headers = await _post_rpc(defender, version, content_type)
    assert status == 415, body
    assert headers["content-type"] == "application/json"
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600
    message = body["error"]["message"]
    assert message.startswith("Unsupported Media Type: ")
    assert "must be sent as application/json (or another +json type), UTF-8" in message
    assert headers["accept"] == "application/json"


async def test_a_refused_jsonrpc_body_never_reaches_the_agent(defender: InProcessArena) -> None:
    for version in VERSIONS:
        for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
            status, _, _ = await _post_rpc(defender, version, content_type)
            assert status == 415
    listed = await defender.http.get("http://defender/rest/tasks", headers=V10)
    assert listed.json().get("tasks", []) == []


async def test_a_bodiless_jsonrpc_post_is_the_sdks_parse_error(defender: InProcessArena) -> None:
    response = await defender.http.post("http://defender/", headers=V10)
    assert response.status_code == 200
    assert response.json()["error"]["code"] == -32700
