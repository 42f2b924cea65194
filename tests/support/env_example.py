"""deploy/.env.example as data: the one list of settings that Compose, the chart and the code share."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV_EXAMPLE = REPO / "deploy" / ".env.example"


def example_settings() -> dict[str, str]:
    """Every ``ARENA_X=value`` line of deploy/.env.example, in order (value as written)."""
    found: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(ARENA_[A-Z0-9_]+)=(.*)$", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


__all__ = ["ENV_EXAMPLE", "REPO", "example_settings"]
