"""Latencies that only the pipeline can see (end of speech, first audible sample), attached to the engine's turns."""

from __future__ import annotations

import collections
from typing import Any

from engine.conversation import Conversation
from engine.events import TextGenerated, TurnEnded, TurnStarted


class SessionMetrics:
    """Maps each voice turn to the end of the speech that started it, and reports `ttfa_ms` and `tts_first_ms`."""

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self.speech_end: dict[int, float] = {}
        self.started_at: dict[int, float] = {}
        self.first_audible: dict[int, float] = {}
        self.ended: dict[int, TurnEnded] = {}
        self.generated: dict[int, str] = collections.defaultdict(str)
        self.close = conversation.subscribe(self._on_event)  # stop following the conversation

    def first_audio(self, turn: int, audible: float, synth_ms: float) -> None:
        """`audible`: the device's stamp of the turn's first sample (audio.playout)."""
        self.first_audible[turn] = audible
        metrics: dict[str, float] = {"tts_first_ms": round(synth_ms, 1)}
        if turn in self.speech_end:
            metrics["ttfa_ms"] = round((audible - self.speech_end[turn]) * 1000, 1)
        self._conversation.add_metrics(turn, **metrics)

    def _on_event(self, event: Any) -> None:
        if isinstance(event, TurnStarted):
            self.started_at[event.turn] = self._now()
            if event.ended_at is not None:
                self.speech_end[event.turn] = event.ended_at
        elif isinstance(event, TurnEnded):
            self.ended[event.turn] = event
        elif isinstance(event, TextGenerated):
            self.generated[event.turn] += event.text

    def _now(self) -> float:
        return self._conversation.parts.clock.now()
