"""The A2A protocol versions the agents serve, how a request names one, and each version's JSON-RPC methods.

A2A 1.0 section 3.6: a version is ``Major.Minor``; a patch number "MUST not be
considered" when versions are negotiated. Section 3.6.2: an agent MUST process a
request with the semantics of the version it names and MUST answer
VersionNotSupportedError for a version it does not support; a request naming no
version is A2A 0.3. Section 3.6.1: the version travels in the ``A2A-Version``
header or, as a request parameter, in the ``A2A-Version`` query parameter.

The agents serve exactly 1.0 and 0.3 (:data:`SUPPORTED_VERSIONS`). A request's
version (:func:`requested_version`) is the ``A2A-Version`` header when it is
present and not empty, else the ``A2A-Version`` query parameter (the name compared
case-insensitively, like the header's), else 0.3. ``1.0``, ``1.0.0``, ``1.0.7`` are 1.0;
``0.3`` and ``0.3.0`` are 0.3; ``1.1``, ``2.0``, ``0.2``, ``1`` or ``v1.0`` are not
served. (a2a-sdk 1.3.0 compares the major number only: it serves ``1.1`` as 1.0
and ``0.5`` as 0.3.)

The method tables name each 0.3 JSON-RPC method's 1.0 counterpart
(:data:`V03_TO_V10_METHODS`), so that a request calling a method of the other
version is told which method to call (:func:`other_version_method_message`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl

from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, VERSION_HEADER
from starlette.types import Scope

SUPPORTED_VERSIONS = (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
"""The ``Major.Minor`` versions the agents serve, newest first."""

V03_TO_V10_METHODS: Mapping[str, str] = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}
"""Every A2A 0.3 JSON-RPC method and the A2A 1.0 method doing the same."""

V03_METHODS = frozenset(JSONRPC03Adapter.METHOD_TO_MODEL)
"""The 0.3 JSON-RPC methods a2a-sdk serves (those of :data:`V03_TO_V10_METHODS`)."""
V10_METHODS = frozenset(JsonRpcDispatcher.METHOD_TO_MODEL)
"""The 1.0 JSON-RPC methods a2a-sdk serves (the values of :data:`V03_TO_V10_METHODS`, and ``ListTasks``)."""
V10_TO_V03_METHODS: Mapping[str, str | None] = {
    **dict.fromkeys(V10_METHODS),
    **{v10: v03 for v03, v10 in V03_TO_V10_METHODS.items()},
}
"""Every 1.0 JSON-RPC method and its 0.3 counterpart; None when 0.3 has none (``ListTasks``)."""

VersionSource = Literal["header", "query", "none"]

_HEADER = VERSION_HEADER.lower().encode("ascii")
_QUERY_NAME = VERSION_HEADER.lower()
# Major.Minor with an optional patch number; ASCII digits only (str.isdigit would take "²").
_VERSION = re.compile(r"([0-9]{1,9})\.([0-9]{1,9})(?:\.[0-9]{1,9})?")
_SHOWN_CHARS = 40
_CACHED_BYTES = 16


@dataclass(frozen=True, slots=True)
class RequestedVersion:
    """The A2A version a request names: ``text`` as sent, from ``source``, and ``version``, the
    supported version it is ("1.0" or "0.3"), or None when the agents do not serve it."""

    text: str
    source: VersionSource
    version: str | None

    @property
    def is_v03(self) -> bool:
        """Whether the request is read as A2A 0.3 (no version, an empty one, or 0.3)."""
        return self.version == PROTOCOL_VERSION_0_3

    @property
    def shown(self) -> str:
        """``text`` as an answer may repeat it: at most 40 characters of it."""
        return self.text if len(self.text) <= _SHOWN_CHARS else self.text[:_SHOWN_CHARS] + "..."

    def describe(self) -> str:
        """How the request named its version, for error messages: ``A2A-Version: 1.1``."""
        if self.source == "header":
            return f"A2A-Version: {self.shown}"
        if self.source == "query":
            return f"?A2A-Version={self.shown}"
        return "no A2A-Version, which means 0.3"


def supported_version(text: str) -> str | None:
    """The supported version ``text`` names ("1.0" or "0.3", a patch number ignored), else None."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        return None
    version = f"{int(match[1])}.{int(match[2])}"
    return version if version in SUPPORTED_VERSIONS else None


def requested_version(scope: Scope) -> RequestedVersion:
    """The version an http ``scope`` names: its ``A2A-Version`` header (the first, when it is
    repeated, as a2a-sdk reads it) unless missing or empty, else its ``A2A-Version`` query
    parameter (likewise), else none, which is 0.3."""
    for name, value in scope["headers"]:
        if name.lower() == _HEADER:
            if value.strip():
                return _from_header(value)
            break
    query: bytes = scope.get("query_string", b"")
    if query and _QUERY_NAME.encode("ascii") in query.lower():
        for name, text in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if name.lower() == _QUERY_NAME and text.strip():
                return RequestedVersion(text.strip(), "query", supported_version(text))
    return _NONE


_NONE = RequestedVersion("", "none", PROTOCOL_VERSION_0_3)


def _from_header(value: bytes) -> RequestedVersion:
    # Every request reads its version, and clients send a handful of values: short ones are cached.
    if len(value) <= _CACHED_BYTES:
        return _cached_from_header(value)
    text = value.decode("latin-1").strip()
    return RequestedVersion(text, "header", supported_version(text))


@functools.lru_cache(maxsize=256)
def _cached_from_header(value: bytes) -> RequestedVersion:
    text = value.decode("latin-1").strip()
    return RequestedVersion(text, "header", supported_version(text))


def version_not_supported_message(requested: RequestedVersion) -> str:
    """The reason given with VersionNotSupportedError: what was asked, and what is served."""
    return (
        f"A2A version not supported: the request names {requested.describe()}; this agent serves "
        "A2A 1.0 (A2A-Version: 1.0) and A2A 0.3 (A2A-Version: 0.3, or no A2A-Version). "
        "Versions are Major.Minor; a patch number is ignored."
    )


def other_version_method_message(method: str, requested: RequestedVersion) -> str | None:
    """Why ``method`` is not found in the version ``requested`` names though it is a method of
    the other version, naming the method to call; None when that is not the case."""
    if requested.version == PROTOCOL_VERSION_1_0 and method in V03_METHODS:
        return (
            f"Method not found: {method!r} is an A2A 0.3 method, and the request names "
            f"{requested.describe()}; in A2A 1.0 call {V03_TO_V10_METHODS[method]!r} "
            "(or send A2A-Version: 0.3 to use the 0.3 method)"
        )
    if requested.version == PROTOCOL_VERSION_0_3 and method in V10_METHODS:
        v03 = V10_TO_V03_METHODS[method]
        instead = f"or call the 0.3 method {v03!r}" if v03 else "A2A 0.3 has no such method"
        return (
            f"Method not found: {method!r} is an A2A 1.0 method, and the request names "
            f"{requested.describe()}; send A2A-Version: 1.0 to call it ({instead})"
        )
    return None


__all__ = [
    "SUPPORTED_VERSIONS",
    "V03_METHODS",
    "V03_TO_V10_METHODS",
    "V10_METHODS",
    "V10_TO_V03_METHODS",
    "RequestedVersion",
    "VersionSource",
    "other_version_method_message",
    "requested_version",
    "supported_version",
    "version_not_supported_message",
]
