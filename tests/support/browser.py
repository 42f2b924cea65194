"""Headless Debian chromium for page tests, driven by the playwright package.

Playwright's own browser downloads are never used (no ``playwright install``):
the browser is Debian's ``chromium`` package, which .ci/run installs. Without
it the browser tests are skipped with :data:`SKIP_REASON`.

Every page opened through :func:`open_page` records what a careful user would
notice in the developer tools: console errors and warnings, uncaught page
errors, requests that failed and HTTP error responses.

Waits on a page's timers never sleep: a test installs Playwright's fake clock
(``page.clock.install()``, before the page loads; time still flows naturally)
and moves it on with :func:`requests_while_time_passes`, which fires every timer
due at once.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, Request, Response, sync_playwright

SKIP_REASON = "Debian chromium is not installed (apt-get install chromium); .ci/run installs it"

CHROMIUM_CANDIDATES = ("chromium", "/usr/bin/chromium")

CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    # Containers often have a small /dev/shm; chromium then crashes under load.
    "--disable-dev-shm-usage",
)


def find_chromium() -> str | None:
    """Path of Debian's chromium, or None."""
    for candidate in CHROMIUM_CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
        if os.path.isabs(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


@contextmanager
def launch_chromium(executable: str | None = None) -> Iterator[Browser]:
    """Start headless chromium (Debian's, never a downloaded one); close it on exit."""
    binary = executable or find_chromium()
    if binary is None:
        raise RuntimeError(SKIP_REASON)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=binary,
            args=list(CHROMIUM_ARGS),
            headless=True,
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageLog:
    """What went wrong on a page, as seen by the browser."""

    console: list[str] = field(default_factory=list)
    """Console messages of type error or warning: ``"<type>: <text> (<url>:<line>)"``."""
    page_errors: list[str] = field(default_factory=list)
    """Uncaught exceptions and unhandled rejections in the page."""
    failed_requests: list[str] = field(default_factory=list)
    """Requests that got no response at all (connection refused, aborted, blocked...)."""
    http_errors: list[str] = field(default_factory=list)
    """Responses with status 400 or more: ``"<status> <method> <url>"``."""
    dialogs: list[str] = field(default_factory=list)
    """alert/confirm/prompt dialogs the page opened (dismissed at once)."""
    requests: list[str] = field(default_factory=list)
    """Every request the page made: ``"<method> <url>"``."""

    def problems(self) -> list[str]:
        """Everything above that a clean page must not produce."""
        return [
            *self.console,
            *(f"pageerror: {e}" for e in self.page_errors),
            *(f"requestfailed: {r}" for r in self.failed_requests),
            *(f"http error: {r}" for r in self.http_errors),
            *(f"dialog: {d}" for d in self.dialogs),
        ]


def _console(log: PageLog, message: ConsoleMessage) -> None:
    if message.type in ("error", "warning"):
        where = message.location
        log.console.append(
            f"{message.type}: {message.text} ({where.get('url', '')}:{where.get('lineNumber', '')})"
        )


def _failed(log: PageLog, request: Request) -> None:
    log.failed_requests.append(f"{request.method} {request.url}: {request.failure or 'failed'}")


def _response(log: PageLog, response: Response) -> None:
    if response.status >= 400:
        log.http_errors.append(f"{response.status} {response.request.method} {response.url}")


def _dialog(log: PageLog, dialog: Dialog) -> None:
    log.dialogs.append(f"{dialog.type}: {dialog.message}")
    dialog.dismiss()


@contextmanager
def open_page(browser: Browser, *, width: int = 1400, height: int = 900) -> Iterator[tuple[Page, PageLog]]:
    """A fresh page (own context: no shared cache or storage) and its :class:`PageLog`."""
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    page = context.new_page()
    log = PageLog()
    page.on("console", lambda message: _console(log, message))
    page.on("pageerror", lambda error: log.page_errors.append(f"{error.name}: {error.message}"))
    page.on("requestfailed", lambda request: _failed(log, request))
    page.on("response", lambda response: _response(log, response))
    page.on("request", lambda request: log.requests.append(f"{request.method} {request.url}"))
    page.on("dialog", lambda dialog: _dialog(log, dialog))
    page.set_default_timeout(10_000)
    try:
        yield page, log
    finally:
        context.close()


def requests_while_time_passes(page: Page, log: PageLog, ms: int) -> list[str]:
    """The requests (``"<method> <url>"``) the page starts while its clock jumps ``ms`` ahead.

    Every timer due within ``ms`` fires before this returns (``page.clock.run_for``), and a
    timer's ``fetch`` starts its request at once, so "nothing was requested" is known without
    waiting in real time. The page's clock must have been installed before it loaded.
    """
    before = len(log.requests)
    page.clock.run_for(ms)
    page.evaluate("0")  # a round trip: the request events of those timers have reached the log
    return log.requests[before:]


__all__ = [
    "CHROMIUM_ARGS",
    "SKIP_REASON",
    "PageLog",
    "find_chromium",
    "launch_chromium",
    "open_page",
    "requests_while_time_passes",
]
