"""Facts the app layer publishes besides the engine's own events and the pipeline's (past tense, no Qt)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from desktop.pipeline.facts import MicLevel, ModelLoading

__all__ = [
    "ConversationBusy",
    "ConversationOpened",
    "EngineClosed",
    "EngineOpened",
    "HandsFreeChanged",
    "MicLevel",
    "ModelLoading",
    "Problem",
    "ProblemCleared",
    "ProblemRaised",
    "QueueDropped",
    "ReplyCut",
    "StartedUp",
    "TalkChanged",
    "TextQueued",
    "TurnStopped",
]


@dataclass(frozen=True)
class Problem:
    """Something the person must know: what is wrong and how to fix it, one line each.

    `kind` keys the banner, so the same problem replaces itself and can be cleared.
    """

    message: str
    fix: str
    kind: str = "general"
    severity: Literal["error", "info"] = "error"


@dataclass(frozen=True)
class ProblemRaised:
    problem: Problem


@dataclass(frozen=True)
class ProblemCleared:
    kind: str


@dataclass(frozen=True)
class ReplyCut:
    """A step's reply stopped at the reply limit, mid-sentence maybe: at the longest reply (`limit_s` None) or,
    after `limit_s` seconds, at Parley's reply time limit."""

    turn: int
    step: int
    limit_s: float | None = None


@dataclass(frozen=True)
class TextQueued:
    """A typed message waits for the turn under way (or the models being switched): it is answered next, and
    shown at once (its turn starts, and says so, only when the reply before it has ended)."""

    text: str


@dataclass(frozen=True)
class QueueDropped:
    """Stop dropped typed messages that were waiting for their turn: they will not be answered."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class StartedUp:
    """The speech models and the first language model have loaded (or failed to): Parley can answer now."""


@dataclass(frozen=True)
class HandsFreeChanged:
    on: bool


@dataclass(frozen=True)
class TalkChanged:
    """The push-to-talk key or button went down (held) or up."""

    held: bool


@dataclass(frozen=True)
class EngineOpened:
    """A conversation is running with this language model (after start or a settings change)."""

    provider: str
    model: str
    label: str


@dataclass(frozen=True)
class EngineClosed:
    """No conversation is running (shut down, or the model could not be set up); `why` says so when it stopped
    for a reason the person must see (the conversation cannot be saved)."""

    why: str = ""


@dataclass(frozen=True)
class ConversationBusy:
    """The conversation to open is open in another Parley (process `pid`, when known): nothing was opened."""

    path: Path
    pid: int | None


@dataclass(frozen=True)
class ConversationOpened:
    """The session now runs on this conversation's journal (at start, a new one, or a past one continued);
    `events` is what the journal held when it was opened."""

    path: Path
    events: tuple[Mapping[str, Any], ...]


StopCause = Literal["you", "push_to_talk", "voice", "settings", "conversation", "closed"]


@dataclass(frozen=True)
class TurnStopped:
    """Why a turn was aborted, in the app's terms (the journal records only that it was)."""

    turn: int
    cause: StopCause
