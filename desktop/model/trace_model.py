"""Per-turn trace (no Qt): attempts and their failure codes, retries and delays, and the turn's timings."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from desktop.model.conversations import failure_of
from desktop.model.facts import TurnStopped
from desktop.model.wording import code_words, stop_cause
from engine.events import AttemptFailed, BackoffInfo, RetryScheduled, ToolFinished, TurnEnded, TurnStarted

TIMINGS = {
    "stop_ms": "barge-in → output silent",
    "quiesce_ms": "cancel → every task, thread and connection of the turn ended",
    "ttfa_ms": "end of speech → first audio",
    "llm_ttft_ms": "request sent → first token from the model",
    "asr_ms": "end of speech → final transcript (Whisper)",
    "tts_first_ms": "first reply text → its first audio (Piper)",
}
IN_WORDS = {  # beside each figure, what it is in plain words
    "stop_ms": "until Parley fell silent",
    "quiesce_ms": "until all its work had stopped",
    "ttfa_ms": "from your last word to its first",
    "llm_ttft_ms": "for the model's first word",
    "asr_ms": "to write down what you said",
    "tts_first_ms": "to start speaking the reply",
}
OUTCOMES = {"running": "in progress", "completed": "answered", "failed": "failed", "aborted": "stopped"}


@dataclass
class TurnTrace:
    turn: int
    source: str = ""
    outcome: str = "running"
    failure: str = ""
    failure_detail: str = ""
    attempts: list[str] = field(default_factory=list)
    retries: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    cause: str = ""  # why it was stopped, in the app's terms (desktop.model.facts.StopCause)

    def title(self) -> str:
        said = "spoken" if self.source == "voice" else "typed"
        outcome = stop_cause(self.cause) if self.outcome == "aborted" and self.cause else OUTCOMES.get(self.outcome)
        return f"Turn {self.turn} ({said}): {outcome or self.outcome}"

    def lines(self) -> list[tuple[str, str]]:
        """Short lines for the panel, each with a longer explanation for its tooltip."""
        out = [(line, line) for line in (*self.attempts, *self.retries, *self.tools)]
        if self.failure:
            out.append((f"failed: {code_words(self.failure)} ({self.failure})", self.failure_detail))
        known = [k for k in TIMINGS if k in self.metrics]
        out += [(f"{k}  {self.metrics[k]:g} ms  ({IN_WORDS[k]})", TIMINGS[k]) for k in known]
        out += [(f"{k}  {v:g}", k) for k, v in sorted(self.metrics.items()) if k not in TIMINGS]
        return out


class TraceBook:
    def __init__(self) -> None:
        self.turns: dict[int, TurnTrace] = {}
        self._listeners: list[Callable[[TurnTrace], None]] = []
        self._resets: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[TurnTrace], None]) -> None:
        self._listeners.append(listener)

    def on_reset(self, listener: Callable[[], None]) -> None:
        self._resets.append(listener)

    def reset(self) -> None:
        """Another conversation: the traces of this one go."""
        self.turns.clear()
        for listener in list(self._resets):
            listener()

    def load(self, journal: Iterable[Mapping[str, Any]]) -> None:
        """A conversation read back from its journal: its turns' traces, as they were shown live."""
        for event in replayed(journal):
            self.handle(event)

    def handle(self, event: Any) -> None:
        turn = getattr(event, "turn", None)
        if turn is None or not isinstance(event, _TRACED):
            return
        trace = self.turns.setdefault(turn, TurnTrace(turn))
        _apply(trace, event)
        for listener in list(self._listeners):
            listener(trace)


_TRACED = (TurnStarted, AttemptFailed, RetryScheduled, ToolFinished, TurnEnded, TurnStopped)


def _apply(trace: TurnTrace, event: Any) -> None:
    if isinstance(event, TurnStarted):
        trace.source = event.source
    elif isinstance(event, TurnStopped):
        trace.cause = trace.cause or event.cause
    elif isinstance(event, AttemptFailed):
        failure = event.failure
        step = f"step {event.step} " if event.step > 1 else ""
        status = f" · HTTP {failure.status}" if failure.status else ""
        trace.attempts.append(f"{step}attempt {event.attempt} failed: {failure.code}{status}")
    elif isinstance(event, RetryScheduled):
        info = event.backoff
        trace.retries.append(f"retry {info.retry} after {info.delay_ms} ms")
    elif isinstance(event, ToolFinished):
        trace.tools.append(f"tool {event.call_id}: {event.code}")
    elif isinstance(event, TurnEnded):
        trace.outcome = event.outcome
        trace.metrics = dict(event.metrics)
        if event.failure is not None:
            trace.failure = event.failure.code
            trace.failure_detail = event.failure.message


_NOT_METRICS = frozenset({"seq", "time", "type", "turn"})


def replayed(journal: Iterable[Mapping[str, Any]]) -> list[Any]:
    """A journal's events (docs/journal.md) as the events the trace follows live. Why a turn was stopped is not
    journalled, only a barge-in's source and a turn closed on reopening after a crash."""
    out: list[Any] = []
    metrics: dict[int, dict[str, float]] = {}
    for event in journal:
        turn, kind = event.get("turn"), event.get("type")
        if not isinstance(turn, int):
            continue
        step = int(event.get("step", 1))
        if kind == "turn/start":
            out.append(TurnStarted(turn, str(event.get("source", "text")), ""))
        elif kind == "assistant/attempt" and isinstance(event.get("failure"), Mapping):
            out.append(AttemptFailed(turn, step, int(event.get("attempt", 1)), failure_of(event["failure"])))
        elif kind == "llm/retry":
            failure = event.get("failure")
            code = str(failure.get("code", "")) if isinstance(failure, Mapping) else ""
            backoff = BackoffInfo(int(event.get("delay_ms", 0)), code, 0.0, int(event.get("retry", 1)))
            out.append(RetryScheduled(turn, step, backoff))
        elif kind == "tool/result":
            out.append(ToolFinished(turn, step, str(event.get("call_id", "")), str(event.get("code", "")), ""))
        elif kind == "barge_in/confirmed":
            out.append(TurnStopped(turn, "push_to_talk" if event.get("source") == "push_to_talk" else "voice"))
        elif kind == "metrics/turn":
            metrics[turn] = {k: float(v) for k, v in event.items() if k not in _NOT_METRICS and _number(v)}
        elif kind == "turn/end":
            out += _ended(turn, event, metrics.pop(turn, {}))
    return out


def _ended(turn: int, event: Mapping[str, Any], metrics: dict[str, float]) -> list[Any]:
    """The turn's end, after why it stopped when it was closed on reopening (Parley had closed mid-turn)."""
    failure = event.get("failure")
    known = failure_of(failure) if isinstance(failure, Mapping) else None
    ended = TurnEnded(turn, str(event.get("outcome", "")), known, metrics)
    return [TurnStopped(turn, "closed"), ended] if event.get("recovered") else [ended]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
