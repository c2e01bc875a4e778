"""Build a conversation from the engine's fakes on a virtual clock, and read its journal back."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.contract import LlmAdapter
from engine.conversation import Conversation, EngineParts, open_conversation
from engine.events import State, StateChanged
from engine.inbox import UserInput
from engine.journal import Journal, read_events
from engine.prompt import HistoryPrompt, PromptBuilder
from engine.retry import Budgets
from engine.testing import FakeLlm, FakeSpeechOutput, VirtualClock
from engine.testing.fake_llm import Script
from engine.tools import ToolRegistry


@dataclass
class Kit:
    conversation: Conversation
    llm: FakeLlm
    speech: FakeSpeechOutput
    clock: VirtualClock
    journal: Journal
    states: list[State]
    events: list[Any]

    def submit(self, text: str) -> None:
        self.conversation.submit(UserInput(text))

    def of_type(self, type_: str, turn: int | None = None) -> list[dict[str, Any]]:
        return [e for e in read_events(self.journal.path) if e["type"] == type_ and turn in (None, e.get("turn"))]

    async def until(self, predicate: Callable[[], bool], what: str = "condition") -> None:
        """Poll with a bound (in loop iterations, not wall time) until `predicate` holds."""
        for _ in range(20_000):
            if predicate():
                return
            await asyncio.sleep(0)
        raise AssertionError(f"timed out waiting for {what}")

    async def until_state(self, state: State) -> None:
        await self.until(lambda: self.conversation.state is state, f"state {state.value}")

    async def until_turn_ended(self, turn: int) -> None:
        await self.until(lambda: bool(self.of_type("turn/end", turn)), f"turn {turn} to end")


@asynccontextmanager
async def kit(
    tmp_path: Path,
    scripts: Sequence[Script] = (),
    *,
    budgets: Budgets | None = None,
    tools: ToolRegistry | None = None,
    prompt: PromptBuilder | None = None,
    fallback: FakeLlm | None = None,
    autojump: bool = True,
    adapter: LlmAdapter | None = None,
    ms_per_word: float = 300.0,
    speculative_requests: bool = False,
    secrets: Sequence[str] = ("sk-test-SECRET",),
    speech: Callable[[VirtualClock], FakeSpeechOutput] | None = None,
) -> AsyncIterator[Kit]:
    """`adapter` replaces the scripted FakeLlm (e.g. the real HTTP adapter against the fault server)."""
    clock = VirtualClock()
    llm = FakeLlm(scripts, clock=clock)
    speech_output = speech(clock) if speech is not None else FakeSpeechOutput(clock, ms_per_word=ms_per_word)
    journal = Journal(tmp_path / "journal.jsonl", wall=clock.now, secrets=secrets)
    parts = EngineParts(
        llm=adapter or llm,
        speech=speech_output,
        journal=journal,
        clock=clock,
        fallback=fallback,
        tools=tools or ToolRegistry(),
        prompt=prompt or HistoryPrompt(),
        budgets=budgets or Budgets(),
        rng=random.Random(7),
        speculative_requests=speculative_requests,
    )
    states: list[State] = []
    events: list[Any] = []
    try:
        async with open_conversation(parts) as conversation, _time_flow(clock, conversation, autojump):
            conversation.subscribe(events.append)
            conversation.subscribe(lambda e: states.append(e.state) if isinstance(e, StateChanged) else None)
            yield Kit(conversation, llm, speech_output, clock, journal, states, events)
    finally:
        journal.close()


def _time_flow(clock: VirtualClock, conversation: Conversation, autojump: bool) -> AbstractAsyncContextManager[None]:
    """Jump virtual time only while no worker thread is running (the clock's default)."""
    return clock.autojump() if autojump else nullcontext()
