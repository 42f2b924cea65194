"""Readiness of a model dependency, for ``/readyz``.

Only a local OpenAI-compatible server (the embedded model, or any configured
base URL) is probed, with a short GET of ``{base}/models``. Hosted providers
are not probed: that would spend quota and leak liveness traffic; their
failures surface per call instead.
"""

from __future__ import annotations

import time

import httpx

from arena_core.a2a.agent_app import ReadinessCheck
from arena_core.a2a.egress_guard import shared_tls_context
from arena_core.settings import ModelConfig

_CACHE_S = 2.0


def model_readiness(config: ModelConfig, *, timeout_s: float = 2.0) -> ReadinessCheck:
    """A readiness check for ``config``; results are cached for two seconds."""
    base_url = config.base_url
    last: list[tuple[float, str | None]] = []

    async def check() -> str | None:
        if base_url is None:
            return None
        now = time.monotonic()
        if last and now - last[0][0] < _CACHE_S:
            return last[0][1]
        problem: str | None
        try:
            async with httpx.AsyncClient(timeout=timeout_s, verify=shared_tls_context()) as client:
                response = await client.get(f"{base_url.rstrip('/')}/models")
            problem = (
                None
                if response.status_code < 500
                else f"model server at {base_url} answered HTTP {response.status_code}"
            )
        except httpx.HTTPError as exc:
            problem = f"model server at {base_url} is not reachable ({type(exc).__name__})"
        last[:] = [(now, problem)]
        return problem

    return check


__all__ = ["model_readiness"]
