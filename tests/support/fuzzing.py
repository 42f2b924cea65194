"""Shared pieces of the fuzz suite (tests/fuzz): budgets, strategies, properties.

Budgets are Hypothesis settings profiles. ``ARENA_FUZZ_PROFILE`` picks one:

* ``ci`` (the default, what ``.ci/run`` runs): a few dozen examples per test,
  derandomized so every run tries the same inputs;
* ``long``: thousands of random examples per test, for a run by hand
  (``ARENA_FUZZ_PROFILE=long uv run pytest -m fuzz --timeout=0``: ``--timeout=0``
  lifts the suite's 180 s limit per test, which a long run exceeds); failures are kept
  in Hypothesis's example database (``.hypothesis/``) and replayed first next time.

The profile is loaded when this module is imported; every fuzz test imports it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Collection
from typing import Any, TypeVar

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILE_VARIABLE = "ARENA_FUZZ_PROFILE"
PROFILES = {"ci": "arena-fuzz-ci", "long": "arena-fuzz-long"}
HANG_GUARD_S = 10.0
"""Longest a single fuzz request may take before the test calls it a hang (no timing assertion)."""

# Hypothesis ships its own "ci" profile (loaded when it sees a CI variable); ours have distinct names.
settings.register_profile(
    PROFILES["ci"],
    max_examples=30,
    deadline=None,  # in-process apps on a loaded 2-core runner: no per-example timing
    derandomize=True,  # the same inputs on every run: a CI failure reproduces locally
    database=None,
    print_blob=True,
    # One app per test serves every example (state accumulates on purpose), so a
    # function-scoped fixture shared across examples is intended here.
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    PROFILES["long"],
    max_examples=2000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def fuzz_profile() -> str:
    """The profile ``ARENA_FUZZ_PROFILE`` names (``ci`` when unset)."""
    choice = os.environ.get(PROFILE_VARIABLE, "ci").strip().lower() or "ci"
    if choice not in PROFILES:
        raise ValueError(f"{PROFILE_VARIABLE}={choice!r}: expected one of {sorted(PROFILES)}")
    return PROFILES[choice]


settings.load_profile(fuzz_profile())

FIXED_SEED = 20260101
"""Schemathesis's seed in the ``ci`` profile (it seeds its own generation besides Hypothesis)."""

T = TypeVar("T")


async def bounded(call: Awaitable[T], what: str, timeout_s: float = HANG_GUARD_S) -> T:
    """Await ``call``; a call still running after ``timeout_s`` fails the test as a hang."""
    try:
        return await asyncio.wait_for(call, timeout_s)
    except TimeoutError:
        raise AssertionError(f"hang: {what} did not answer within {timeout_s} s") from None


# --- strategies -----------------------------------------------------------------------------

V10_HEADERS = {"A2A-Version": "1.0"}
V03_HEADERS: dict[str, str] = {}

V10_METHODS = (
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "CancelTask",
    "ListTasks",
    "SubscribeToTask",
    "GetExtendedAgentCard",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
)
V03_METHODS = (
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/pushNotificationConfig/list",
    "tasks/pushNotificationConfig/delete",
    "agent/getAuthenticatedExtendedCard",
)
STREAMING_METHODS = frozenset(
    {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
)

# Text of every kind (any code point but surrogates, which JSON cannot carry as UTF-8), bounded.
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=64)
big_texts = st.one_of(
    texts,
    st.builds(lambda ch, n: ch * n, st.characters(exclude_categories=("Cs",)), st.integers(1_000, 20_000)),
)
keys = st.one_of(st.sampled_from(("", "id", "kind", "text", "data", "role", "message", "parts")), texts)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=12,
)

# Valid JSON-RPC ids (string or integer), and everything else a client might send.
valid_ids = st.one_of(st.integers(-(2**53), 2**53), texts)
any_ids = st.one_of(valid_ids, json_values)

task_ids = st.one_of(
    st.sampled_from(("", "x", "../..", "%2e%2e", "a:cancel", "tasks", "0" * 300)),
    st.uuids().map(str),
    texts,
)


_MISSING = object()


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(_MISSING), strategy)


def _object(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict whose fields may each be missing (the strategy draws _MISSING)."""
    return st.fixed_dictionaries({name: _maybe(value) for name, value in fields.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not _MISSING}
    )


v10_parts = st.one_of(
    _object(text=big_texts, metadata=json_values, mediaType=texts),
    _object(data=json_values, mediaType=texts),
    _object(url=st.sampled_from(("http://127.0.0.1:9/x", "file:///etc/passwd", "")), filename=texts),
    _object(raw=st.sampled_from(("", "aGVsbG8=", "!!not base64!!")), mediaType=texts),
    st.dictionaries(keys, json_values, max_size=3),
)
v10_messages = _object(
    messageId=st.one_of(texts, json_values),
    role=st.one_of(st.sampled_from(("ROLE_USER", "ROLE_AGENT", "ROLE_UNSPECIFIED", "user", "")), json_values),
    parts=st.one_of(st.lists(v10_parts, max_size=4), json_values),
    contextId=st.one_of(texts, st.uuids().map(str)),
    taskId=task_ids,
    metadata=json_values,
    extensions=st.lists(texts, max_size=2),
    referenceTaskIds=st.lists(texts, max_size=2),
)
v03_parts = st.one_of(
    _object(kind=st.just("text"), text=big_texts, metadata=json_values),
    _object(kind=st.just("data"), data=json_values),
    _object(
        kind=st.just("file"), file=st.one_of(json_values, _object(uri=texts, bytes=texts, mimeType=texts))
    ),
    _object(kind=st.one_of(st.sampled_from(("text", "data", "file")), texts), text=texts),
    st.dictionaries(keys, json_values, max_size=3),
)
v03_messages = _object(
    kind=st.one_of(st.just("message"), texts),
    messageId=st.one_of(texts, json_values),
    role=st.one_of(st.sampled_from(("user", "agent", "")), json_values),
    parts=st.one_of(st.lists(v03_parts, max_size=4), json_values),
    contextId=st.one_of(texts, st.uuids().map(str)),
    taskId=task_ids,
    metadata=json_values,
)
# 0.3's HTTP+JSON binding speaks protobuf JSON: "content" instead of "parts", ROLE_* enums.
v03_rest_messages = _object(
    messageId=st.one_of(texts, json_values),
    role=st.one_of(st.sampled_from(("ROLE_USER", "ROLE_AGENT", "user")), json_values),
    content=st.one_of(st.lists(v10_parts, max_size=4), json_values),
    contextId=st.one_of(texts, st.uuids().map(str)),
    taskId=task_ids,
    metadata=json_values,
)
configurations = _object(
    historyLength=st.one_of(st.integers(-5, 2**40), json_values),
    acceptedOutputModes=st.lists(texts, max_size=2),
    blocking=st.booleans(),
    returnImmediately=st.booleans(),
)


def a2a_params(version: str) -> st.SearchStrategy[Any]:
    """Params of the A2A methods of ``version`` ("1.0" or "0.3"): plausible shapes, hostile values."""
    messages = v10_messages if version == "1.0" else v03_messages
    send = _object(message=messages, configuration=configurations, metadata=json_values)
    by_id = _object(id=task_ids, name=texts, historyLength=st.one_of(st.integers(-5, 2**40), json_values))
    listing = _object(
        contextId=texts,
        status=st.one_of(st.sampled_from(("TASK_STATE_WORKING", "completed")), texts),
        pageSize=st.one_of(st.integers(-5, 2**40), json_values),
        pageToken=texts,
        historyLength=st.integers(-5, 1000),
        includeArtifacts=st.booleans(),
    )
    return st.one_of(send, by_id, listing, json_values)


def rpc_envelopes(version: str) -> st.SearchStrategy[dict[str, Any]]:
    """JSON-RPC request objects with the methods of ``version``, random others, random ids and params."""
    methods = V10_METHODS if version == "1.0" else V03_METHODS
    method = st.one_of(
        st.sampled_from(methods), st.sampled_from(V10_METHODS + V03_METHODS), texts, json_values
    )
    return _object(
        jsonrpc=st.one_of(st.just("2.0"), json_values),
        id=any_ids,
        method=method,
        params=a2a_params(version),
    )


def a2a_requests(version: str) -> st.SearchStrategy[dict[str, Any]]:
    """Well-formed JSON-RPC requests (jsonrpc, integer/string id) to real methods with hostile params."""
    methods = V10_METHODS if version == "1.0" else V03_METHODS
    return st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": valid_ids,
            "method": st.sampled_from(methods),
            "params": a2a_params(version),
        }
    )


raw_bodies = st.one_of(
    st.binary(max_size=256),
    st.text(max_size=128).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from(
        (b"", b"{", b"[", b"null", b"[]", b"[{}]", b"{}", b'{"jsonrpc": "2.0"}', b"\xef\xbb\xbf{}")
    ),
    json_values.map(lambda v: json.dumps(v).encode()),
)

# --- properties ------------------------------------------------------------------------------

JSONRPC_STANDARD_CODES = {-32700, -32600, -32601, -32602, -32603}
A2A_ERROR_CODES = set(range(-32099, -31999))  # the JSON-RPC server-error range A2A uses (-32001...-32009)


def is_valid_id(rid: object) -> bool:
    """A JSON-RPC id the server must echo: a string or an integer (not a boolean)."""
    return isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))


def expected_id(request: object) -> object:
    """The id a JSON-RPC response to ``request`` must carry.

    A request object with a string or integer id gets it back; anything else
    (not an object, no id, a null, float, boolean or structured id) gets ``null``.
    """
    if isinstance(request, dict) and is_valid_id(request.get("id")):
        return request["id"]
    return None


def assert_jsonrpc_response(
    response: httpx.Response, request: object, *, raw: bytes | None = None
) -> dict[str, Any]:
    """Check that ``response`` is a well-formed JSON-RPC 2.0 response to ``request``; return its body.

    ``request`` is the parsed request (None when the body was not JSON). Checks:
    HTTP 200 (JSON-RPC errors travel in the body), an ``application/json`` object
    with ``jsonrpc: "2.0"`` and exactly one of ``result`` and ``error``, the id of
    :func:`expected_id`, and an error code that is one of JSON-RPC's own or in
    the server-error range A2A uses.
    """
    assert response.status_code == 200, (
        f"HTTP {response.status_code} for {raw or request!r}: {response.text[:500]}"
    )
    assert response.headers["content-type"].startswith("application/json"), response.headers["content-type"]
    body = response.json()
    assert isinstance(body, dict), body
    assert body.get("jsonrpc") == "2.0", body
    assert ("result" in body) != ("error" in body), body
    if "error" in body:
        error = body["error"]
        assert isinstance(error, dict) and isinstance(error.get("message"), str), body
        code = error.get("code")
        assert isinstance(code, int), body
        assert code in JSONRPC_STANDARD_CODES | A2A_ERROR_CODES, f"non-spec error code {code}: {body}"
    # a2a-sdk answers notifications (requests without an id) with id null instead of no response
    # at all (JSON-RPC 2.0 section 4.1): harmless, and the null id is what is checked for them.
    rid = expected_id(request)
    assert "id" in body and body["id"] == rid and type(body["id"]) is type(rid), (
        f"id {body.get('id')!r} != {rid!r}: {body}"
    )
    return body


def assert_json_error(response: httpx.Response, media_types: Collection[str]) -> dict[str, Any]:
    """Check a 4xx HTTP+JSON error: a google.rpc.Status body ``{"error": {"code", "status", "message"}}``
    labeled with one of ``media_types`` (1.0: ``application/a2a+json``; 0.3: ``application/json``)."""
    assert 400 <= response.status_code < 500, f"HTTP {response.status_code}: {response.text[:500]}"
    assert response.headers["content-type"] in media_types, (
        response.status_code,
        response.headers.get("content-type"),
        response.text[:200],
    )
    body = response.json()
    error = body["error"]
    assert error["code"] == response.status_code, body
    assert isinstance(error["message"], str) and isinstance(error["status"], str), body
    return body


def text_message(version: str, text: str) -> dict[str, Any]:
    """A plain user text message for ``version``."""
    if version == "1.0":
        return {"messageId": "fuzz-after", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {
        "kind": "message",
        "messageId": "fuzz-after",
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }


__all__ = [
    "HANG_GUARD_S",
    "PROFILES",
    "PROFILE_VARIABLE",
    "STREAMING_METHODS",
    "V03_HEADERS",
    "V10_HEADERS",
    "a2a_params",
    "a2a_requests",
    "any_ids",
    "assert_json_error",
    "assert_jsonrpc_response",
    "bounded",
    "expected_id",
    "fuzz_profile",
    "is_valid_id",
    "json_values",
    "raw_bodies",
    "rpc_envelopes",
    "task_ids",
    "text_message",
    "texts",
]
