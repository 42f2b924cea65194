"""The ``arena-orchestrator`` console script and ``arena serve orchestrator``: both run the
orchestrator (campaigns API, workers and dashboard) through :data:`RUNNER`
(see :mod:`arena_core.service_runner`).
"""

from __future__ import annotations

from collections.abc import Sequence

from arena_core.service_ports import ORCHESTRATOR_PORT
from arena_core.service_runner import Serve, ServiceRunner


def _load_server() -> Serve:
    # Imported only when serving starts. The server imports a2a-sdk, which must come after telemetry.
    from arena_orchestrator.server import serve_orchestrator

    return serve_orchestrator


RUNNER = ServiceRunner("orchestrator", ORCHESTRATOR_PORT, _load_server)
"""Runs the orchestrator in the foreground."""


def main(argv: Sequence[str] | None = None) -> None:
    """``arena-orchestrator``, the image's entry point (see :meth:`ServiceRunner.main`)."""
    RUNNER.main(argv)


__all__ = ["RUNNER", "main"]
