"""The embedded llama.cpp adapter under the conformance suite, with the real SmolLM2 model.

The suite always sends "Hello"; this harness arranges each case by putting the prompt that
really provokes it in front of the adapter (a long story for HANG, an oversized prompt for
OVERFLOW). Tool calls, provider errors, transport errors, stalls and honest empty replies
cannot be provoked from a local 135M model, so they are not claimed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from dataclasses import replace

from adapters.contract import CancelSignal, GenerateOptions, LlmAdapter, Message, StreamChunk
from adapters.llm.local import LocalLlamaAdapter
from tests.conformance.llm_harness import HANG, OVERFLOW, TEXT, Case

N_CTX = 2048
PROMPTS = {
    TEXT: "Say hello.",
    HANG: "Write a very long story about a dragon who learns to bake bread, with many chapters.",
    OVERFLOW: "Repeat after me: " + "tea and biscuits " * 1200,  # well over N_CTX tokens
}
MAX_TOKENS = {TEXT: 48, HANG: 1500, OVERFLOW: 48}
RELEASE_BOUND_S = 5.0


class _Prompted:
    """The adapter with the case's prompt in place of the suite's messages (one call = one generation)."""

    def __init__(self, adapter: LocalLlamaAdapter, prompt: str) -> None:
        self._adapter = adapter
        self._messages = (Message("user", prompt),)

    @property
    def provider(self) -> str:
        return self._adapter.provider

    @property
    def model(self) -> str:
        return self._adapter.model

    def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        return self._adapter.stream(replace(options, messages=self._messages), signal)


class LocalHarness:
    name = "local"
    _kinds = frozenset(PROMPTS)

    def __init__(self) -> None:
        self._adapters: list[LocalLlamaAdapter] = []

    def supports(self, kind: str) -> bool:
        return kind in self._kinds

    def arrange(self, case: Case) -> LlmAdapter:
        adapter = LocalLlamaAdapter(n_ctx=N_CTX, max_tokens=MAX_TOKENS[case.kind])
        self._adapters.append(adapter)
        return _Prompted(adapter, PROMPTS[case.kind])

    def attempts(self) -> int:
        return sum(adapter.generations_started for adapter in self._adapters)

    async def released(self) -> bool:
        deadline = time.monotonic() + RELEASE_BOUND_S
        while any(adapter.active_generations for adapter in self._adapters):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def aclose(self) -> None:
        return None
