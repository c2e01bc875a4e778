"""Queued user inputs waiting for their turn."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class UserInput:
    """What the person said or typed; `metrics` carries measurements from before the turn (ASR time...).
    `provisional`: the person may go on (a pause ended the turn, not a button); until any of the reply is heard
    its turn can be withdrawn without a trace (`Conversation.withdraw`)."""

    text: str
    source: Literal["voice", "text"] = "text"
    metrics: Mapping[str, float] = field(default_factory=dict)
    provisional: bool = False
    ended_at: float | None = None  # clock time the person finished saying it (a voice input), for latencies


class Inbox:
    def __init__(self) -> None:
        self._items: deque[UserInput] = deque()
        self._changed = asyncio.Event()
        self.closed = False
        self.held = False  # no next turn starts (input still queues): the app is switching models between turns

    def put(self, item: UserInput) -> None:
        self._items.append(item)
        self._changed.set()

    def remove(self, item: UserInput) -> bool:
        """Take `item` (this very object) out of the queue; False if it is not waiting."""
        for queued in self._items:
            if queued is item:
                self._items.remove(queued)
                return True
        return False

    def clear(self) -> int:
        dropped = len(self._items)
        self._items.clear()
        return dropped

    def hold(self) -> None:
        """Start no further turn until `let_go` (the turn under way goes on)."""
        self.held = True

    def let_go(self) -> None:
        self.held = False
        self._changed.set()

    def take(self) -> list[UserInput]:
        """Every queued input, removed (to be carried to the next conversation)."""
        taken = list(self._items)
        self._items.clear()
        return taken

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[UserInput]:
        return iter(tuple(self._items))

    async def get(self) -> UserInput | None:
        """The next input, or None once closed."""
        while (not self._items or self.held) and not self.closed:
            self._changed.clear()
            await self._changed.wait()
        return None if self.closed else self._items.popleft()
