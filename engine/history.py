"""Rebuild what the model is told from the journal alone: heard words only, every call with its result.

An interrupted reply is sent as exactly the words heard, and the user's next message carries CUT_NOTE: a small model
copied a dash left dangling on its own text (and with it the cut story) into the next replies, where a note in the
person's own words leads it to answer them. The note is on the new message only, so a barge-in changes nothing the
model has read before it (the embedded model's prefix cache keeps the conversation).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from adapters.contract import Message, ToolCall
from engine.journal import Event

CUT_NOTE = "(I interrupted your last reply; answer this instead.)"


@dataclass
class _Step:
    text: str = ""
    interrupted: bool = False
    calls: list[ToolCall] = field(default_factory=list)
    results: list[Message] = field(default_factory=list)


@dataclass
class _Turn:
    turn: int
    user: str | None = None
    steps: dict[int, _Step] = field(default_factory=dict)

    def step(self, number: int) -> _Step:
        return self.steps.setdefault(number, _Step())

    @property
    def cut(self) -> bool:
        """The person cut off a reply of this turn after hearing some of it."""
        return any(step.interrupted and step.text for step in self.steps.values())

    def messages(self, *, after_cut: bool = False) -> list[Message]:
        out = []
        if self.user is not None:
            out.append(Message("user", f"{self.user}\n{CUT_NOTE}" if after_cut else self.user))
        for number in sorted(self.steps):
            step = self.steps[number]
            if step.text or step.calls:
                out.append(Message("assistant", step.text, tuple(step.calls)))
            out.extend(step.results)
        return out


def _apply(turn: _Turn, event: Event) -> None:
    kind = event["type"]
    if kind == "user/message":
        turn.user = str(event["text"])
    elif kind == "assistant/message":
        step = turn.step(int(event["step"]))
        step.text, step.interrupted = str(event["text"]), bool(event.get("interrupted"))
    elif kind == "tool/call":
        call = ToolCall(str(event["call_id"]), str(event["name"]), str(event["arguments"]))
        turn.step(int(event["step"])).calls.append(call)
    elif kind == "tool/result":
        result = Message("tool", str(event["output"]), tool_call_id=str(event["call_id"]))
        turn.step(int(event["step"])).results.append(result)


def turns_of(events: Iterable[Event]) -> list[_Turn]:
    turns: dict[int, _Turn] = {}
    for event in events:
        if "turn" in event and event["type"] != "turn/end":
            number = int(event["turn"])
            _apply(turns.setdefault(number, _Turn(number)), event)
    return list(turns.values())


def _kept(events: Sequence[Event], drop_oldest: int) -> list[_Turn]:
    """The turns sent: the `drop_oldest` earliest are left out (never the newest one)."""
    turns = turns_of(events)
    return turns[min(drop_oldest, max(0, len(turns) - 1)) :]


def build_history(events: Sequence[Event], *, drop_oldest: int = 0) -> list[Message]:
    """Messages in order; the `drop_oldest` earliest turns are left out (never the newest one)."""
    kept = _kept(events, drop_oldest)
    cuts = [False, *(turn.cut for turn in kept[:-1])]
    return [
        message for turn, after_cut in zip(kept, cuts, strict=True) for message in turn.messages(after_cut=after_cut)
    ]


def past_turn_count(events: Sequence[Event]) -> int:
    """How many turns before the newest could be trimmed away."""
    return max(0, len(turns_of(events)) - 1)
