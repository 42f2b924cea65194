"""deploy/.env.example as data: the one list of settings that Compose, the chart and the code share."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from pydantic import SecretStr

from arena_core.settings import ArenaSettings

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


def secret_settings() -> frozenset[str]:
    """The settings that are secrets (typed ``SecretStr``): the Authentication tokens.

    They are documented in deploy/.env.example like every setting, but never reach a service
    through the shared settings (Compose's ``x-arena-settings``, the chart's ConfigMap): Compose
    takes them from the shell or deploy/.env for the services that need them, the chart from its
    auth Secret. ``ARENA_TARGET_TOKEN_<NAME>`` is a family of variables, not one setting.
    """
    found = set()
    for name, field in ArenaSettings.model_fields.items():
        annotation = field.annotation
        # SecretStr or SecretStr | None; not target_tokens (dict[str, SecretStr]).
        if annotation is SecretStr or set(typing.get_args(annotation)) == {SecretStr, type(None)}:
            found.add(f"ARENA_{name.upper()}")
    return frozenset(found)


__all__ = ["ENV_EXAMPLE", "REPO", "example_settings", "secret_settings"]
