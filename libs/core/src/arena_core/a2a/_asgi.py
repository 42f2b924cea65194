"""The shape of the ASGI guards in front of the SDK, which paths are HTTP+JSON, and reading a body.

Every guard is a :class:`RequestGuard`: it looks only at the http requests it
``applies`` to, and any other scope (``lifespan`` in particular) goes straight to the
app. The guards that look at a body (:mod:`arena_core.a2a.sdk_guards`,
:mod:`arena_core.a2a.jsonrpc_params_guard`, :mod:`arena_core.a2a.version_guard`,
:mod:`arena_core.a2a.v03_rest_message_guard`) go through :func:`refuse_or_replay`:
the body is read whole, then either answered or handed to the app through a
``receive`` that returns it once and then defers to the server (:func:`replaying`,
shared with ``BodySizeLimit`` in :mod:`arena_core.http_limits`, so ``http.disconnect``
still arrives). They sit inside ``BodySizeLimit``, which bounds what is read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core.http_limits import replaying


class RequestGuard(ABC):
    """An ASGI middleware that handles the http requests it :meth:`applies` to and passes the rest.

    A scope that is not ``http`` reaches the app before anything is looked at: a guard that
    fails the ``lifespan`` scope makes uvicorn give up on the app's lifespan, and the app's
    shutdown hooks never run.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    @abstractmethod
    def applies(self, scope: Scope) -> bool:
        """Whether this http request is one the guard handles (only http scopes are asked)."""

    @abstractmethod
    async def guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle a request the guard applies to: answer it, or hand it on to ``self.app``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.applies(scope):
            await self.guard(scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def refuse_or_replay(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, refusal: Callable[[bytes], Response | None]
) -> None:
    """Read the body whole and send ``refusal(body)``; when that is None, hand the body on to ``app``.

    A client that goes away before sending its whole body gets nothing (there is no one to answer).
    """
    body = await read_body(receive)
    if body is None:
        return
    response = refusal(body)
    if response is None:
        await app(scope, replaying(body, receive), send)
    else:
        await response(scope, receive, send)


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


__all__ = ["RequestGuard", "is_rest_path", "read_body", "refuse_or_replay"]
