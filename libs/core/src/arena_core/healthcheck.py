"""A container healthcheck: ``python -m arena_core.healthcheck URL`` exits 0 on a 2xx answer.

deploy/compose.yaml runs it as ``["CMD", "python", "-m", "arena_core.healthcheck", URL]``: an
exec form whose arguments hold no spaces, because podman 4.3's Docker API (Debian bookworm's)
joins a healthcheck's arguments and splits them again on spaces, which breaks a
``python -c "..."`` one-liner. Standard library only (the images have no curl), and quick to
import: it runs every few seconds in every container.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request

TIMEOUT_S = 4.0
USAGE = "usage: python -m arena_core.healthcheck http://127.0.0.1:PORT/PATH"


def check(url: str, timeout_s: float = TIMEOUT_S) -> str | None:
    """Why ``url`` is not healthy (``None`` when it answered 2xx)."""
    if not url.startswith(("http://", "https://")):
        return f"not an http(s) URL: {url!r}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:  # noqa: S310 (scheme checked above)
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        return f"{url} answered {exc.code}: {exc.read(300).decode('utf-8', 'replace').strip()}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"{url} unreachable: {getattr(exc, 'reason', exc)}"
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
