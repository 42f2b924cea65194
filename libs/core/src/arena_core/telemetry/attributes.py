"""Span and metric attribute names: the one constants module.

The registry with descriptions and types is ``observability/attributes.yaml``;
a test keeps the two in step. GenAI names follow the OpenTelemetry GenAI
semantic conventions; ``arena.*`` names are ours.
"""

from __future__ import annotations

# --- OpenTelemetry GenAI semantic conventions -------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_TEMPERATURE = "gen_ai.request.temperature"
GEN_AI_REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_TOKEN_TYPE = "gen_ai.token.type"  # noqa: S105 - an attribute name
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"

# GenAI operation names.
OPERATION_CHAT = "chat"
OPERATION_INVOKE_AGENT = "invoke_agent"
OPERATION_EXECUTE_TOOL = "execute_tool"

# --- A2A Arena ---------------------------------------------------------------------------
ARENA_CAMPAIGN_ID = "arena.campaign.id"
ARENA_CAMPAIGN_MATCHES = "arena.campaign.matches"
ARENA_MATCH_ID = "arena.match.id"
ARENA_TURN = "arena.turn"
ARENA_STRATEGY = "arena.strategy"
ARENA_JUDGE = "arena.judge"
ARENA_VERDICT = "arena.verdict"
ARENA_OUTCOME = "arena.outcome"
ARENA_ATTACKER = "arena.attacker"
ARENA_DEFENDER = "arena.defender"
ARENA_OBJECTIVE = "arena.objective"
ARENA_TARGET_URL = "arena.target.url"
ARENA_PROFILE = "arena.defender.profile"
ARENA_GUARD = "arena.guard"
ARENA_ERROR_KIND = "arena.error.kind"
ARENA_ATTEMPT = "arena.attempt"

# --- Metrics -----------------------------------------------------------------------------
METRIC_MATCHES = "arena.matches"
METRIC_ATTACK_SUCCESSES = "arena.attack.successes"
METRIC_TURN_DURATION = "arena.turn.duration"
METRIC_QUEUE_DEPTH = "arena.queue.depth"
METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"  # noqa: S105 - a metric name
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"

__all__ = [name for name in dir() if name.isupper()]
