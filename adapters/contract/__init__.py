"""The narrow contract between the engine and every adapter: protocols and value types only (the code that every
layer runs on is adapters.runtime)."""

from adapters.contract.cancel import (
    CancelCause,
    CancelSignal,
    Disposed,
    Hook,
    Parent,
    User,
    stopped,
)
from adapters.contract.llm import (
    Finish,
    GenerateOptions,
    LlmAdapter,
    LlmError,
    LlmFailure,
    Message,
    StreamChunk,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

__all__ = [
    "CancelCause",
    "CancelSignal",
    "Disposed",
    "Finish",
    "GenerateOptions",
    "Hook",
    "LlmAdapter",
    "LlmError",
    "LlmFailure",
    "Message",
    "Parent",
    "StreamChunk",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
    "User",
    "stopped",
]
