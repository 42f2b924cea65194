"""The ``arena-model`` console script and ``arena serve model``: both run the embedded
OpenAI-compatible model server through :data:`RUNNER` (see :mod:`arena_core.service_runner`).

``arena serve model`` passes its engine flags (``--engine``, ``--gguf``, ...) to ``RUNNER.run``
as overrides of the ``ARENA_MODEL_*`` settings, which the console script reads from the environment.
"""

from __future__ import annotations

from collections.abc import Sequence

from arena_core.service_ports import MODEL_PORT
from arena_core.service_runner import Serve, ServiceRunner


def _load_server() -> Serve:
    # Imported only when serving starts. After telemetry, like every service's server.
    from arena_model.server import serve_model_with_settings

    return serve_model_with_settings


RUNNER = ServiceRunner("model", MODEL_PORT, _load_server)
"""Runs the embedded OpenAI-compatible model server in the foreground."""


def main(argv: Sequence[str] | None = None) -> None:
    """``arena-model``, the image's entry point (see :meth:`ServiceRunner.main`)."""
    RUNNER.main(argv)


__all__ = ["RUNNER", "main"]
