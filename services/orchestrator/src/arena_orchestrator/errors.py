"""The orchestrator's own errors (all :class:`~arena_core.errors.ArenaError`)."""

from __future__ import annotations

from arena_core.errors import ArenaError, InvalidInputError


class NotFoundError(ArenaError):
    """No campaign or match has that id (or it expired)."""

    kind = "not_found"
    http_status = 404
    exit_code = 2


class TooManyCampaignsError(ArenaError):
    """The orchestrator already holds as many unfinished campaigns as it may
    (``ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS``): HTTP 429 with ``Retry-After``."""

    kind = "too_many_campaigns"
    http_status = 429
    exit_code = 3

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class CampaignTooLargeError(InvalidInputError):
    """The campaign expands to more matches than this orchestrator accepts."""

    kind = "campaign_too_large"


class BuiltinAttackerMissingError(InvalidInputError):
    """The spec uses the built-in attacker, but this orchestrator has none configured."""

    kind = "builtin_attacker_missing"


__all__ = ["BuiltinAttackerMissingError", "CampaignTooLargeError", "NotFoundError", "TooManyCampaignsError"]
