"""The one exception hierarchy of A2A Arena and where each error maps to.

Every error the arena raises on purpose derives from :class:`ArenaError`. Each
subclass carries the three codes a boundary needs, so that the CLI (exit code),
HTTP handlers (status) and A2A task failures (a ``kind`` string shown to the
client) never invent their own mapping.
"""

from __future__ import annotations

from typing import ClassVar


class ArenaError(Exception):
    """Base of every deliberate arena error.

    ``str(error)`` is a complete, user-facing sentence saying what was wrong.
    """

    kind: ClassVar[str] = "arena_error"
    http_status: ClassVar[int] = 500
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(ArenaError):
    """A setting or command-line option is invalid."""

    kind = "config_error"
    http_status = 500
    exit_code = 2


class InvalidInputError(ArenaError):
    """Input that crossed a process boundary failed validation."""

    kind = "invalid_input"
    http_status = 400
    exit_code = 2


class UnknownStrategyError(InvalidInputError):
    """A match asked for a strategy that does not exist."""

    kind = "unknown_strategy"


class UnknownJudgeError(InvalidInputError):
    """A match asked for a judge that does not exist."""

    kind = "unknown_judge"


class TargetError(ArenaError):
    """The target agent could not be used for a match."""

    kind = "target_error"
    http_status = 502
    exit_code = 3


class TargetUnreachableError(TargetError):
    """Nothing answered at the target address (DNS, refused, timeout)."""

    kind = "target_unreachable"


class TargetUnavailableError(TargetError):
    """The target answered that it cannot answer now: a dependency of its own failed (its model,
    its state store). Worth another try later; never a defence."""

    kind = "target_unavailable"


class AttackerBusyError(TargetError):
    """The attacker agent refused a match because it already plays as many as it may at once
    (``ARENA_ATTACKER_MAX_ACTIVE_MATCHES``). Nothing was played; worth another try later, never
    a defence."""

    kind = "attacker_busy"
    http_status = 503


class AgentCardError(TargetError):
    """The target has no agent card, or the card is not a valid A2A card."""

    kind = "agent_card_invalid"


class TargetProtocolError(TargetError):
    """The target answered, but not as an A2A agent should."""

    kind = "target_protocol_error"


class TargetAuthError(TargetError):
    """The target refused the attacker's credentials, or wants some (HTTP 401/403)."""

    kind = "target_unauthorized"


class TargetNotAllowedError(ArenaError):
    """The arena refused to connect to a host: not on ARENA_TARGET_ALLOWLIST, or in a blocked range.

    Raised before any connection is opened. Not a :class:`TargetError`: nothing
    failed that a retry could fix, the request itself is forbidden.
    """

    kind = "target_not_allowed"
    http_status = 403
    exit_code = 2


class AttackerInactiveError(ArenaError):
    """The attacker never sent a message to the target (e.g. a model that cannot call tools)."""

    kind = "attacker_inactive"
    http_status = 500
    exit_code = 4


class ModelError(ArenaError):
    """A language model call failed after its retries."""

    kind = "model_error"
    http_status = 502
    exit_code = 4


class ModelUnavailableError(ModelError):
    """The model server could not be reached or kept failing with 5xx/429."""

    kind = "model_unavailable"


class ModelRequestError(ModelError):
    """The model rejected the request (bad id, missing key, bad parameters)."""

    kind = "model_request_error"


def _all_subclasses(cls: type[ArenaError]) -> list[type[ArenaError]]:
    found: list[type[ArenaError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found


def exit_code_for_kind(kind: str | None) -> int:
    """The CLI exit code of an error known only by its ``kind`` string.

    Results that crossed a process boundary carry the kind, not the class.
    Unknown kinds map to 1.
    """
    classes: list[type[ArenaError]] = [ArenaError, *_all_subclasses(ArenaError)]
    for cls in classes:
        if cls.kind == kind:
            return cls.exit_code
    return 1


__all__ = [
    "AgentCardError",
    "ArenaError",
    "AttackerBusyError",
    "AttackerInactiveError",
    "ConfigError",
    "InvalidInputError",
    "ModelError",
    "ModelRequestError",
    "ModelUnavailableError",
    "TargetAuthError",
    "TargetError",
    "TargetNotAllowedError",
    "TargetProtocolError",
    "TargetUnavailableError",
    "TargetUnreachableError",
    "UnknownJudgeError",
    "UnknownStrategyError",
    "exit_code_for_kind",
]
