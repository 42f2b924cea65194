"""Route httpx requests to in-process ASGI apps by host name.

Lets one test wire an attacker app, a defender app and a model app together
through real HTTP semantics (httpx over ASGI) without sockets.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from starlette.types import ASGIApp


class HostRouter(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request to the app of its host."""

    def __init__(self, apps: Mapping[str, ASGIApp]) -> None:
        self._transports = {host: httpx.ASGITransport(app=app) for host, app in apps.items()}

    def add(self, host: str, app: ASGIApp) -> None:
        self._transports[host] = httpx.ASGITransport(app=app)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        transport = self._transports.get(request.url.host)
        if transport is None:
            raise httpx.ConnectError(f"no in-process app for host {request.url.host}", request=request)
        return await transport.handle_async_request(request)


def client_for(router: HostRouter, *, timeout_s: float = 30.0) -> httpx.AsyncClient:
    """An httpx client that reaches every app registered on ``router``."""
    return httpx.AsyncClient(transport=router, timeout=timeout_s)
