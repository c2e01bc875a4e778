"""The LLM adapter contract (SPEC §2): options in, a stream of facts out."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol

from adapters.contract.cancel import CancelSignal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """A complete tool call; `arguments` is the model's raw JSON text, never parsed in transit."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool; `parameters` is a JSON Schema as JSON text."""

    name: str
    description: str
    parameters: str = '{"type": "object", "properties": {}}'


@dataclass(frozen=True)
class GenerateOptions:
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class LlmFailure:
    """A fact about what went wrong; whether to retry is policy and lives elsewhere."""

    message: str
    code: FailureCode
    status: int | None = None
    provider_retry_after_ms: int | None = None
    request_id: str | None = None
    prompt_tokens: int | None = None  # CONTEXT_WINDOW_EXCEEDED: the prompt's size, when the provider says it
    context_tokens: int | None = None  # ... and the window it had to fit in (prompt and reply)


class LlmError(Exception):
    """Raised from `stream()` for transport and protocol failures; carries the fact."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(f"{failure.code}: {failure.message}")
        self.failure = failure


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of tool call `index`; ids and names arrive once, arguments in raw pieces."""

    index: int
    arguments: str = ""
    call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Finish:
    """The last chunk of every stream; `failure` set when the provider reported an error in-stream."""

    reason: str
    failure: LlmFailure | None = field(default=None)


StreamChunk = TextDelta | ToolCallDelta | Usage | Finish


class LlmAdapter(Protocol):
    """One call is exactly one provider attempt; no retries inside."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        """An async generator: callers `aclose()` it to release the transport early."""
        ...


class FailureCode(StrEnum):
    """The canonical failure codes: consumers route on these, never on provider text. A StrEnum, so the journal
    holds the plain string and a code read back from it compares equal."""

    RATE_LIMITED = "RATE_LIMITED"
    SERVER_ERROR = "SERVER_ERROR"
    TIMEOUT = "TIMEOUT"
    TRANSPORT = "TRANSPORT"
    EMPTY_RESPONSE = "EMPTY_RESPONSE"
    AUTH = "AUTH"
    QUOTA = "QUOTA"
    INVALID_REQUEST = "INVALID_REQUEST"
    CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
    PROTOCOL = "PROTOCOL"
    ABORTED = "ABORTED"
    TOO_MANY_STEPS = "TOO_MANY_STEPS"  # the engine's: the model kept calling tools without answering
    INTERNAL = "INTERNAL"  # the engine's: a bug in Parley failed the turn


RATE_LIMITED = FailureCode.RATE_LIMITED
SERVER_ERROR = FailureCode.SERVER_ERROR
TIMEOUT = FailureCode.TIMEOUT
TRANSPORT = FailureCode.TRANSPORT
EMPTY_RESPONSE = FailureCode.EMPTY_RESPONSE
AUTH = FailureCode.AUTH
QUOTA = FailureCode.QUOTA
INVALID_REQUEST = FailureCode.INVALID_REQUEST
CONTEXT_WINDOW_EXCEEDED = FailureCode.CONTEXT_WINDOW_EXCEEDED
PROTOCOL = FailureCode.PROTOCOL
ABORTED = FailureCode.ABORTED
