"""Model access: any-llm behind retries, token usage, and a tool-calling loop."""

from arena_core.llm.agent_loop import (
    AgentLoop,
    AgentRun,
    StopReason,
    Tool,
    ToolHandler,
    ToolResult,
    current_tool_call_id,
)
from arena_core.llm.chat_model import (
    ChatModel,
    ChatReply,
    Message,
    RetryPolicy,
    ToolCall,
    call_with_retries,
)
from arena_core.llm.usage import TokenUsage

__all__ = [
    "AgentLoop",
    "AgentRun",
    "ChatModel",
    "ChatReply",
    "Message",
    "RetryPolicy",
    "StopReason",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolHandler",
    "ToolResult",
    "call_with_retries",
    "current_tool_call_id",
]
