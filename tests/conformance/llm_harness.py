"""What an LLM adapter must offer to be put through the shared conformance suite."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from adapters.contract import LlmAdapter

# The cases a harness may be able to provoke from its adapter.
TEXT = "text"  # a normal streamed answer, `text` split into several deltas
TOOL = "tool"  # one tool call whose raw JSON `arguments` arrive in fragments
PROVIDER_ERROR = "provider_error"  # the provider reports an error inside the stream
TRANSPORT_ERROR = "transport_error"  # the call fails below the protocol (refused, reset, bad status)
EMPTY = "empty"  # a clean finish with no content at all
STALL = "stall"  # the provider stops sending mid-stream and keeps the connection open
HANG = "hang"  # some text, then nothing until the caller cancels
OVERFLOW = "overflow"  # the request does not fit the context window

ALL_CASES = (TEXT, TOOL, PROVIDER_ERROR, TRANSPORT_ERROR, EMPTY, STALL, HANG, OVERFLOW)

TOOL_ARGUMENTS = '{"city":  "Zürich" , "days": [1,2],"note":"a \\"quoted\\" word"}'


@dataclass(frozen=True)
class Case:
    kind: str
    text: str = "The quick brown fox jumps over the lazy dog."
    tool_arguments: str = TOOL_ARGUMENTS


class LlmHarness(Protocol):
    """Arranges one provider behaviour per case and observes the provider side."""

    name: str

    def supports(self, kind: str) -> bool: ...

    def arrange(self, case: Case) -> LlmAdapter:
        """Make the next call of the returned adapter behave as `case` says."""
        ...

    def attempts(self) -> int:
        """Provider attempts seen so far (requests received, generations started)."""
        ...

    async def released(self) -> bool:
        """Poll, with a bound, until the last call's connection/thread/stream is closed."""
        ...

    async def aclose(self) -> None: ...
