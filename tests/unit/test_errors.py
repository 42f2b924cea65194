"""The error hierarchy: every kind maps to one exit code and one retry decision; kinds never collide."""

from __future__ import annotations

import pytest

# Imported for their side effect: they define ArenaError subclasses outside errors.py,
# and exit_code_for_kind must know those kinds too.
import arena.local_services
from arena_core.errors import (
    AgentCardError,
    ArenaError,
    AttackerBusyError,
    AttackerInactiveError,
    ConfigError,
    InvalidInputError,
    ModelError,
    ModelRequestError,
    ModelUnavailableError,
    StateCorruptError,
    StateUnavailableError,
    TargetAuthError,
    TargetError,
    TargetNotAllowedError,
    TargetProtocolError,
    TargetRateLimitedError,
    TargetUnavailableError,
    TargetUnreachableError,
    ToolInputError,
    TraceUnavailableError,
    UnknownJudgeError,
    UnknownStrategyError,
    exit_code_for_kind,
    is_retryable_kind,
)
from arena_orchestrator.errors import (
    BuiltinAttackerMissingError,
    CampaignTooLargeError,
    NotFoundError,
    TooManyCampaignsError,
)

KIND_EXIT_CODES: list[tuple[type[ArenaError], str, int]] = [
    (ArenaError, "arena_error", 1),
    (ConfigError, "config_error", 2),
    (InvalidInputError, "invalid_input", 2),
    (UnknownStrategyError, "unknown_strategy", 2),
    (UnknownJudgeError, "unknown_judge", 2),
    (TargetError, "target_error", 3),
    (TargetUnreachableError, "target_unreachable", 3),
    (TargetUnavailableError, "target_unavailable", 3),
    (AgentCardError, "agent_card_invalid", 3),
    (TargetProtocolError, "target_protocol_error", 3),
    (TargetAuthError, "target_unauthorized", 3),
    (AttackerBusyError, "attacker_busy", 3),
    (TargetRateLimitedError, "rate_limited", 3),
    (TargetNotAllowedError, "target_not_allowed", 2),
    (AttackerInactiveError, "attacker_inactive", 4),
    (ModelError, "model_error", 4),
    (ModelUnavailableError, "model_unavailable", 4),
    (ModelRequestError, "model_request_error", 4),
    (ToolInputError, "tool_input_error", 1),
    (arena.local_services.ServiceStartError, "service_start_failed", 5),
    (StateUnavailableError, "state_unavailable", 6),
    (StateCorruptError, "state_corrupt", 6),
    (TraceUnavailableError, "trace_unavailable", 6),
]


def _all_subclasses(cls: type[ArenaError]) -> list[type[ArenaError]]:
    found: list[type[ArenaError]] = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found


@pytest.mark.parametrize(
    ("error_class", "kind", "exit_code"),
    KIND_EXIT_CODES,
    ids=[row[1] for row in KIND_EXIT_CODES],
)
def test_exit_code_for_each_kind(error_class: type[ArenaError], kind: str, exit_code: int) -> None:
    assert error_class.kind == kind
    assert error_class.exit_code == exit_code
    assert exit_code_for_kind(kind) == exit_code


@pytest.mark.parametrize("kind", ["no_such_kind", "", "CONFIG_ERROR", None])
def test_unknown_kind_exits_with_one(kind: str | None) -> None:
    assert exit_code_for_kind(kind) == 1


def test_table_covers_every_class_of_the_errors_module() -> None:
    # Only errors.py's own classes: other modules loaded by the session may add more.
    own = {cls for cls in _all_subclasses(ArenaError) if cls.__module__ == "arena_core.errors"}
    assert own | {ArenaError} <= {row[0] for row in KIND_EXIT_CODES}
    assert {row[0] for row in KIND_EXIT_CODES} <= {ArenaError, *_all_subclasses(ArenaError)}


def test_every_subclass_has_a_distinct_kind() -> None:
    classes: list[type[ArenaError]] = [ArenaError, *_all_subclasses(ArenaError)]
    kinds = [cls.kind for cls in classes]
    assert len(kinds) == len(set(kinds)), kinds


@pytest.mark.parametrize(
    ("error_class", "http_status"),
    [
        (ArenaError, 500),
        (ConfigError, 500),
        (InvalidInputError, 400),
        (UnknownStrategyError, 400),
        (TargetUnreachableError, 502),
        (ModelRequestError, 502),
        (AttackerBusyError, 503),
    ],
)
def test_http_status_is_inherited(error_class: type[ArenaError], http_status: int) -> None:
    assert error_class.http_status == http_status


def test_message_is_kept_and_is_the_string() -> None:
    error = TargetUnreachableError("target http://x is not reachable")
    assert error.message == "target http://x is not reachable"
    assert str(error) == "target http://x is not reachable"
    assert isinstance(error, TargetError)


# --- retryable ------------------------------------------------------------------------------------

RETRYABLE: list[tuple[type[ArenaError], bool]] = [
    (ArenaError, False),
    (ConfigError, False),
    (InvalidInputError, False),
    (UnknownStrategyError, False),
    (UnknownJudgeError, False),
    # A target's card, protocol or credentials stay wrong until someone fixes them...
    (TargetError, False),
    (AgentCardError, False),
    (TargetProtocolError, False),
    (TargetAuthError, False),
    # ...while nothing answering, a busy, unavailable or rate-limited peer may pass.
    (TargetUnreachableError, True),
    (TargetUnavailableError, True),
    (AttackerBusyError, True),
    (TargetRateLimitedError, True),
    (TargetNotAllowedError, False),
    (AttackerInactiveError, False),
    (ModelError, False),
    (ModelUnavailableError, True),
    (ModelRequestError, False),
    (StateUnavailableError, True),
    (StateCorruptError, False),
    (TraceUnavailableError, True),
    (ToolInputError, False),
    (arena.local_services.ServiceStartError, False),
    (NotFoundError, False),
    (TooManyCampaignsError, False),
    (CampaignTooLargeError, False),
    (BuiltinAttackerMissingError, False),
]


@pytest.mark.parametrize(("error_class", "retryable"), RETRYABLE, ids=[row[0].kind for row in RETRYABLE])
def test_retryable_for_each_class(error_class: type[ArenaError], retryable: bool) -> None:
    assert error_class.retryable is retryable
    # A result that crossed a process boundary carries only the kind: it is judged the same.
    assert is_retryable_kind(error_class.kind) is retryable


def test_the_retryable_kinds_are_exactly_the_transient_failures() -> None:
    # What the campaign worker retried before retryable existed, and a trace that was late: keep it so.
    assert {cls.kind for cls, retryable in RETRYABLE if retryable} == {
        "target_unreachable",
        "target_unavailable",
        "model_unavailable",
        "state_unavailable",
        "rate_limited",
        "attacker_busy",
        "trace_unavailable",
    }


@pytest.mark.parametrize("kind", ["no_such_kind", "", "TARGET_UNREACHABLE", None])
def test_an_unknown_kind_is_not_retryable(kind: str | None) -> None:
    assert is_retryable_kind(kind) is False


def test_retryable_table_covers_every_class_of_the_errors_module() -> None:
    own = {cls for cls in _all_subclasses(ArenaError) if cls.__module__ == "arena_core.errors"}
    assert own | {ArenaError} <= {row[0] for row in RETRYABLE}
