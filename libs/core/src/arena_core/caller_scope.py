"""Whose a conversation is: the key of per-conversation state, made from the caller and the contextId.

A contextId is chosen by the client (or echoed from an earlier answer), so it proves
nothing: another caller who learns it must not continue the conversation, nor read
its history. The defender keeps what it holds per conversation (the history,
:mod:`arena_core.conversation_store`; the support desk's back office,
:mod:`arena_core.shop_store`) under :func:`conversation_key`:

* ``a:<contextId>`` for an anonymous caller (no tokens configured: everyone is the
  same caller, as before callers existed);
* ``u:<caller>/<contextId>`` for an authenticated one, ``<caller>`` being the name
  :class:`arena_core.http_auth.BearerAuth` put in the request (the a2a-sdk
  ``User.user_name``, the same name the task stores scope tasks by), with ``%`` and
  ``/`` %-escaped so the first ``/`` always ends it.

So caller B sending a message with caller A's contextId starts a fresh conversation
under B's key and never sees A's history; A's own next message still finds it.
"""

from __future__ import annotations

from a2a.server.context import ServerCallContext

ANONYMOUS_PREFIX = "a:"
CALLER_PREFIX = "u:"


def _escape(name: str) -> str:
    return name.replace("%", "%25").replace("/", "%2F")


def conversation_key(context_id: str, call_context: ServerCallContext | None) -> str:
    """The key of ``context_id``'s state for the caller of ``call_context`` (see the module doc).

    No call context, or an unauthenticated user, is the anonymous caller.
    """
    user = call_context.user if call_context is not None else None
    if user is None or not user.is_authenticated:
        return f"{ANONYMOUS_PREFIX}{context_id}"
    return f"{CALLER_PREFIX}{_escape(user.user_name)}/{context_id}"


__all__ = ["ANONYMOUS_PREFIX", "CALLER_PREFIX", "conversation_key"]
