"""A2A 1.0 agent cards as JSON, and an app that serves one, for tests that fake a target."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def card_json(
    interface_url: str,
    *,
    binding: str = "JSONRPC",
    version: str = "1.0",
    name: str = "Test Agent",
    description: str = "A card made by a test.",
) -> dict[str, Any]:
    """A valid 1.0 card whose one interface is ``interface_url`` (``binding``, ``version``)."""
    return {
        "name": name,
        "description": description,
        "version": "1.0.0",
        "supportedInterfaces": [
            {"url": interface_url, "protocolBinding": binding, "protocolVersion": version}
        ],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "chat", "name": "chat", "description": "chat", "tags": ["chat"]}],
    }


def card_app(card: dict[str, Any]) -> Starlette:
    """Serves ``card`` at /.well-known/agent-card.json (more routes can be appended)."""

    async def serve(_: Request) -> JSONResponse:
        return JSONResponse(card)

    return Starlette(routes=[Route("/.well-known/agent-card.json", serve)])


__all__ = ["card_app", "card_json"]
