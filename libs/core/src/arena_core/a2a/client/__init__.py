"""The arena's A2A client: one connect path for targets and attackers alike.

One concern per module (a2a-python's ``client`` package is the model):

* :mod:`.connect`: :func:`connect`, the one way to reach an agent (card, interface choice,
  credentials, egress and rate-limit guards, size limits, the a2a-sdk client);
* :mod:`.card_resolver`: the card's URL, fetch and validation, the interface to use;
* :mod:`.credentials`: a token sent only to its agent's origins, and redacted from its replies;
* :mod:`.target_http_client`: the paced, size-capped, credentialed httpx client of one agent;
* :mod:`.response_limits`: every response read to a bound, decoded under it;
* :mod:`.error_translation`: httpx and a2a-sdk failures into :mod:`arena_core.errors` classes;
* :mod:`.cancel`: abandoning a task, quietly;
* :mod:`.target`, :mod:`.target_reply`, :mod:`.conversation`: talking to a red-team target;
* :mod:`.attacker`: having an attacker agent play a match.
"""

from arena_core.a2a.client.attacker import play_remote_match
from arena_core.a2a.client.card_resolver import card_url_for, choose_interface, fetch_agent_card, parse_card
from arena_core.a2a.client.connect import AgentRole, Connection, connect
from arena_core.a2a.client.conversation import TargetConversation
from arena_core.a2a.client.credentials import TargetCredentials
from arena_core.a2a.client.error_translation import connection_failure_in
from arena_core.a2a.client.target import A2ATarget, connect_target
from arena_core.a2a.client.target_reply import TargetReply

__all__ = [
    "A2ATarget",
    "AgentRole",
    "Connection",
    "TargetConversation",
    "TargetCredentials",
    "TargetReply",
    "card_url_for",
    "choose_interface",
    "connect",
    "connect_target",
    "connection_failure_in",
    "fetch_agent_card",
    "parse_card",
    "play_remote_match",
]
