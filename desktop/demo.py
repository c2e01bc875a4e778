"""`parley demo`: the engine with a real LLM and a simulated speaker, including a barge-in.

Speech is the engine's silent speech (250 ms a word) on the real clock, so the demo shows
turns, cancellation and heard-only history without audio devices or speech models.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from adapters.contract import LlmAdapter, User
from adapters.contract.clock import Clock
from engine.conversation import Conversation, EngineParts, open_conversation
from engine.events import TextGenerated, TurnEnded, TurnStarted
from engine.inbox import UserInput
from engine.journal import Journal
from engine.report import render, turn_reports
from engine.silent_speech import SilentSpeech

SCRIPT = (
    "Hello! Who are you?",
    "Tell me a long story about a lighthouse keeper and a storm.",
    "Sorry to interrupt. What is the capital of France?",
)
INTERRUPT_AFTER_MS = 1500.0
MS_PER_WORD = 250.0


class _Watcher:
    """Follows the live events: which turn started, which ended, what text was generated."""

    def __init__(self) -> None:
        self.started: asyncio.Queue[int] = asyncio.Queue()
        self.ended: set[int] = set()
        self.changed = asyncio.Event()
        self.generated: dict[int, str] = {}

    def __call__(self, event: Any) -> None:
        if isinstance(event, TurnStarted):
            self.started.put_nowait(event.turn)
        elif isinstance(event, TurnEnded):
            self.ended.add(event.turn)
            self.changed.set()
        elif isinstance(event, TextGenerated):
            self.generated[event.turn] = self.generated.get(event.turn, "") + event.text

    async def ended_turn(self, turn: int) -> None:
        while turn not in self.ended:
            self.changed.clear()
            await self.changed.wait()


async def _ask(conversation: Conversation, watcher: _Watcher, text: str, source: str = "text") -> int:
    conversation.submit(UserInput(text, source="voice" if source == "voice" else "text"))
    return await watcher.started.get()


async def _heard(speech: SilentSpeech, clock: Clock, turn: int, ms: float) -> None:
    while sum(s.played_ms for s in speech.report(turn)) < ms:
        await clock.sleep(0.05)


async def run_demo(llm: LlmAdapter, out: Path, clock: Clock) -> str:
    """Three turns; the second is interrupted after 1.5 s of speech by the third."""
    speech = SilentSpeech(clock, ms_per_word=MS_PER_WORD)
    watcher = _Watcher()
    with Journal(out / "journal.jsonl", wall=time.time) as journal:
        parts = EngineParts(
            llm=llm,
            speech=speech,
            journal=journal,
            clock=clock,
            summary={"llm": llm.provider, "model": llm.model},
        )
        async with open_conversation(parts) as conversation:
            conversation.subscribe(watcher)
            await watcher.ended_turn(await _ask(conversation, watcher, SCRIPT[0]))
            story = await _ask(conversation, watcher, SCRIPT[1])
            await _heard(speech, clock, story, INTERRUPT_AFTER_MS)
            await conversation.cancel(User(), keep_inbox=True)
            await watcher.ended_turn(await _ask(conversation, watcher, SCRIPT[2], "voice"))
        return render(turn_reports(journal.events[-_tail(journal) :]), watcher.generated)


def _tail(journal: Journal) -> int:
    """Events of this run only (the journal may hold earlier sessions)."""
    starts = [i for i, e in enumerate(journal.events) if e["type"] == "session/start"]
    return len(journal.events) - (starts[-1] if starts else 0)
