"""The dashboard: one static page that follows campaigns through the REST API.

The page (``dashboard_static/``) is plain HTML, CSS and JavaScript with no
external resources: it works offline and under a strict Content-Security-Policy
(same-origin scripts and styles only, no inline code). It reads ``/v1/...``
with ``fetch`` and shows every text it receives as text, never as markup, since
attacker and defender messages are attacker-controlled.

Routes (mounted by the app next to the API):

* ``GET /`` and ``GET /dashboard/``: redirect to ``/dashboard``;
* ``GET /dashboard``: the page (campaign list, ``#/campaigns/{id}``, ``#/matches/{id}``,
  ``#/leaderboard`` with ``?category=...&since=...``);
* ``GET /dashboard/static/{dashboard.js,dashboard.css,favicon.svg}``: its assets.

Redirects are relative, so the dashboard also works behind a path prefix.

With ``ARENA_API_TOKENS`` set, these routes stay public (they hold no data) and
the page asks for a token when the API answers 401. The token is kept in the
tab's ``sessionStorage`` only (never ``localStorage``, a cookie or the URL) and
sent as ``Authorization: Bearer`` on the page's ``fetch`` calls. Report links
cannot carry that header, so with a token the page fetches a report itself and
saves it through a ``blob:`` URL and ``<a download>``. The policy needs no
``blob:`` source for that: a download is a navigation, and CSP fetch directives
(``default-src``, ``connect-src``...) do not govern navigations.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

STATIC_PACKAGE = "arena_orchestrator"
STATIC_DIR = "dashboard_static"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Same-origin scripts, styles, images and fetches only; nothing inline, nothing framed."""

SECURITY_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

ASSETS: dict[str, str] = {
    "dashboard.js": "text/javascript; charset=utf-8",
    "dashboard.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
"""The files served under ``/dashboard/static/`` and their media types."""


@dataclass(frozen=True, slots=True)
class _StaticFile:
    body: bytes
    media_type: str
    etag: str

    @classmethod
    def load(cls, name: str, media_type: str) -> _StaticFile:
        body = files(STATIC_PACKAGE).joinpath(STATIC_DIR).joinpath(name).read_bytes()
        return cls(body=body, media_type=media_type, etag=f'"{hashlib.sha256(body).hexdigest()[:32]}"')

    def response(self, request: Request) -> Response:
        headers = {**SECURITY_HEADERS, "ETag": self.etag, "Cache-Control": "no-cache"}
        if self.etag in _etags(request.headers.get("if-none-match", "")):
            return Response(status_code=304, headers=headers)
        return Response(self.body, media_type=self.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    return {item.strip().removeprefix("W/") for item in header.split(",")}


def _endpoint(static: _StaticFile) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return static.response(request)

    return endpoint


async def _to_dashboard(request: Request) -> Response:
    # Relative, so that a reverse proxy's path prefix is kept: "/" -> "dashboard",
    # "/dashboard/" -> "../dashboard".
    target = "../dashboard" if request.url.path.endswith("/dashboard/") else "dashboard"
    return RedirectResponse(target, status_code=307, headers={"Cache-Control": "no-cache"})


def dashboard_routes() -> list[BaseRoute]:
    """The dashboard's routes; the files are read once, here."""
    page = _StaticFile.load("dashboard.html", "text/html; charset=utf-8")
    assets = {name: _StaticFile.load(name, media_type) for name, media_type in ASSETS.items()}

    routes: list[BaseRoute] = [
        Route("/", _to_dashboard, methods=["GET", "HEAD"], include_in_schema=False),
        Route("/dashboard/", _to_dashboard, methods=["GET", "HEAD"], include_in_schema=False),
        Route("/dashboard", _endpoint(page), methods=["GET", "HEAD"], include_in_schema=False),
    ]
    routes.extend(
        Route(
            f"/dashboard/static/{name}", _endpoint(static), methods=["GET", "HEAD"], include_in_schema=False
        )
        for name, static in assets.items()
    )
    # Browsers ask for /favicon.ico on any page (JSON from the API too); answer with ours.
    routes.append(
        Route(
            "/favicon.ico", _endpoint(assets["favicon.svg"]), methods=["GET", "HEAD"], include_in_schema=False
        )
    )
    return routes


__all__ = ["CONTENT_SECURITY_POLICY", "dashboard_routes"]
