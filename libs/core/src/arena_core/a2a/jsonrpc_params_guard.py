"""A2A 0.3 JSON-RPC requests with invalid params get -32602 Invalid params, not -32600 Invalid Request.

JSON-RPC 2.0 (section 5.1) separates the two: -32600 "Invalid Request" is for JSON
that "is not a valid Request object" (the envelope: ``jsonrpc`` exactly ``"2.0"``, a
string ``method``, an ``id`` that is a string, a number or null, ``params`` omitted or
a structured value), -32602 "Invalid params" for "invalid method parameter(s)". The
A2A 0.3 specification (section 8.1, standard JSON-RPC errors) uses the same codes,
and A2A 1.0 maps ``InvalidParamsError`` to -32602 (HTTP+JSON: 400 ``INVALID_ARGUMENT``).

a2a-sdk 1.3.0 answers the 1.0 methods (``SendMessage``...) that way, but its 0.3
compatibility layer (``a2a/compat/v0_3/jsonrpc_adapter.py``) validates the whole 0.3
request with one pydantic model and answers every failure, params included, with
-32600 (and logs a traceback). :class:`JsonRpcParamsGuard` validates 0.3 requests
whose envelope is valid with the SDK's own 0.3 models first, and answers
-32602 when every problem lies in ``params``: ``message`` not an object, ``parts``
not a list, a ``role`` other than ``user``/``agent``, a missing ``messageId``, a
missing or non-object ``params``, and so on. The error names each problem::

    {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602,
     "message": "Invalid params: params.message.parts: Input should be a valid list",
     "data": [{"field": "params.message.parts", "message": "Input should be a valid list"}]}}

It also holds ``message/send`` and ``message/stream`` to one rule of the 0.3 schema
the SDK's models do not enforce: every part names its ``kind`` (``text``, ``file``
or ``data``); the SDK's models default a missing kind to ``text``.

Everything else reaches the SDK unchanged: a body that is not JSON (-32700), an
invalid envelope or a batch (-32600 from the SDK), a 1.0 method (already right), a
valid 0.3 request. Only requests read as A2A 0.3 (no ``A2A-Version``, an empty one,
or 0.3: :func:`arena_core.a2a.protocol_versions.requested_version`) are parsed here;
requests naming 1.0 pass untouched, without a ``json.loads`` (a 0.3 method under
1.0 is answered -32601 by :class:`arena_core.a2a.version_guard.A2aVersionGuard`,
outside this guard). Valid 0.3 requests are validated twice (here and by the
SDK), some tens of microseconds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from pydantic import BaseModel, ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.a2a._asgi import RequestGuard, refuse_or_replay
from arena_core.a2a.protocol_versions import requested_version

JSONRPC_INVALID_PARAMS = -32602
ENVELOPE_MEMBERS = frozenset({"jsonrpc", "method", "params", "id"})
"""The members of a JSON-RPC 2.0 request object; the SDK refuses any other (-32600)."""
PART_KINDS = ("text", "file", "data")
_SEND_METHODS = frozenset({"message/send", "message/stream"})
# The SDK's own 0.3 request models, by method (its table is typed loosely; keep what is a model).
_V03_MODELS: Mapping[str, type[BaseModel]] = {
    method: model
    for method, model in JSONRPC03Adapter.METHOD_TO_MODEL.items()
    if isinstance(model, type) and issubclass(model, BaseModel)
}

logger = logging.getLogger(__name__)

Problem = dict[str, str]
"""One invalid parameter: ``{"field": "params.message.role", "message": "..."}``."""


def valid_envelope(request: object) -> bool:
    """Whether ``request`` is a JSON-RPC 2.0 request object (section 4), as strict as a2a-sdk.

    ``jsonrpc`` exactly ``"2.0"``, a non-empty string ``method``, ``id`` absent, null,
    a string or an integer (no fractions, no booleans), ``params`` absent, an object
    or an array, and no other member.
    """
    if not isinstance(request, dict) or not ENVELOPE_MEMBERS.issuperset(request):
        return False
    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str) or not request["method"]:
        return False
    rid = request.get("id")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, str | int)):
        return False
    return "params" not in request or isinstance(request["params"], dict | list)


def v03_params_problems(request: Mapping[str, Any]) -> list[Problem] | None:
    """The problems of a 0.3 request's ``params``; None when it is no 0.3 method, or has a
    problem outside ``params`` (the SDK's -32600 stands then). An empty list: valid."""
    model = _V03_MODELS.get(request["method"])
    if model is None:
        return None
    problems: list[Problem] = []
    try:
        model.model_validate(request)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            location = error["loc"]
            if not location or location[0] != "params":
                return None
            problems.append({"field": ".".join(str(item) for item in location), "message": error["msg"]})
    if request["method"] in _SEND_METHODS:
        problems += _parts_without_kind(request.get("params"))
    return problems


def invalid_params_response(body: bytes) -> dict[str, Any] | None:
    """The -32602 response ``body`` (a JSON-RPC request) deserves, or None to let the SDK answer."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON (or absurdly nested): the SDK's own parse error stands
    if not valid_envelope(request):
        return None
    problems = v03_params_problems(request)
    if not problems:
        return None
    reasons = "; ".join(f"{p['field']}: {p['message']}" for p in problems)
    error = {"code": JSONRPC_INVALID_PARAMS, "message": f"Invalid params: {reasons}", "data": problems}
    return {"jsonrpc": "2.0", "id": request.get("id"), "error": error}


def _parts_without_kind(params: object) -> list[Problem]:
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return []  # not a list: the SDK's model has said so already
    return [
        {
            "field": f"params.message.parts.{index}.kind",
            "message": f"Field required: a part names its kind ({', '.join(PART_KINDS)})",
        }
        for index, part in enumerate(parts)
        if isinstance(part, dict) and "kind" not in part
    ]


class JsonRpcParamsGuard(RequestGuard):
    """Answers an A2A 0.3 JSON-RPC request whose envelope is valid but whose params are not
    with -32602 Invalid params naming each problem (see the module doc), before the SDK sees it.

    Only ``POST`` to ``rpc_path`` read as A2A 0.3 is looked at. The body is read whole, so
    this guard must sit inside ``BodySizeLimit`` (which bounds it) and, to leave non-text
    bodies to ``TextBodyGuard``'s parse error, inside that too; and inside ``A2aVersionGuard``,
    which answers the 0.3 methods called under another version.
    """

    def __init__(self, app: ASGIApp, *, rpc_path: str) -> None:
        super().__init__(app)
        self.rpc_path = rpc_path

    def applies(self, scope: Scope) -> bool:
        return (
            scope["method"] == "POST" and scope["path"] == self.rpc_path and requested_version(scope).is_v03
        )

    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        await refuse_or_replay(self.app, scope, receive, send, _refusal)


def _refusal(body: bytes) -> JSONResponse | None:
    response = invalid_params_response(body)
    if response is None:
        return None
    logger.debug("0.3 JSON-RPC request refused: %s", response["error"]["message"])
    return JSONResponse(response)


__all__ = [
    "JSONRPC_INVALID_PARAMS",
    "JsonRpcParamsGuard",
    "invalid_params_response",
    "v03_params_problems",
    "valid_envelope",
]
