"""The barge-in decision, in one place: what an interruption the detector heard (audio/bargein.py) does to the
reply.

The detector pauses the output the moment it hears one; from there this decides. Hands-free, the interrupting
utterance's own incremental transcript answers within the detector's window: words that are not Parley's own voice
confirm it, and the turn is cancelled (keeping the inbox, so the interruption is the next input) and the output
resumed for the next reply; no words resume the paused reply (`barge_in/resumed`). Push-to-talk interrupts at once.
The detector is armed only while a reply is under way, and a turn taken back before its reply was heard leaves
nothing to interrupt.
"""

from __future__ import annotations

from collections.abc import Callable

from adapters.contract import User
from adapters.contract.clock import Clock
from audio.bargein import BargeInDetector
from audio.events import BargeIn, BargeInConfirmed, FalseBargeInResumed
from audio.ports import AudioSink
from audio.turns.ports import ConversationPort
from audio.turns.self_voice import SelfVoice
from audio.turns.utterance import Utterance
from audio.turns.words import says_something
from engine.events import State, StateChanged

Own = Callable[..., None]  # start owned work: own(fn, *args, name=...)
WORDS_POLL_S = 0.05
ARMED_STATES = frozenset({State.THINKING, State.SPEAKING, State.BACKING_OFF})


class Interruptions:
    """Owns every barge-in from detection to its end: resolved as false (the reply resumes) or confirmed (the turn
    is cancelled, the output resumed for the next). `current()` is the utterance under way, if any."""

    def __init__(
        self,
        conversation: ConversationPort,
        detector: BargeInDetector,
        sink: AudioSink,
        clock: Clock,
        own: Own,
        current: Callable[[], Utterance | None],
        self_voice: SelfVoice,
        *,
        resume_false_interruptions: bool = True,
    ) -> None:
        self._conversation = conversation
        self._detector = detector
        self._sink = sink
        self._clock = clock
        self._own = own
        self._current = current
        self._self_voice = self_voice
        self._resume = resume_false_interruptions
        self.barge_ins: list[BargeIn] = []
        self.stop_ms: dict[int, float] = {}
        self.silent_at: dict[int, float] = {}  # when each interrupted turn's output went silent (clock)
        self._unsubscribe = conversation.subscribe(self._on_engine_event)

    def detected(self, barge_in: BargeIn) -> None:
        """The detector heard one (the output is paused already): on the record, then resolved."""
        self.barge_ins.append(barge_in)
        self._conversation.record(
            "barge_in/detected", source=barge_in.source, onset=barge_in.at, at=barge_in.detected_at
        )
        self._own(self._resolve, barge_in, name="barge-in")

    def pressed(self) -> None:
        """Push-to-talk down: a reply under way is interrupted at once."""
        turn = self._conversation.live_turn
        confirmed = self._detector.push_to_talk()
        if confirmed is not None and turn is not None:
            self._own(self._interrupt, turn.id, confirmed, confirmed.at, name="push-to-talk")

    def taken_back(self) -> None:
        """The person went on after a turn a pause ended, before its reply was heard: no barge-in on that reply."""
        self._detector.disarm()
        self._sink.resume()

    def close(self) -> None:
        self._unsubscribe()

    async def _resolve(self, barge_in: BargeIn) -> None:
        turn = self._conversation.live_turn
        utterance = self._current()
        result = await self._detector.resolve(barge_in, lambda: self._has_words(utterance))
        if isinstance(result, FalseBargeInResumed):
            self._conversation.record("barge_in/resumed", onset=barge_in.at, at=result.resumed_at)
        if isinstance(result, BargeInConfirmed) and turn is not None:
            silent_at = barge_in.paused_at if barge_in.paused_at is not None else barge_in.detected_at
            await self._interrupt(turn.id, result, silent_at)

    async def _interrupt(self, turn: int, confirmed: BargeInConfirmed, silent_at: float) -> None:
        """Cancel the interrupted turn (keep the inbox) and let the speaker play the next turn."""
        self.stop_ms[turn] = round(max(0.0, silent_at - confirmed.at) * 1000, 1)
        self.silent_at[turn] = silent_at
        self._conversation.record("barge_in/confirmed", source=confirmed.source, onset=confirmed.at)
        self._conversation.add_metrics(turn, stop_ms=self.stop_ms[turn])
        await self._conversation.cancel(User(), keep_inbox=True)
        self._sink.resume()
        current = self._current()
        if current is not None and not current.over:
            self._conversation.speculate("")  # the interruption's turn: its prompt, while the user goes on

    async def _has_words(self, utterance: Utterance | None) -> bool:
        """True once the interrupting speech shows words; False once it ended (or paused) without any."""
        while utterance is not None and self._resume:
            latest = utterance.ended or utterance.transcript.latest
            if latest is not None and says_something(latest):
                return not self._self_voice.rejected(utterance, latest, "barge_in")
            if utterance.done or utterance.heard_nothing():
                return False
            await self._clock.sleep(WORDS_POLL_S)
        return True

    def _on_engine_event(self, event: object) -> None:
        if isinstance(event, StateChanged):
            if event.state in ARMED_STATES:
                self._detector.arm()
            elif event.state in (State.IDLE, State.STOPPING):
                self._detector.disarm()
