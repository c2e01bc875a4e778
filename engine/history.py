"""Rebuild what the model is told from the journal alone: heard words only, every call with its result.

An interrupted reply is sent as exactly the words heard plus CUT_MARK (a dash, which the system message explains):
the mark sits on the reply itself and stays there, so a barge-in changes nothing the model has read before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from adapters.contract import Message, ToolCall
from engine.journal import Event

CUT_MARK = " \u2014"  # " —": where the user stopped listening


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

    def messages(self) -> list[Message]:
        out = [Message("user", self.user)] if self.user is not None else []
        for number in sorted(self.steps):
            step = self.steps[number]
            if step.text or step.calls:
                text = step.text + CUT_MARK if step.interrupted and step.text else step.text
                out.append(Message("assistant", text, tuple(step.calls)))
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
    return [message for turn in _kept(events, drop_oldest) for message in turn.messages()]


def past_turn_count(events: Sequence[Event]) -> int:
    """How many turns before the newest could be trimmed away."""
    return max(0, len(turns_of(events)) - 1)
