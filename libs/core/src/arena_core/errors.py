"""The one exception hierarchy of A2A Arena and where each error maps to.

Every error the arena raises on purpose derives from :class:`ArenaError`. Each
subclass carries the three codes a boundary needs, so that the CLI (exit code),
HTTP handlers (status) and A2A task failures (a ``kind`` string shown to the
client) never invent their own mapping, and whether another try may succeed
(``retryable``), so that no caller keeps its own list of transient failures.
How long to wait before that try is :class:`arena_core.retry.Backoff`.
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
    retryable: ClassVar[bool] = False
    """True when the failure is transient: nothing is wrong with the request, and the same
    request may succeed later (nothing answered, the peer was busy, unavailable or rate
    limited). Results that crossed a process boundary are judged by :func:`is_retryable_kind`."""

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
    """The target agent could not be used for a match.

    Not retryable as such (a card, a protocol or credentials stay wrong until someone fixes
    them); the subclasses for a target that did not answer, or not yet, are.
    """

    kind = "target_error"
    http_status = 502
    exit_code = 3


class TargetUnreachableError(TargetError):
    """Nothing answered at the target address (DNS, refused, timeout)."""

    kind = "target_unreachable"
    retryable = True


class TargetUnavailableError(TargetError):
    """The target answered that it cannot answer now: a dependency of its own failed (its model,
    its state store). Worth another try later; never a defence."""

    kind = "target_unavailable"
    retryable = True


class AttackerBusyError(TargetError):
    """The attacker agent refused a match because it already plays as many as it may at once
    (``ARENA_ATTACKER_MAX_ACTIVE_MATCHES``). Nothing was played; worth another try later, never
    a defence."""

    kind = "attacker_busy"
    retryable = True
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


class TargetRateLimitedError(TargetError):
    """A request to a target would break its rate limit.

    The arena's own limit (``ARENA_TARGET_RATE_LIMIT``) had no slot before the
    request's deadline, or the target answered 429 Too Many Requests and the
    wait it asked for did not fit (or the one retry got 429 again). Nothing is
    wrong with the match: worth another try later, never a defence.
    """

    kind = "rate_limited"
    retryable = True


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
    retryable = True


class ModelRequestError(ModelError):
    """The model rejected the request (bad id, missing key, bad parameters)."""

    kind = "model_request_error"


class StateUnavailableError(ArenaError):
    """Redis (the shared state) could not be reached or failed a command."""

    kind = "state_unavailable"
    http_status = 503
    exit_code = 6
    retryable = True


class StateCorruptError(ArenaError):
    """Saved state does not read (written by another version, or altered): never replaced
    silently, since what it recorded would vanish."""

    kind = "state_corrupt"
    http_status = 500
    exit_code = 6


class TraceUnavailableError(ArenaError):
    """The match's trace (the evidence of a defender's actions) could not be read: the backend
    is unreachable, or the trace or the defender's spans did not arrive in time. Never a defence."""

    kind = "trace_unavailable"
    http_status = 503
    exit_code = 6
    retryable = True


class ToolInputError(ArenaError):
    """Raised by a tool handler when the model's arguments are unusable.

    The message goes back to the model verbatim.
    """

    kind = "tool_input_error"


def _all_subclasses(cls: type[ArenaError]) -> list[type[ArenaError]]:
    found: list[type[ArenaError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found


def _class_of_kind(kind: str | None) -> type[ArenaError] | None:
    """The class that defines ``kind`` (a parent before the children inheriting its kind)."""
    classes: list[type[ArenaError]] = [ArenaError, *_all_subclasses(ArenaError)]
    return next((cls for cls in classes if cls.kind == kind), None)


def exit_code_for_kind(kind: str | None) -> int:
    """The CLI exit code of an error known only by its ``kind`` string.

    Results that crossed a process boundary carry the kind, not the class.
    Unknown kinds map to 1.
    """
    cls = _class_of_kind(kind)
    return 1 if cls is None else cls.exit_code


def is_retryable_kind(kind: str | None) -> bool:
    """``retryable`` of the error known only by its ``kind`` string (a result's ``error_kind``).

    Unknown kinds are not retryable: only a failure known to be transient is worth another try.
    """
    cls = _class_of_kind(kind)
    return cls is not None and cls.retryable


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
    "StateCorruptError",
    "StateUnavailableError",
    "TargetAuthError",
    "TargetError",
    "TargetNotAllowedError",
    "TargetProtocolError",
    "TargetRateLimitedError",
    "TargetUnavailableError",
    "TargetUnreachableError",
    "ToolInputError",
    "TraceUnavailableError",
    "UnknownJudgeError",
    "UnknownStrategyError",
    "exit_code_for_kind",
    "is_retryable_kind",
]
