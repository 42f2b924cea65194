"""conversation_key: a conversation is its caller's and its contextId's, never the contextId's alone."""

from __future__ import annotations

from a2a.auth.user import UnauthenticatedUser
from a2a.server.context import ServerCallContext
from a2a.server.routes.common import StarletteUser

from arena_core.caller_scope import conversation_key
from arena_core.http_auth import Access, ApiCaller


def _as(name: str) -> ServerCallContext:
    # What a2a-sdk's call-context builder makes of the caller BearerAuth put in the request.
    return ServerCallContext(user=StarletteUser(ApiCaller(name, Access.FULL)))


def test_anonymous_and_authenticated_callers_get_keys_of_their_own() -> None:
    assert conversation_key("ctx-1", None) == "a:ctx-1"
    assert conversation_key("ctx-1", ServerCallContext(user=UnauthenticatedUser())) == "a:ctx-1"
    assert conversation_key("ctx-1", _as("alice")) == "u:alice/ctx-1"
    keys = {conversation_key("ctx-1", context) for context in (None, _as("alice"), _as("bob"))}
    assert len(keys) == 3


def test_no_caller_and_context_can_forge_another_pairs_key() -> None:
    # The caller part is escaped, so the first "/" always ends it.
    assert conversation_key("c", _as("a/b")) == "u:a%2Fb/c"
    assert conversation_key("b/c", _as("a")) == "u:a/b/c"
    assert conversation_key("c", _as("a/b")) != conversation_key("b/c", _as("a"))
    assert conversation_key("c", _as("a%2Fb")) == "u:a%252Fb/c"
    # An anonymous contextId that looks like a caller's key stays anonymous.
    assert conversation_key("u:alice/ctx-1", None) == "a:u:alice/ctx-1"
