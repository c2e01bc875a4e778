"""The listening half: cleaned microphone audio → utterances → transcripts → the conversation, with barge-in.

The end of a hands-free turn is decided by evidence (end_of_turn.py over endpoint.py, in this package): a short
pause opens the question, the end-of-turn model, the speculative final pass and the silence answer it; the
turn's text is the final pass already made. While the user speaks, the conversation reads the request their
words so far would make (engine.speculation). Push-to-talk ends an utterance at the release instead.

A turn a pause ended is provisional: if the person goes on before any of its reply was heard, the ears take it
back (`Conversation.withdraw`) and the utterance goes on, so a breath inside a sentence costs one turn, not two.
Speech the ears drop is put on the record with its reason (`utterance/dropped`) and told to whoever listens.

A barge-in pauses the reply at once (the detector does that); what it then does is decided in barge_in.py, on the
utterance's own incremental transcript. An utterance whose words are the words Parley was playing then is its own
voice (self_voice.py): the reply resumes, no turn starts, and the journal says why (`barge_in/echo_rejected`). Every
task started here runs in the task group `open_ears` opens, so leaving it means every transcription,
end-of-turn check and barge-in resolution has ended.
"""

from __future__ import annotations

import collections
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from adapters.asr.incremental import IncrementalTranscriber
from adapters.contract import Disposed
from adapters.contract.clock import Clock
from adapters.contract.speech_io import Transcriber, Transcript
from adapters.runtime.heap import give_back_free_heap
from adapters.runtime.tasks import ErrorHandler, Tasks, open_tasks
from adapters.runtime.workers import run_blocking
from audio.bargein import BargeInDetector
from audio.events import BargeIn, CaptureFailed, SpeechEnded, SpeechStarted
from audio.levels import speech_level_dbfs
from audio.ports import AudioSink, Frame
from audio.turns.barge_in import Interruptions
from audio.turns.end_of_turn import TurnEnd
from audio.turns.endpoint import EndpointPolicy, TurnDecided
from audio.turns.facts import UTTERANCE_PART, UtteranceDropped
from audio.turns.ports import ConversationPort
from audio.turns.self_voice import PlayedWords, SelfVoice
from audio.turns.utterance import TurnTaking, Utterance
from audio.turns.words import says_something
from engine.events import State
from engine.inbox import UserInput

PREROLL_S = 0.4  # audio kept from before the VAD's onset, so the first syllable is not cut
EARLY_PASS_MS = 32.0  # this much of the VAD's silence (one window, its hangover still running) starts the final pass
DECISIONS_KEPT = 64


class Ears:
    """Feeds on `Listener` events and frames; `press()`/`release()` are push-to-talk."""

    def __init__(
        self,
        conversation: ConversationPort,
        transcriber: Transcriber,
        detector: BargeInDetector,
        sink: AudioSink,
        clock: Clock,
        tasks: Tasks,
        *,
        turn_taking: Callable[[], TurnTaking],
        on_dropped: Callable[[UtteranceDropped], None] | None = None,
        resume_false_interruptions: bool = True,
        played_words: PlayedWords | None = None,
    ) -> None:
        self._owned = tasks
        self._conversation = conversation
        self._transcriber = transcriber
        self._clock = clock
        self._on_dropped = on_dropped
        self._preroll: collections.deque[Frame] = collections.deque()
        self._current: Utterance | None = None
        self._reopenable: Utterance | None = None  # the last turn a pause ended, while the person may go on
        self._finishing = 0  # utterances whose final transcript is being made
        self.failure: CaptureFailed | None = None
        self.decisions: collections.deque[TurnDecided] = collections.deque(
            maxlen=DECISIONS_KEPT
        )  # the latest, in order
        self._self_voice = SelfVoice(conversation, played_words)
        self._turn_end = TurnEnd(conversation, clock, turn_taking, self._own, self._decided)
        self._barge_in = Interruptions(
            conversation,
            detector,
            sink,
            clock,
            self._own,
            lambda: self._current,
            self._self_voice,
            resume_false_interruptions=resume_false_interruptions,
        )

    @property
    def barge_ins(self) -> list[BargeIn]:
        return self._barge_in.barge_ins

    @property
    def silent_at(self) -> dict[int, float]:
        """When each interrupted turn's output went silent (clock)."""
        return self._barge_in.silent_at

    def on_audio(self, frame: Frame) -> None:
        self._preroll.append(frame)
        while self._preroll and self._preroll[0].end < frame.end - PREROLL_S:
            self._preroll.popleft()
        growing = self._current or self._reopenable
        if growing is not None:
            growing.transcript.append(frame.samples, frame.end)
        if self._current is None and self._reopenable is not None and not self._may_reopen(self._reopenable):
            self._reopenable = None  # its reply was heard: going on is interrupting it now

    def on_quiet(self, since: float | None, ms: float) -> None:
        """The VAD's silence so far (`since`: where it began, None while it hears speech): once it lasted
        EARLY_PASS_MS, a hands-free utterance's last words are transcribed at once, so that when the pause opens its
        final pass is made, and the reply can begin while the end-of-turn model still listens."""
        current = self._current
        if since is None or ms < EARLY_PASS_MS or current is None or current.policy is None or current.over:
            return
        if current.pause is None:
            current.transcript.pause_began(since)

    def on_event(self, event: object) -> None:
        current = self._current
        if isinstance(event, SpeechStarted | SpeechEnded) and current is not None and current.policy is not None:
            self._turn_end.on_vad(current, event)
        elif isinstance(event, SpeechStarted) and current is None:
            if not self._reopen(event.at):
                self._begin(event.at)
        elif isinstance(event, BargeIn):
            self._barge_in.detected(event)
        elif isinstance(event, CaptureFailed):
            self.failure = event

    def press(self) -> None:
        """Push-to-talk down: interrupts a reply at once and starts an utterance."""
        self._reopenable = None
        self._barge_in.pressed()
        if self._current is not None:
            self._current.hands_over()
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
        self._barge_in.close()
        current, self._current, self._reopenable = self._current, None, None
        if current is not None:
            self._dropped(current, "session ended", self._clock.now())
            current.drop_pause()
            current.signal.set(Disposed())

    # An utterance from onset to its end

    def _begin(self, at: float, *, push_to_talk: bool = False) -> None:
        policy = None if push_to_talk else EndpointPolicy(self._clock, self._turn_end.config())
        transcript = IncrementalTranscriber(self._transcriber, self._clock, on_partial=self._partial)
        utterance = Utterance(at, transcript, policy, audio_start=self._preroll[0].at if self._preroll else at)
        for frame in self._preroll:
            utterance.transcript.append(frame.samples, frame.end)
        utterance.transcript.speech_begins(at)
        self._current = utterance
        self._conversation.set_input_state(State.LISTENING)
        self._conversation.speculate("")  # the system prompt and the history, while the user speaks
        self._own(utterance.transcript.run, utterance.signal, name="asr-partials")
        self._turn_end.start(utterance)

    def _partial(self, transcript: Transcript) -> None:
        """While the user speaks, the model reads their words so far: at the pause little is left to read."""
        current = self._current
        if says_something(transcript) and (current is None or self._self_voice.echo(current, transcript) is None):
            self._conversation.speculate(transcript.text)

    def _end(self, at: float) -> None:
        """Push-to-talk released (or hands-free switched off): the utterance ends now, with one last pass if needed."""
        utterance, self._current = self._current, None
        assert utterance is not None
        utterance.over = True
        utterance.poke()
        self._own(self._finish, utterance, at, None, name="asr-final")

    def _decided(self, utterance: Utterance, ended: TurnDecided) -> None:
        """The policy ended the turn: the utterance's final transcript (the pause's pass) goes to the conversation,
        as a provisional input the person may still go on from."""
        self.decisions.append(ended)
        if self._current is utterance:
            self._current = None
            self._reopenable = utterance
        self._own(self._finish, utterance, ended.speech_ended_at, ended, name="turn-decided")

    async def _finish(self, utterance: Utterance, end_at: float, ended: TurnDecided | None) -> None:
        """The utterance's final transcript (the speculative pass when the policy decided) goes to the conversation."""
        self._conversation.set_input_state(State.TRANSCRIBING)
        started, generation = self._clock.now(), utterance.generation
        self._finishing += 1
        try:
            transcript = await utterance.transcript.finish(utterance.signal)
        finally:
            self._finishing -= 1
            if utterance.generation == generation:
                utterance.done = True
            self._conversation.set_input_state(State.IDLE if self._current is None else State.LISTENING)
        if utterance.generation != generation:
            return  # the person went on: the utterance is not over after all
        utterance.ended = transcript
        self._hand_over(utterance, transcript, end_at, self._metrics(utterance, ended, started))
        if self._current is None and not self._finishing:  # no pass runs, and none will until the user speaks
            await give_back_heap()

    def _hand_over(
        self, utterance: Utterance, transcript: Transcript, end_at: float, metrics: dict[str, float]
    ) -> None:
        """Words that are not Parley's own voice become the next input; anything else is dropped, on the record."""
        if not says_something(transcript):
            self._dropped(utterance, "no words" if not transcript.words else "only fillers", end_at, transcript)
        elif self._self_voice.rejected(utterance, transcript, "turn"):
            self._dropped(utterance, "own voice", end_at, transcript)
        else:
            provisional = utterance.policy is not None
            item = UserInput(transcript.text, "voice", metrics, provisional=provisional, ended_at=end_at)
            utterance.submitted = item
            self._conversation.submit(item)
            return
        utterance.drop_pause()
        if self._reopenable is utterance:
            self._reopenable = None

    def _dropped(self, utterance: Utterance, reason: str, end_at: float, transcript: Transcript | None = None) -> None:
        """Never silently: the record and whoever listens learn what was heard and why it is not a turn."""
        level = speech_level_dbfs(utterance.transcript.audio())
        detail = transcript.rejected if transcript is not None else ""
        dropped = UtteranceDropped(reason, round(max(0.0, end_at - utterance.started_at), 3), round(level, 1), detail)
        self._conversation.record(
            "utterance/dropped",
            reason=reason,
            detail=detail,
            start=utterance.started_at,
            end=end_at,
            level_dbfs=dropped.level_dbfs if math.isfinite(level) else None,
            text=transcript.text if transcript is not None else "",
        )
        if self._on_dropped is not None:
            self._on_dropped(dropped)

    # Going on after a pause ended the turn

    def _may_reopen(self, utterance: Utterance) -> bool:
        """Until any of its reply is heard (and while no tool has run for it), its turn can be taken back."""
        item = utterance.submitted
        return item is None or self._conversation.withdrawable(item)

    def _reopen(self, at: float) -> bool:
        """Speech begun at `at`, right after a pause ended the turn, before its reply was heard: the turn is taken
        back and the utterance goes on, its audio of the pause included."""
        utterance, self._reopenable = self._reopenable, None
        if utterance is None or not utterance.over:
            return False
        item = utterance.submitted
        if item is not None and not self._conversation.withdraw(item, at):
            return False
        self._barge_in.taken_back()
        utterance.reopen()
        self._current = utterance
        self._conversation.set_input_state(State.LISTENING)
        self._own(utterance.transcript.run, utterance.signal, name="asr-partials")
        self._turn_end.start(utterance)
        return True

    def _metrics(self, utterance: Utterance, ended: TurnDecided | None, started: float) -> dict[str, float]:
        """eot_ms: end of speech → turn decided; asr_final_ms: decided → its text ready; asr_ms: the pass's time."""
        now, pause = self._clock.now(), utterance.pause
        if ended is None:  # push-to-talk: the final pass ran after the release
            return {"asr_ms": round((now - started) * 1000, 1)}
        metrics = {
            "eot_ms": round((ended.at - ended.speech_ended_at) * 1000, 1),
            "asr_final_ms": round(max(0.0, now - ended.at) * 1000, 1),
        }
        if pause is not None and pause.asr_ms is not None:
            metrics["asr_ms"] = pause.asr_ms
        return metrics

    def _own(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        self._owned.start(fn, *args, name=f"{UTTERANCE_PART}{name}")


@asynccontextmanager
async def open_ears(
    conversation: ConversationPort,
    transcriber: Transcriber,
    detector: BargeInDetector,
    sink: AudioSink,
    clock: Clock,
    *,
    on_error: ErrorHandler,
    turn_taking: Callable[[], TurnTaking],
    on_dropped: Callable[[UtteranceDropped], None] | None = None,
    resume_false_interruptions: bool = True,
    played_words: PlayedWords | None = None,
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
            turn_taking=turn_taking,
            on_dropped=on_dropped,
            resume_false_interruptions=resume_false_interruptions,
            played_words=played_words,
        )
        try:
            yield ears
        finally:
            ears.close()
    await give_back_heap()  # the passes of an utterance the ears dropped, if any, have ended too


async def give_back_heap() -> None:
    """Each Whisper pass frees memory that glibc keeps for the next; once an utterance is over, hand it back. Not
    after every pass: the next pass would fault the pages in again (adapters/runtime/heap.py)."""
    await run_blocking(give_back_free_heap)
