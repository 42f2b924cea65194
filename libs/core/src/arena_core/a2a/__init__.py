"""A2A helpers: serving an arena agent, and talking to any A2A target."""

from arena_core.a2a.agent_app import (
    REST_PREFIX,
    CardSpec,
    ReadinessCheck,
    build_agent_app,
    build_agent_card,
)
from arena_core.a2a.client import (
    A2ATarget,
    TargetConversation,
    TargetReply,
    card_url_for,
    choose_interface,
    connect_target,
    fetch_agent_card,
    parse_card,
)

__all__ = [
    "REST_PREFIX",
    "A2ATarget",
    "CardSpec",
    "ReadinessCheck",
    "TargetConversation",
    "TargetReply",
    "build_agent_app",
    "build_agent_card",
    "card_url_for",
    "choose_interface",
    "connect_target",
    "fetch_agent_card",
    "parse_card",
]
