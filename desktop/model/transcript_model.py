"""The transcript as data (no Qt): user bubbles, and assistant bubbles that stream, then settle to heard/unheard."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from desktop.model.facts import QueueDropped, ReplyCut, TextQueued
from desktop.model.wording import code_words, cut_note, failure_reason, no_reply
from engine.events import (
    AttemptFailed,
    ReplyHeard,
    RetryScheduled,
    TextGenerated,
    ToolCalled,
    ToolFinished,
    TurnEnded,
    TurnStarted,
    TurnWithdrawn,
)


@dataclass
class Bubble:
    role: Literal["user", "assistant"]
    turn: int
    step: int = 0
    source: str = "text"
    text: str = ""  # the user's words, or the reply as it streams in
    attempt: int = 0
    heard: str | None = None  # once settled: exactly the journal's assistant/message text ("" if none)
    unheard: str = ""  # generated but never heard: struck through and greyed
    interrupted: bool = False
    settled: bool = False
    note: str = ""  # status in plain words: "Thinking…", "Attempt 1 failed (rate limited)", "Failed: …"
    failed: bool = False
    at: float = 0.0  # wall-clock time it was said (unix seconds), shown on hover
    reading: str | None = None  # while it is spoken: the words heard so far (the heard cursor, word-exact)
    withdrawn: bool = False  # the person went on before hearing a reply: their words continue in the next turn
    queued: bool = False  # typed while Parley answered: waits for its turn (which it gets, and `turn`, when it starts)


def unheard_rest(generated: str, heard: str) -> str:
    """What followed the heard words; `heard` is a word-wise prefix of `generated`."""
    text = generated.strip()
    if text.startswith(heard):
        return text[len(heard) :].strip()
    words, heard_words = text.split(), heard.split()
    if words[: len(heard_words)] == heard_words:
        return " ".join(words[len(heard_words) :])
    return text


Changed = Callable[[Bubble, bool], None]  # (bubble, is_new)
QUEUED = "Waiting — Parley answers this when it has finished the reply before"
DROPPED = "Not answered — Stop dropped it before its turn"


class TranscriptModel:
    def __init__(self, wall: Callable[[], float] = time.time) -> None:
        self.bubbles: list[Bubble] = []
        self._wall = wall
        self._listeners: list[Changed] = []
        self._resets: list[Callable[[], None]] = []

    def on_change(self, listener: Changed) -> None:
        self._listeners.append(listener)

    def on_reset(self, listener: Callable[[], None]) -> None:
        self._resets.append(listener)

    def load(self, bubbles: Sequence[Bubble]) -> None:
        """Show another conversation: everything goes, then `bubbles` (settled, from its journal) come in."""
        self.bubbles = []
        for listener in list(self._resets):
            listener()
        for bubble in bubbles:
            self._add(bubble)

    def reading(self, turn: int, step: int, heard: str) -> None:
        """While a reply is spoken: the words heard so far (they only grow until the bubble settles)."""
        bubble = self.assistant(turn, step)
        if bubble is None or bubble.settled or bubble.reading == heard:
            return
        bubble.reading = heard
        self._changed(bubble)

    def speaking(self) -> list[Bubble]:
        """Replies still being spoken (not settled), for the reading position."""
        return [b for b in self.bubbles if b.role == "assistant" and not b.settled and b.text]

    def assistant(self, turn: int, step: int = 1) -> Bubble | None:
        for bubble in self.bubbles:
            if bubble.role == "assistant" and bubble.turn == turn and bubble.step == step:
                return bubble
        return None

    def handle(self, event: Any) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _add(self, bubble: Bubble) -> Bubble:
        self.bubbles.append(bubble)
        self._changed(bubble, True)
        return bubble

    def _changed(self, bubble: Bubble, new: bool = False) -> None:
        for listener in list(self._listeners):
            listener(bubble, new)

    def _step(self, turn: int, step: int) -> Bubble:
        return self.assistant(turn, step) or self._add(Bubble("assistant", turn, step, at=self._wall()))

    def _started(self, event: TurnStarted) -> None:
        now = self._wall()
        waiting = next((b for b in self.bubbles if b.queued and (b.source, b.text) == (event.source, event.text)), None)
        if waiting is None:
            self._add(Bubble("user", event.turn, source=event.source, text=event.text, settled=True, at=now))
        else:  # shown since it was typed: now its turn has come
            waiting.turn, waiting.queued, waiting.note = event.turn, False, ""
            self._changed(waiting)
        self._add(Bubble("assistant", event.turn, 1, note="Thinking…", at=now))

    def _queued(self, event: TextQueued) -> None:
        """Typed while Parley answers: shown at once, marked as waiting, answered when the reply before it ends."""
        self._add(
            Bubble("user", 0, source="text", text=event.text, settled=True, note=QUEUED, at=self._wall(), queued=True)
        )

    def _dropped(self, event: QueueDropped) -> None:
        """Stop dropped messages that waited: they stay on screen, marked as never answered."""
        for text in event.texts:
            waiting = next((b for b in self.bubbles if b.queued and b.text == text), None)
            if waiting is not None:
                waiting.queued, waiting.note = False, DROPPED
                self._changed(waiting)

    def _text(self, event: TextGenerated) -> None:
        bubble = self._step(event.turn, event.step)
        if bubble.attempt != event.attempt:
            bubble.attempt, bubble.text, bubble.reading = event.attempt, "", None
        bubble.text += event.text
        bubble.note = ""
        self._changed(bubble)

    def _attempt_failed(self, event: AttemptFailed) -> None:
        bubble = self._step(event.turn, event.step)
        bubble.text, bubble.reading = "", None
        bubble.note = f"Attempt {event.attempt} failed ({code_words(event.failure.code)})"
        self._changed(bubble)

    def _retry(self, event: RetryScheduled) -> None:
        bubble = self._step(event.turn, event.step)
        bubble.note += f"; trying again after {event.backoff.delay_ms / 1000:.1f} s"
        self._changed(bubble)

    def _tool(self, event: ToolCalled | ToolFinished) -> None:
        bubble = self._step(event.turn, event.step)
        if isinstance(event, ToolCalled):
            bubble.note = f"Using the tool {event.call.name}…"
        else:
            bubble.note = f"Tool finished: {event.code}"
        self._changed(bubble)

    def _heard(self, event: ReplyHeard) -> None:
        bubble = self._step(event.turn, event.step)
        bubble.heard, bubble.unheard = event.heard, unheard_rest(event.generated, event.heard)
        bubble.text, bubble.interrupted, bubble.settled = event.generated, event.interrupted, True
        if not bubble.note.startswith("Tool"):
            bubble.note = ""  # nothing heard of the whole turn: marked when it ends (the outcome says why)
        self._changed(bubble)

    def _cut(self, event: ReplyCut) -> None:
        """The reply stopped at the reply limit: a mark under it, so a sentence cut short is not a mystery."""
        bubble = self.assistant(event.turn, event.step)
        if bubble is not None and bubble.heard and not bubble.interrupted:
            bubble.note = cut_note(event.limit_s)
            self._changed(bubble)

    def _withdrawn(self, event: TurnWithdrawn) -> None:
        for bubble in [b for b in self.bubbles if b.turn == event.turn]:
            self.bubbles.remove(bubble)
            bubble.withdrawn = True
            self._changed(bubble)

    def _ended(self, event: TurnEnded) -> None:
        replies = [b for b in self.bubbles if b.role == "assistant" and b.turn == event.turn]
        for bubble in replies:
            if bubble.settled and event.failure is None:
                continue
            if event.failure is not None and not bubble.heard:
                bubble.failed, bubble.text = True, ""
                bubble.note = f"Failed: {failure_reason(event.failure)}"
            elif not bubble.settled:
                bubble.heard, bubble.unheard = "", bubble.text.strip()
            bubble.settled = True
            self._changed(bubble)
        if event.failure is None and replies and not any(b.heard for b in replies):
            self._no_reply(replies[-1], event.outcome)

    def _no_reply(self, bubble: Bubble, outcome: str) -> None:
        """Nothing of the turn's reply was heard: say so under it, so the person's words are not left unanswered
        without a word (a tool's note stays, the mark follows it)."""
        mark = no_reply(outcome)
        bubble.note = f"{bubble.note} · {mark}" if bubble.note.startswith("Tool") else mark
        self._changed(bubble)


_HANDLERS: dict[type, Callable[[TranscriptModel, Any], None]] = {
    TurnStarted: TranscriptModel._started,
    TextGenerated: TranscriptModel._text,
    AttemptFailed: TranscriptModel._attempt_failed,
    RetryScheduled: TranscriptModel._retry,
    ToolCalled: TranscriptModel._tool,
    ToolFinished: TranscriptModel._tool,
    ReplyHeard: TranscriptModel._heard,
    TurnWithdrawn: TranscriptModel._withdrawn,
    TurnEnded: TranscriptModel._ended,
    ReplyCut: TranscriptModel._cut,
    TextQueued: TranscriptModel._queued,
    QueueDropped: TranscriptModel._dropped,
}
