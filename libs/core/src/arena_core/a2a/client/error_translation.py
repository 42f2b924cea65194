"""What went wrong talking to an A2A agent, dug out of httpx's and the a2a-sdk's wrapping.

The libraries wrap failures in their own errors, often several layers deep (an egress refusal
inside an ``httpx.ConnectError`` inside an ``A2AClientError``, or inside an exception group).
The functions here find the failure that decides the arena's answer and raise it as an
:mod:`arena_core.errors` class, so that a refusal is never taken for an unreachable agent (and
retried), and a connection that broke is never taken for an agent that misspoke:

* an egress refusal -> :class:`~arena_core.errors.TargetNotAllowedError` (:func:`raise_not_allowed_in`);
* a response the client stopped reading (too large, unknown coding) ->
  :class:`~arena_core.errors.TargetProtocolError` (:func:`raise_refusal_in`);
* a connection refused, reset or cut -> :class:`~arena_core.errors.TargetUnreachableError`
  (:func:`connection_failure_in`, :func:`raise_broken_connection_in`);
* a 401 or 403 -> :class:`~arena_core.errors.TargetAuthError` (:func:`status_in_chain`, :func:`auth_failure`).

While credentials are in use a translated transport or SDK error is chained to nothing
(:func:`chained_cause`): the original can quote them, and a chained traceback reaches logs and
spans unredacted. An egress refusal keeps its cause: it comes from the arena's own guard.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from arena_core.a2a.client.credentials import TargetCredentials, redact
from arena_core.a2a.client.response_limits import ResponseRefusedError, refused_response_in
from arena_core.a2a.egress_guard import not_allowed_in
from arena_core.errors import (
    TargetAuthError,
    TargetNotAllowedError,
    TargetProtocolError,
    TargetUnreachableError,
)
from arena_core.exception_chain import find_in_chain

CREDENTIALS_HINT = (
    "name an ARENA_TARGET_TOKEN_* variable of the attacker in the match's target_token_env "
    "(credentials.bearer_token_env in a campaign)"
)
_NOT_CONNECTION_FAILURES = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


def auth_failure(url: str, status: int, *, sent: bool, what: str) -> TargetAuthError:
    """The error for a 401/403 from the target at ``url`` to ``what``; ``sent``: credentials were."""
    reason = "Unauthorized" if status == 401 else "Forbidden"
    if sent:
        problem = "it rejected the credentials sent (check the token's value and rights)"
    elif status == 401:
        problem = f"it needs credentials; {CREDENTIALS_HINT}"
    else:
        problem = f"it refuses requests without credentials; {CREDENTIALS_HINT}"
    return TargetAuthError(f"target {url} answered {status} {reason} to {what}: {problem}")


def status_in_chain(exc: BaseException) -> int | None:
    """The HTTP status of the ``httpx.HTTPStatusError`` behind ``exc`` (a few links deep), or None."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code
        seen = seen.__cause__ or seen.__context__
    return None


def connection_failure_in(exc: BaseException) -> httpx.TransportError | None:
    """The httpx failure of the connection itself behind ``exc`` (however a library wrapped
    it), or None.

    Refused, reset, timed out, or closed by the other side before a complete answer (what a
    killed replica or a cut network looks like): the target's A2A is not at fault, and another
    try may well succeed. A URL scheme httpx cannot speak, or a request it would not send, is
    not such a failure.
    """
    failure = find_in_chain(exc, httpx.TransportError)
    if failure is None or isinstance(failure, _NOT_CONNECTION_FAILURES):
        return None
    return failure


def chained_cause(exc: BaseException, credentials: TargetCredentials | None) -> BaseException | None:
    """What to chain a translated error to: nothing while credentials are in use.

    The original error can quote them (a target echoing its token in an error), and a chained
    traceback reaches logs and spans (``exception.stacktrace``) unredacted.
    """
    return None if credentials is not None else exc


def raise_not_allowed_in(exc: BaseException) -> None:
    """Raise the egress guard's refusal behind ``exc``, if there is one (never retried)."""
    refused = not_allowed_in(exc)
    if refused is not None:
        raise TargetNotAllowedError(refused.message) from exc


def _as_said(refused: ResponseRefusedError) -> str:
    return refused.message


def raise_refusal_in(
    exc: BaseException, *, describe: Callable[[ResponseRefusedError], str] = _as_said
) -> None:
    """Raise the egress refusal, or the refused response (as ``describe`` words it), behind ``exc``."""
    raise_not_allowed_in(exc)
    refused = refused_response_in(exc)
    if refused is not None:
        # Alone: the wrapping says nothing more, and a transport failure in the chain would
        # make it look worth retrying.
        raise TargetProtocolError(describe(refused)) from None


def raise_broken_connection_in(
    exc: BaseException, *, url: str, credentials: TargetCredentials | None
) -> None:
    """Raise TargetUnreachableError when a broken connection to ``url`` lies behind ``exc``.

    Decided here, from the whole chain, because with credentials in use the chain is cut
    off the error raised (:func:`chained_cause`): nobody after this point can tell a connection
    that broke (retryable) from a target that misspoke. The message names the failure's
    type and text, redacted, never the request.
    """
    broken = connection_failure_in(exc)
    if broken is None:
        return
    detail = f"{type(broken).__name__}: {broken}" if str(broken) else type(broken).__name__
    raise TargetUnreachableError(
        redact(f"target {url} is not reachable: the connection failed ({detail})", credentials)
    ) from chained_cause(exc, credentials)


__all__ = [
    "CREDENTIALS_HINT",
    "auth_failure",
    "chained_cause",
    "connection_failure_in",
    "raise_broken_connection_in",
    "raise_not_allowed_in",
    "raise_refusal_in",
    "status_in_chain",
]
