"""A container healthcheck: ``python -m arena_core.healthcheck URL`` exits 0 on a 2xx answer.

deploy/compose.yaml runs it as ``["CMD", "python", "-m", "arena_core.healthcheck", URL]``: an
exec form whose arguments hold no spaces, because podman 4.3's Docker API (Debian bookworm's)
joins a healthcheck's arguments and splits them again on spaces, which breaks a
``python -c "..."`` one-liner. Standard library only (the images have no curl), and quick to
import: it runs every few seconds in every container.
"""

from __future__ import annotations

import http.client
import sys
import urllib.error
import urllib.request
from typing import Any

TIMEOUT_S = 4.0
USAGE = "usage: python -m arena_core.healthcheck http://127.0.0.1:PORT/PATH"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer of its own (unhealthy), never followed elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# No proxy: the container's HTTP(S)_PROXY must not carry a check of 127.0.0.1 elsewhere.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def check(url: str, timeout_s: float = TIMEOUT_S) -> str | None:
    """Why ``url`` is not healthy (``None`` when it answered 2xx)."""
    if not url.startswith(("http://", "https://")):
        return f"not an http(s) URL: {url!r}"
    try:
        with _OPENER.open(url, timeout=timeout_s) as answer:
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        return f"{url} answered {exc.code}: {exc.read(300).decode('utf-8', 'replace').strip()}"
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
        return f"{url} unreachable: {getattr(exc, 'reason', exc)!s}"
    return None if 200 <= status < 300 else f"{url} answered {status}"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write(USAGE + "\n")
        return 1  # Docker reserves exit code 2
    problem = check(args[0])
    if problem is not None:
        sys.stderr.write(problem + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
