"""The ``arena-attacker`` console script and ``arena serve attacker``: both run the attacker A2A agent
through :data:`RUNNER` (see :mod:`arena_core.service_runner`).
"""

from __future__ import annotations

from collections.abc import Sequence

from arena_core.service_ports import ATTACKER_PORT
from arena_core.service_runner import Serve, ServiceRunner


def _load_server() -> Serve:
    # Imported only when serving starts. The server imports a2a-sdk, which must come after telemetry.
    from arena_attacker.server import serve_attacker

    return serve_attacker


RUNNER = ServiceRunner("attacker", ATTACKER_PORT, _load_server)
"""Runs the attacker A2A agent in the foreground."""


def main(argv: Sequence[str] | None = None) -> None:
    """``arena-attacker``, the image's entry point (see :meth:`ServiceRunner.main`)."""
    RUNNER.main(argv)


__all__ = ["RUNNER", "main"]
