"""The ``arena-defender`` console script and ``arena serve defender``: both run the defender A2A agent
through :data:`RUNNER` (see :mod:`arena_core.service_runner`).
"""

from __future__ import annotations

from collections.abc import Sequence

from arena_core.service_ports import DEFENDER_PORT
from arena_core.service_runner import Serve, ServiceRunner


def _load_server() -> Serve:
    # Imported only when serving starts. The server imports a2a-sdk, which must come after telemetry.
    from arena_defender.server import serve_defender

    return serve_defender


RUNNER = ServiceRunner("defender", DEFENDER_PORT, _load_server)
"""Runs the defender A2A agent in the foreground."""


def main(argv: Sequence[str] | None = None) -> None:
    """``arena-defender``, the image's entry point (see :meth:`ServiceRunner.main`)."""
    RUNNER.main(argv)


__all__ = ["RUNNER", "main"]
