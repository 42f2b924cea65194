"""A2A 1.0 HTTP+JSON errors are ``application/a2a+json`` like its successes (A2A 1.0 section 11.1).

a2a-sdk 1.3.0 labeled 1.0 successes ``application/a2a+json`` and every error
``application/json``, as did the answers made before the SDK (router 404, the
guards' 415 and 400, the body limit's 413, the token check's 401).
:class:`arena_core.a2a.rest_media_type.V10RestMediaType` relabels them all for
requests read as 1.0; 0.3 (``application/json``) and JSON-RPC (``application/json``
in both versions, 1.0 section 9.1) are unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from conftest import InProcessArena

pytestmark = pytest.mark.asyncio

TOKEN = "t" * 40
LIMIT = 2_000
A2A_JSON = "application/a2a+json"
V10_MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "plan a picnic"}]}
V03_MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "content": [{"text": "plan a picnic"}]}


@dataclass(frozen=True)
class ErrorCase:
    """One error, asked the same way of each version: ``prefix`` is ``/rest`` or ``/rest/v1``."""

    verb: str
    path: str
    status: int
    body: bytes | None = None
    content_type: str | None = "application/json"


CASES = {
    "task not found (SDK)": ErrorCase("GET", "/tasks/no-such-task", 404),
    "unknown path (router)": ErrorCase("GET", "/no/such/path", 404),
    # (a wrong method under /rest is a 404 too: the SDK's /{tenant} mount takes every such path)
    "wrong method (router)": ErrorCase("GET", "/message:send", 404),
    "body not JSON (SDK)": ErrorCase("POST", "/message:send", 400, b"{"),
    "body not text (TextBodyGuard)": ErrorCase("POST", "/message:send", 400, b"\x80"),
    "undeclared body type (RestContentTypeGuard)": ErrorCase(
        "POST", "/message:send", 415, b"{}", "text/plain"
    ),
    "body too large (BodySizeLimit)": ErrorCase("POST", "/message:send", 413, b" " * (LIMIT + 1)),
    "stream refused (SDK / V03RestStreamGuard)": ErrorCase("POST", "/message:stream", 400, b"{}"),
}
PREFIX = {"1.0": "/rest", "0.3": "/rest/v1"}
EXPECTED = {"1.0": A2A_JSON, "0.3": "application/json"}


@pytest.fixture
def defender(arena: InProcessArena) -> InProcessArena:
    arena.add_model(mode="echo")
    arena.add_defender(max_request_bytes=LIMIT)
    return arena


def _version_headers(version: str) -> dict[str, str]:
    return {"A2A-Version": "1.0"} if version == "1.0" else {}


@pytest.mark.parametrize("version", ["1.0", "0.3"])
@pytest.mark.parametrize("case", list(CASES))
async def test_http_json_errors_use_the_versions_media_type(
    defender: InProcessArena, version: str, case: str
) -> None:
    error_case = CASES[case]
    headers = _version_headers(version)
    if error_case.content_type is not None:
        headers["Content-Type"] = error_case.content_type
    response = await defender.http.request(
        error_case.verb,
        f"http://defender{PREFIX[version]}{error_case.path}",
        content=error_case.body,
        headers=headers,
    )
    assert response.status_code == error_case.status, response.text
    assert response.headers["content-type"] == EXPECTED[version], (case, response.headers)
    error = response.json()["error"]  # the same google.rpc.Status body either way
    assert error["code"] == error_case.status and isinstance(error["message"], str), error


async def test_a_1_0_request_naming_its_version_in_the_query_gets_a2a_json(defender: InProcessArena) -> None:
    response = await defender.http.get("http://defender/rest/tasks/no-such-task?A2A-Version=1.0")
    assert response.status_code == 404, response.text
    assert response.headers["content-type"] == A2A_JSON


async def test_an_unsupported_version_gets_a2a_json(defender: InProcessArena) -> None:
    """VersionNotSupportedError is an A2A 1.0 error: its answer is labeled as 1.0's are."""
    response = await defender.http.get("http://defender/rest/tasks/x", headers={"A2A-Version": "1.1"})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == A2A_JSON


async def test_a_1_0_request_under_a_tenant_gets_a2a_json(defender: InProcessArena) -> None:
    response = await defender.http.get(
        "http://defender/tenant-1/rest/tasks/no-such-task", headers={"A2A-Version": "1.0"}
    )
    assert response.status_code == 404, response.text
    assert response.headers["content-type"] == A2A_JSON


async def test_a_1_0_route_asked_as_0_3_keeps_application_json(defender: InProcessArena) -> None:
    """No header is 0.3: the 1.0 route refuses it (VersionNotSupported) in 0.3's media type."""
    response = await defender.http.get("http://defender/rest/tasks/x")
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"


async def test_a_missing_token_gets_a2a_json_on_1_0(arena: InProcessArena) -> None:
    arena.add_model(mode="echo")
    arena.add_defender(api_tokens=TOKEN)
    for version in ("1.0", "0.3"):
        response = await arena.http.get(
            f"http://defender{PREFIX[version]}/tasks/x", headers=_version_headers(version)
        )
        assert response.status_code == 401, response.text
        assert response.headers["content-type"] == EXPECTED[version]
        assert response.headers["www-authenticate"].startswith("Bearer")


async def test_successes_and_streams_are_unchanged(defender: InProcessArena) -> None:
    for version, message in (("1.0", V10_MESSAGE), ("0.3", V03_MESSAGE)):
        headers = _version_headers(version)
        sent = await defender.http.post(
            f"http://defender{PREFIX[version]}/message:send", json={"message": message}, headers=headers
        )
        assert sent.status_code == 200, sent.text
        assert sent.headers["content-type"] == EXPECTED[version]
        assert "picnic" in json.dumps(sent.json())
        async with defender.http.stream(
            "POST",
            f"http://defender{PREFIX[version]}/message:stream",
            json={"message": message},
            headers=headers,
        ) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert "picnic" in (await stream.aread()).decode()


async def test_jsonrpc_stays_application_json(defender: InProcessArena) -> None:
    """1.0 section 9.1: JSON-RPC requests and responses are application/json, errors included."""
    for method in ("GetTask", "tasks/get", "NoSuchMethod"):
        response = await defender.http.post(
            "http://defender/",
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "x"}},
            headers={"A2A-Version": "1.0"},
        )
        assert response.headers["content-type"] == "application/json", response.headers
        assert "error" in response.json()
    too_large = await defender.http.post(
        "http://defender/", content=b" " * (LIMIT + 1), headers={"A2A-Version": "1.0"}
    )
    assert too_large.status_code == 413 and too_large.headers["content-type"] == "application/json"
