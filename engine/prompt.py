"""Prompt assembly, a stage of its own: it gets the turn's signal like every other stage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from adapters.contract import CancelSignal, Message
from engine.history import build_history
from engine.journal import Event

DEFAULT_SYSTEM_PROMPT = (
    "You are Parley, a friendly voice companion. Answer in one to three short spoken sentences. "
    "No lists, no markdown, no emoji."
)


class PromptBuilder(Protocol):
    async def build(
        self, events: Sequence[Event], signal: CancelSignal, *, drop_oldest: int
    ) -> tuple[Message, ...]: ...


class HistoryPrompt:
    """A system prompt plus the conversation rebuilt from the journal."""

    def __init__(self, system_prompt: str = DEFAULT_SYSTEM_PROMPT) -> None:
        self.system_prompt = system_prompt

    async def build(self, events: Sequence[Event], signal: CancelSignal, *, drop_oldest: int) -> tuple[Message, ...]:
        history = build_history(events, drop_oldest=drop_oldest)
        return (Message("system", self.system_prompt), *history)
