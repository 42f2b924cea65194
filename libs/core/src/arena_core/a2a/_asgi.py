"""Helpers of the ASGI guards in front of the SDK: which paths are HTTP+JSON, and reading a body.

The guards that look at a body (:mod:`arena_core.a2a.sdk_guards`,
:mod:`arena_core.a2a.jsonrpc_params_guard`, :mod:`arena_core.a2a.version_guard`,
:mod:`arena_core.a2a.v03_rest_message_guard`) read it whole, then give the app a
``receive`` that returns it once and then defers to the server (:func:`replaying`, shared
with ``BodySizeLimit`` in :mod:`arena_core.http_limits`, so
``http.disconnect`` still arrives). They sit inside ``BodySizeLimit``, which bounds
what is read.
"""

from __future__ import annotations

from starlette.types import Receive

from arena_core.http_limits import replaying


def is_rest_path(path: str, rest_prefix: str) -> bool:
    """Whether ``path`` is one of the HTTP+JSON routes under ``rest_prefix`` (e.g. ``/rest``).

    The SDK serves the 1.0 routes under ``/{tenant}`` too: ``/<tenant>/rest/...``.
    """
    prefix = f"{rest_prefix}/"
    tenant_path = "/" + path.lstrip("/").partition("/")[2]
    return path.startswith(prefix) or tenant_path.startswith(prefix)


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None when the client went away before sending it all."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


__all__ = ["is_rest_path", "read_body", "replaying"]
