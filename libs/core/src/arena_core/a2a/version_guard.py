"""A2A version negotiation on the agents' JSON-RPC and HTTP+JSON endpoints (A2A 1.0 section 3.6).

a2a-sdk 1.3.0 gets three things wrong, and :class:`A2aVersionGuard` corrects them
before the SDK sees the request (the rules: :mod:`arena_core.a2a.protocol_versions`):

* **Unsupported versions.** The SDK compares the major number only, so
  ``A2A-Version: 1.1`` was served as 1.0 and ``0.5`` as 0.3. A version other than
  1.0 and 0.3 (a patch number ignored) now gets VersionNotSupportedError: on
  JSON-RPC ``-32009`` with the request's id and an ErrorInfo
  (``VERSION_NOT_SUPPORTED``) in ``error.data``, on HTTP+JSON 400
  ``FAILED_PRECONDITION`` with the SDK's ``google.rpc.Status`` body; the reason
  names the version asked for and the versions served, and the ErrorInfo's
  metadata repeats them (``requestedVersion``, ``supportedVersions``).
* **A method of the other version.** On the one JSON-RPC endpoint serving both
  versions, a 0.3 method under ``A2A-Version: 1.0`` got -32603 Internal error (the
  SDK's 0.3 adapter maps its own VersionNotSupportedError to -32603, 0.3 having no
  -32009), and a 1.0 method under 0.3 got -32009 though 0.3 is supported. With
  the semantics of the version asked for, neither method exists: both now get
  -32601 Method not found, saying which version the method belongs to and which
  method to call instead (``tasks/get`` → ``GetTask``; ``ListTasks`` has no 0.3
  method).
* **The version as a query parameter.** ``?A2A-Version=1.0`` (1.0 section 3.6.1)
  was ignored; it now counts when no (or an empty) ``A2A-Version`` header is sent,
  the header winning when both are. It is handed on as the header the SDK reads.

Cost: the version comes from the headers and the query string only. A JSON-RPC
body is parsed here only when the answer needs it: the id of a -32009, or the
method of a request that might call the other version's method. A few substring
searches decide the latter: a 1.0 body is parsed only if it holds a backslash (a
JSON escape) or the start of a 0.3 method name (``"message/``, ``"tasks/``,
``"agent/``), a 0.3 body only if it holds a backslash or ``Message``, ``Task`` or
``Card`` (every 1.0 method name holds one); a method cannot be named otherwise.
(:class:`arena_core.a2a.jsonrpc_params_guard.JsonRpcParamsGuard` no longer parses
1.0 bodies at all, so a 1.0 request without escapes is parsed by neither guard.)

Everything else reaches the SDK unchanged: a body that is not JSON or not a
valid request object (the SDK's -32700 / -32600), the agent card (which has its
own rule, :mod:`arena_core.a2a.card_route`), any other path. The guard reads the
JSON-RPC body whole, so it must sit inside ``BodySizeLimit``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import VersionNotSupportedError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, is_rest_path, refuse_or_replay
from arena_core.a2a.jsonrpc_params_guard import valid_envelope
from arena_core.a2a.protocol_versions import (
    SUPPORTED_VERSIONS,
    V03_METHODS,
    RequestedVersion,
    other_version_method_message,
    requested_version,
    version_not_supported_message,
)

JSONRPC_METHOD_NOT_FOUND = -32601
_HEADER = b"a2a-version"


# What a body must hold to name a method of the other version: a JSON escape (a name may be
# spelled with escapes), or, without escapes, the start of a 0.3 name (each is "message/...",
# "tasks/..." or "agent/...", so a body without "/" names none) / a word every 1.0 name holds
# (tests/integration/test_a2a_versions.py calls every method of each version under the other).
# Each is a plain substring search.
_V03_METHOD_STARTS = tuple(sorted({f'"{method.partition("/")[0]}/'.encode() for method in V03_METHODS}))
_V10_METHOD_WORDS = (b"Message", b"Task", b"Card")


def _may_name_other_version_method(body: bytes, requested: RequestedVersion) -> bool:
    if b"\\" in body:
        return True
    if requested.is_v03:
        return any(word in body for word in _V10_METHOD_WORDS)
    return b"/" in body and any(start in body for start in _V03_METHOD_STARTS)


logger = logging.getLogger(__name__)


def version_not_supported(requested: RequestedVersion) -> VersionNotSupportedError:
    """The SDK's VersionNotSupportedError for ``requested``, with the reason and ErrorInfo metadata."""
    return VersionNotSupportedError(
        message=version_not_supported_message(requested),
        data={"requestedVersion": requested.shown, "supportedVersions": ", ".join(SUPPORTED_VERSIONS)},
    )


def jsonrpc_version_answer(body: bytes, requested: RequestedVersion) -> dict[str, Any] | None:
    """The JSON-RPC error a request ``body`` under ``requested`` gets here, or None to let the SDK answer.

    -32009 for a version not served, -32601 for a method of the other version; None for a
    body that is not a valid JSON-RPC request object (the SDK's -32700 / -32600 stand) and
    for every request the SDK handles well.
    """
    if requested.version is not None and not _may_name_other_version_method(body, requested):
        return None  # cannot name a method of the other version: not parsed
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not valid_envelope(request):
        return None
    if requested.version is None:
        return build_error_response(request.get("id"), version_not_supported(requested))
    reason = other_version_method_message(request["method"], requested)
    if reason is None:
        return None
    error = {"code": JSONRPC_METHOD_NOT_FOUND, "message": reason}
    return {"jsonrpc": "2.0", "id": request.get("id"), "error": error}


def _with_version_header(scope: Scope, version: str) -> Scope:
    """``scope`` with ``A2A-Version: version`` as its only version header (what the SDK reads)."""
    headers = [(name, value) for name, value in scope["headers"] if name.lower() != _HEADER]
    headers.append((_HEADER, version.encode("ascii")))
    return {**scope, "headers": headers}


class A2aVersionGuard(RequestGuard):
    """Answers requests naming an A2A version the agents do not serve, or calling a JSON-RPC method
    of the other version, and hands a version sent as a query parameter on as the header (see the
    module doc). Looks at ``POST`` to ``rpc_path`` and at every request under ``rest_prefix``."""

    def __init__(self, app: ASGIApp, *, rpc_path: str, rest_prefix: str) -> None:
        super().__init__(app)
        self.rpc_path = rpc_path
        self.rest_prefix = rest_prefix

    def _rpc(self, scope: Scope) -> bool:
        path: str = scope["path"]
        return path == self.rpc_path and scope["method"] == "POST"

    def applies(self, scope: Scope) -> bool:
        return self._rpc(scope) or is_rest_path(scope["path"], self.rest_prefix)

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        requested = requested_version(scope)
        if requested.source == "query" and requested.version is not None:
            scope = _with_version_header(scope, requested.version)
        if self._rpc(scope):
            await refuse_or_replay(
                self.app, scope, receive, send, lambda body: _jsonrpc_refusal(body, requested)
            )
        elif requested.version is None:
            logger.debug("HTTP+JSON request refused: %s", requested.describe())
            payload = build_rest_error_payload(version_not_supported(requested))
            await JSONResponse(payload, status_code=payload["error"]["code"])(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def _jsonrpc_refusal(body: bytes, requested: RequestedVersion) -> JSONResponse | None:
    answer = jsonrpc_version_answer(body, requested)
    if answer is None:
        return None
    logger.debug("JSON-RPC request refused: %s", answer["error"]["message"])
    return JSONResponse(answer)


__all__ = ["JSONRPC_METHOD_NOT_FOUND", "A2aVersionGuard", "jsonrpc_version_answer", "version_not_supported"]
