"""The checks, one module per category; importing this package registers them all (in :data:`CHECKS`)."""

from arena_core.probes.checks import auth, card, input, isolation, leaks, push, resources  # noqa: A004

__all__ = ["auth", "card", "input", "isolation", "leaks", "push", "resources"]
