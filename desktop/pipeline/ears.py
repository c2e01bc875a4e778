"""The listening half: cleaned microphone audio → utterances → transcripts → the conversation, with barge-in.

A barge-in pauses the reply at once (the detector does that); the utterance's own incremental
transcript then decides: words cancel the turn (keeping the inbox, so the interruption is the next
input), no words resume the reply. Every task started here runs in the task group `open_ears` opens,
so leaving it means every transcription and barge-in resolution has ended.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from adapters.asr.incremental import IncrementalTranscriber
from adapters.contract import CancelSignal, Disposed, User
from adapters.contract.speech_io import Transcriber, Transcript
from adapters.contract.tasks import ErrorHandler, Tasks, open_tasks
from audio.bargein import BargeInDetector
from audio.events import BargeIn, BargeInConfirmed, CaptureFailed, FalseBargeInResumed, SpeechEnded, SpeechStarted
from audio.ports import AudioSink, Frame
from engine.clock import Clock
from engine.conversation import Conversation
from engine.events import State, StateChanged
from engine.inbox import UserInput

PREROLL_S = 0.4  # audio kept from before the VAD's onset, so the first syllable is not cut
WORDS_POLL_S = 0.05
ARMED_STATES = frozenset({State.THINKING, State.SPEAKING, State.BACKING_OFF})
# Backchannels: the listener is following along, not taking the turn. They neither interrupt nor get answered.
FILLERS = frozenset("ah aha eh er hm hmm huh mhm mm mmm oh uh uhhuh um ummm mmhmm yeah".split())


def says_something(transcript: Transcript) -> bool:
    """True when the transcript holds a word that is not a filler or backchannel."""
    words = ("".join(ch for ch in w.text.lower() if ch.isalpha()) for w in transcript.words)
    return any(word and word not in FILLERS for word in words)


@dataclass
class _Utterance:
    started_at: float
    transcript: IncrementalTranscriber
    signal: CancelSignal = field(default_factory=CancelSignal)
    push_to_talk: bool = False
    ended: Transcript | None = None
    done: bool = False


class Ears:
    """Feeds on `Listener` events and frames; `press()`/`release()` are push-to-talk."""

    def __init__(
        self,
        conversation: Conversation,
        transcriber: Transcriber,
        detector: BargeInDetector,
        sink: AudioSink,
        clock: Clock,
        tasks: Tasks,
        *,
        on_utterance: Callable[[float, Transcript], None] | None = None,
        resume_false_interruptions: bool = True,
    ) -> None:
        self._owned = tasks
        self._conversation = conversation
        self._transcriber = transcriber
        self._detector = detector
        self._sink = sink
        self._clock = clock
        self._on_utterance = on_utterance
        self._resume = resume_false_interruptions
        self._preroll: collections.deque[Frame] = collections.deque()
        self._current: _Utterance | None = None
        self.failure: CaptureFailed | None = None
        self.barge_ins: list[BargeIn] = []
        self.stop_ms: dict[int, float] = {}
        self.silent_at: dict[int, float] = {}  # when each interrupted turn's output went silent (clock)
        self._unsubscribe = conversation.subscribe(self._on_engine_event)

    def on_audio(self, frame: Frame) -> None:
        self._preroll.append(frame)
        while self._preroll and self._preroll[0].end < frame.end - PREROLL_S:
            self._preroll.popleft()
        if self._current is not None:
            self._current.transcript.append(frame.samples)

    def on_event(self, event: object) -> None:
        if isinstance(event, SpeechStarted) and self._current is None:
            self._begin(event.at)
        elif isinstance(event, SpeechEnded) and self._current is not None and not self._current.push_to_talk:
            self._end(event.at)
        elif isinstance(event, BargeIn):
            self.barge_ins.append(event)
            self._conversation.record("barge_in/detected", source=event.source, onset=event.at, at=event.detected_at)
            self._own(self._resolve, event, name="barge-in")
        elif isinstance(event, CaptureFailed):
            self.failure = event

    def press(self) -> None:
        """Push-to-talk down: interrupts a reply at once and starts an utterance."""
        turn = self._conversation.live_turn
        confirmed = self._detector.push_to_talk()
        if confirmed is not None and turn is not None:
            self._own(self._interrupt, turn.id, confirmed, confirmed.at, name="push-to-talk")
        if self._current is not None:
            self._current.push_to_talk = True
        else:
            self._begin(self._clock.now(), push_to_talk=True)

    def release(self) -> None:
        if self._current is not None:
            self._end(self._clock.now())

    @property
    def busy(self) -> bool:
        return self._current is not None or bool(self._owned.running)

    def close(self) -> None:
        """Stop listening to the conversation; the utterance under way is dropped (its group then ends)."""
        self._unsubscribe()
        if self._current is not None:
            self._current.signal.set(Disposed())

    def _begin(self, at: float, *, push_to_talk: bool = False) -> None:
        utterance = _Utterance(at, IncrementalTranscriber(self._transcriber), push_to_talk=push_to_talk)
        for frame in self._preroll:
            utterance.transcript.append(frame.samples)
        self._current = utterance
        self._conversation.set_input_state(State.LISTENING)
        self._own(utterance.transcript.run, utterance.signal, name="asr-partials")

    def _end(self, at: float) -> None:
        utterance, self._current = self._current, None
        assert utterance is not None
        self._own(self._finish, utterance, at, name="asr-final")

    async def _finish(self, utterance: _Utterance, end_at: float) -> None:
        self._conversation.set_input_state(State.TRANSCRIBING)
        started = self._clock.now()
        try:
            transcript = await utterance.transcript.finish(utterance.signal)
        finally:
            utterance.done = True
            self._conversation.set_input_state(State.IDLE)
        utterance.ended = transcript
        if not says_something(transcript):
            return
        asr_ms = round((self._clock.now() - started) * 1000, 1)
        if self._on_utterance is not None:
            self._on_utterance(end_at, transcript)
        self._conversation.submit(UserInput(transcript.text, source="voice", metrics={"asr_ms": asr_ms}))

    async def _resolve(self, barge_in: BargeIn) -> None:
        turn = self._conversation.live_turn
        utterance = self._current
        result = await self._detector.resolve(barge_in, lambda: self._has_words(utterance))
        if isinstance(result, FalseBargeInResumed):
            self._conversation.record("barge_in/resumed", onset=barge_in.at, at=result.resumed_at)
        if isinstance(result, BargeInConfirmed) and turn is not None:
            await self._interrupt(turn.id, result, barge_in.detected_at)

    async def _interrupt(self, turn: int, confirmed: BargeInConfirmed, silent_at: float) -> None:
        """Cancel the interrupted turn (keep the inbox) and let the speaker play the next turn."""
        self.stop_ms[turn] = round(max(0.0, silent_at - confirmed.at) * 1000, 1)
        self.silent_at[turn] = silent_at
        self._conversation.record("barge_in/confirmed", source=confirmed.source, onset=confirmed.at)
        self._conversation.add_metrics(turn, stop_ms=self.stop_ms[turn])
        await self._conversation.cancel(User(), keep_inbox=True)
        self._sink.resume()

    async def _has_words(self, utterance: _Utterance | None) -> bool:
        """True once the interrupting speech shows words; False once it ended without any."""
        while utterance is not None and self._resume:
            latest = utterance.ended or utterance.transcript.latest
            if latest is not None and says_something(latest):
                return True
            if utterance.done:
                return False
            await self._clock.sleep(WORDS_POLL_S)
        return True

    def _on_engine_event(self, event: object) -> None:
        if isinstance(event, StateChanged):
            if event.state in ARMED_STATES:
                self._detector.arm()
            elif event.state in (State.IDLE, State.STOPPING):
                self._detector.disarm()

    def _own(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        self._owned.start(fn, *args, name=f"ears:{name}")


@asynccontextmanager
async def open_ears(
    conversation: Conversation,
    transcriber: Transcriber,
    detector: BargeInDetector,
    sink: AudioSink,
    clock: Clock,
    *,
    on_error: ErrorHandler,
    on_utterance: Callable[[float, Transcript], None] | None = None,
    resume_false_interruptions: bool = True,
) -> AsyncIterator[Ears]:
    """Ears bound to `conversation` for the block; on leaving, whatever they still run is cancelled and ended."""
    async with open_tasks(on_error=on_error, cancel_on_exit=True) as tasks:
        ears = Ears(
            conversation,
            transcriber,
            detector,
            sink,
            clock,
            tasks,
            on_utterance=on_utterance,
            resume_false_interruptions=resume_false_interruptions,
        )
        try:
            yield ears
        finally:
            ears.close()
