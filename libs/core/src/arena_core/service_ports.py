"""The services' default ports, in one place.

The console scripts (``arena-<name>``), ``arena serve <name>`` and each service's ``server.py``
read them from here; compose.yaml, the Helm chart and the Dockerfiles repeat them as configuration.
"""

from __future__ import annotations

from typing import Final

ORCHESTRATOR_PORT: Final = 8080
"""The orchestrator: campaigns API, workers and dashboard."""
DEFENDER_PORT: Final = 8081
"""The defender A2A agent (blue team)."""
ATTACKER_PORT: Final = 8082
"""The attacker A2A agent (red team)."""
MODEL_PORT: Final = 8090
"""The embedded OpenAI-compatible model server."""

__all__ = ["ATTACKER_PORT", "DEFENDER_PORT", "MODEL_PORT", "ORCHESTRATOR_PORT"]
