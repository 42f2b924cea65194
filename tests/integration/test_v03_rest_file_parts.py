"""A2A 0.3 HTTP+JSON: a file sent as bytes, or a part without content, gets a 4xx with a reason, not 500.

a2a-sdk 1.3.0's 0.3 HTTP+JSON conversion decodes a file's bytes as UTF-8 text
(``UnicodeDecodeError`` for a PNG, ``binascii.Error`` for text) and raises
``ValueError`` for a part with none of text/file/data: HTTP 500 ``unknown
exception`` for all of them. :class:`arena_core.a2a.v03_rest_message_guard.V03RestMessageGuard`
answers as the 0.3 JSON-RPC binding does for the same message: ContentTypeNotSupported
for a media type the card does not declare, invalid params otherwise.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

PNG = "iVBORw0KGgo="  # the PNG signature: bytes that are not UTF-8
TEXT = base64.b64encode(b"hello").decode()
PATHS = ["/rest/v1/message:send", "/rest/v1/message:stream"]


def v03_rest_message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"message": {"messageId": "m-1", "role": "ROLE_USER", "content": list(parts)}}


def file_bytes(data: str, media_type: str | None) -> dict[str, Any]:
    file: dict[str, Any] = {"fileWithBytes": data, "name": "x.bin"}
    if media_type is not None:
        file["mimeType"] = media_type
    return {"file": file}


@pytest.fixture
def defender(arena: InProcessArena) -> InProcessArena:
    arena.add_model(mode="echo")
    arena.add_defender()
    return arena


async def post(arena: InProcessArena, path: str, body: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    response = await arena.http.post(f"http://defender{path}", json=body)
    return response.status_code, response.headers["content-type"], response.json()


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("data", [PNG, TEXT])
async def test_a_file_of_an_undeclared_media_type_gets_content_type_not_supported(
    defender: InProcessArena, path: str, data: str
) -> None:
    status, media_type, body = await post(defender, path, v03_rest_message(file_bytes(data, "image/png")))
    assert status == 400, body  # a2a-sdk 1.3.0: 500 "unknown exception"
    assert media_type == "application/json"
    error = body["error"]
    assert error["status"] == "INVALID_ARGUMENT", error
    assert error["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED", error
    assert "image/png" in error["message"] and "text/plain" in error["message"], error


async def test_the_answer_matches_the_0_3_jsonrpc_binding(defender: InProcessArena) -> None:
    """The same message on 0.3 JSON-RPC: -32005 with the same reason."""
    part = {"kind": "file", "file": {"bytes": PNG, "mimeType": "image/png", "name": "x.bin"}}
    message = {"kind": "message", "messageId": "m-2", "role": "user", "parts": [part]}
    rpc = await defender.http.post(
        "http://defender/",
        json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}},
    )
    rpc_error = rpc.json()["error"]
    assert rpc_error["code"] == -32005, rpc_error
    _, _, body = await post(defender, PATHS[0], v03_rest_message(file_bytes(PNG, "image/png")))
    assert body["error"]["message"] == rpc_error["message"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("media_type", ["text/plain", "application/json", None])
@pytest.mark.parametrize("data", [PNG, TEXT])
async def test_any_other_file_sent_as_bytes_gets_invalid_params_naming_the_limitation(
    defender: InProcessArena, path: str, media_type: str | None, data: str
) -> None:
    body = v03_rest_message({"text": "see the file"}, file_bytes(data, media_type))
    status, _, answer = await post(defender, path, body)
    assert status == 400, answer  # a2a-sdk 1.3.0: 500 "unknown exception"
    error = answer["error"]
    assert error["status"] == "INVALID_ARGUMENT", error
    assert error["details"][0]["reason"] == "INVALID_PARAMS", error
    assert error["details"][0]["metadata"] == {"field": "message.content[1].file.fileWithBytes"}, error
    assert "fileWithUri" in error["message"], error


@pytest.mark.parametrize("path", PATHS)
async def test_a_part_without_content_gets_invalid_params(defender: InProcessArena, path: str) -> None:
    status, _, body = await post(defender, path, v03_rest_message({"text": "hi"}, {}, {"metadata": {"a": 1}}))
    assert status == 400, body  # a2a-sdk 1.3.0: 500 "unknown exception"
    error = body["error"]
    assert error["details"][0]["reason"] == "INVALID_PARAMS", error
    assert "message.content[1]" in error["message"], error


async def test_refused_messages_never_reach_the_agent(defender: InProcessArena) -> None:
    for part in (file_bytes(PNG, "image/png"), file_bytes(TEXT, "text/plain"), {}):
        status, _, _ = await post(defender, PATHS[0], v03_rest_message(part))
        assert status == 400
    listed = await defender.http.get("http://defender/rest/tasks", headers={"A2A-Version": "1.0"})
    assert listed.json().get("tasks", []) == [], listed.text


@pytest.mark.parametrize("path", PATHS)
async def test_files_by_uri_and_plain_messages_still_reach_the_agent(
    defender: InProcessArena, path: str
) -> None:
    by_uri = {"file": {"fileWithUri": "https://example.com/notes.txt", "mimeType": "text/plain"}}
    response = await defender.http.post(
        f"http://defender{path}", json=v03_rest_message({"text": "plan a picnic"}, by_uri)
    )
    assert response.status_code == 200, response.text
    assert "picnic" in response.text
    # A file by URI of an undeclared type: the request handler's own refusal, as before.
    png_by_uri = {"file": {"fileWithUri": "https://example.com/x.png", "mimeType": "image/png"}}
    status, _, body = await post(defender, path, v03_rest_message(png_by_uri))
    assert status == 400 and body["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED", body


async def test_other_versions_and_bodies_are_left_to_the_sdk(defender: InProcessArena) -> None:
    # Under 1.0 the 0.3 route refuses the version before reading the body.
    response = await defender.http.post(
        f"http://defender{PATHS[0]}",
        json=v03_rest_message(file_bytes(PNG, "image/png")),
        headers={"A2A-Version": "1.0"},
    )
    assert response.json()["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED", response.text
    # A body protobuf cannot parse: the SDK's own 400.
    response = await defender.http.post(
        f"http://defender{PATHS[0]}", content=b'{"message": 5}', headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["error"]["status"] == "INVALID_ARGUMENT"
