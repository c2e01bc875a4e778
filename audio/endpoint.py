"""End of turn decided by evidence, not by one long silence: pure logic on an injected clock.

A short VAD silence (the VAD run with `PAUSE_SILENCE_MS`) opens the question "is the turn over?";
the policy answers `CheckTurn`: the caller runs the end-of-turn model on the audio up to now and
reports `model_said(pause, p)`, and reports the transcript and how far it reaches with `heard`
(a speculative final pass started at the same moment is what makes the words current). Then:

- the configured minimum silence is a floor: no turn ends with less silence;
- words that plainly stop mid-sentence ("about the", or no full stop from a punctuating recogniser) keep
  the turn open, up to the maximum wait; optionally, words that are not a question hold it a little longer
  (`statement_wait_ms`), unless a words model (`words_said`) finds a sentence very likely ends with them;
- a transcript with no words at all (a cough, a breath) ends the utterance at once: it is no turn;
- otherwise a probability at or above `complete` ends the turn at once; a lower one is asked again
  every `reask_ms` of further silence, and the maximum wait ends the turn whatever the evidence says.

Speech before a decision resumes the turn (`TurnResumed`: drop whatever was started on the pause).
No devices, no threads, no sleeping: the caller calls `tick()` at `deadline()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from audio.events import SpeechEnded, SpeechStarted
from audio.turn_words import is_question, looks_unfinished

PAUSE_SILENCE_MS = 100.0  # the VAD's min_silence_ms under this policy: the silence that opens the question
# (the model and the speculative final pass start then; a floor, min_silence_ms, keeps the decision for later)
EndReason = Literal["model", "max_wait", "no_model", "no_words"]
EPSILON_S = 1e-6  # a deadline reached to within float rounding is reached


class Clock(Protocol):
    def now(self) -> float: ...


@dataclass(frozen=True)
class EndpointConfig:
    complete: float = 0.5  # a model probability at or above this ends the turn (given finished-looking words)
    max_wait_ms: float = 2000.0  # this much silence ends the turn whatever the evidence says
    min_silence_ms: float = 0.0  # the floor: no turn ends with less silence than this
    reask_ms: float = 300.0  # after a "not finished" answer, ask again this much later (0: never)
    wait_for_words: bool = True  # decide only once the transcript reaches the start of the silence
    use_model: bool = True  # False: words and silence only; finished-looking words end it after no_model_wait_ms
    no_model_wait_ms: float = 600.0
    punctuated: bool = True  # the transcript marks sentence ends (Whisper): without a final . ? ! it goes on
    statement_wait_ms: float = 0.0  # finished-looking words that are not a question hold the turn this long...
    sentence_end: float = 0.001  # ...unless the words model gives the end of the message after them this much:
    sentence_wait_ms: float = 0.0  # then they hold it this long


@dataclass(frozen=True)
class CheckTurn:
    """Command: ask the end-of-turn model about the audio up to `at`, then call `model_said(pause, p)`."""

    pause: int
    silence_from: float
    at: float


@dataclass(frozen=True)
class TurnResumed:
    """The speaker went on before the turn was decided: drop whatever was started on pause `pause`."""

    pause: int
    at: float


@dataclass(frozen=True)
class TurnEnded:
    """The turn is over: its speech ended at `speech_ended_at`, the policy decided at `at`."""

    pause: int
    speech_ended_at: float
    at: float
    reason: EndReason


Decision = CheckTurn | TurnResumed | TurnEnded


@dataclass
class _Pause:
    id: int
    silence_from: float
    asked_at: float
    pending: bool = True  # a CheckTurn is out and not answered yet
    probability: float | None = None
    sentence: tuple[str, float] | None = None  # (words, P(the message ends with them)) from the words model


class EndpointPolicy:
    """Feed it VAD events, transcripts and model answers; it says when the turn ended. One per input stream."""

    def __init__(self, clock: Clock, config: EndpointConfig | None = None) -> None:
        self.config = config or EndpointConfig()
        self._clock = clock
        self._speaking = False
        self._pause: _Pause | None = None
        self._pauses = 0
        self._words: tuple[str, float] | None = None  # (text, clock time up to which it covers the audio)

    @property
    def in_turn(self) -> bool:
        """The user is speaking or in a pause the policy has not decided on."""
        return self._speaking or self._pause is not None

    def on_vad(self, event: SpeechStarted | SpeechEnded) -> list[Decision]:
        if isinstance(event, SpeechStarted):
            return self._speech_started(event.at)
        if not self._speaking:
            return []
        self._speaking = False
        self._pauses += 1
        now = self._clock.now()
        self._pause = _Pause(self._pauses, event.at, now)
        return [CheckTurn(self._pauses, event.at, now), *self._evaluate(now)]

    def heard(self, text: str, until: float) -> list[Decision]:
        """The turn's transcript so far, covering its audio up to clock time `until`."""
        if not self.in_turn:
            return []
        self._words = (text, until)
        return self._evaluate(self._clock.now())

    def model_said(self, pause: int, probability: float) -> list[Decision]:
        """The model's answer to `CheckTurn(pause)`; answers about a pause that is over are ignored."""
        current = self._pause
        if current is None or current.id != pause:
            return []
        current.probability, current.pending = probability, False
        return self._evaluate(self._clock.now())

    def words_said(self, pause: int, text: str, probability: float) -> list[Decision]:
        """The words model's answer for `text` at pause `pause`: P(the user's message ends with these words)."""
        current = self._pause
        if current is None or current.id != pause:
            return []
        current.sentence = (text, probability)
        return self._evaluate(self._clock.now())

    def tick(self) -> list[Decision]:
        """Time passed: end on the maximum wait, or ask the model again."""
        return self._evaluate(self._clock.now())

    def deadline(self) -> float | None:
        """The next clock time at which `tick()` may decide something (None: nothing is waiting on time)."""
        pause, config, now = self._pause, self.config, self._clock.now()
        if pause is None:
            return None
        times = [pause.silence_from + ms / 1000 for ms in (config.max_wait_ms, config.min_silence_ms)]
        times.append(pause.silence_from + config.statement_wait_ms / 1000)
        times.append(pause.silence_from + config.sentence_wait_ms / 1000)
        if not config.use_model:
            times.append(pause.silence_from + config.no_model_wait_ms / 1000)
        if self._may_reask(pause):
            times.append(pause.asked_at + config.reask_ms / 1000)
        return min((t for t in times if t > now + EPSILON_S), default=None)

    def _speech_started(self, at: float) -> list[Decision]:
        if self._speaking:
            return []
        self._speaking = True
        pause, self._pause = self._pause, None
        if pause is None:
            self._words = None  # a new turn
            return []
        return [TurnResumed(pause.id, at)]

    def _evaluate(self, now: float) -> list[Decision]:
        pause, config = self._pause, self.config
        if pause is None:
            return []

        def waited(ms: float, since: float = pause.silence_from) -> bool:
            return now + EPSILON_S >= since + ms / 1000

        if not waited(config.min_silence_ms):
            return []
        if waited(config.max_wait_ms):
            return [self._end(pause, now, "max_wait")]
        words = self._words_of(pause)
        if words is not None and not words.strip():
            return [self._end(pause, now, "no_words")]
        if (words is None and config.wait_for_words) or (words is not None and self._unfinished(words)):
            return []
        if words is not None and not is_question(words) and not waited(self._statement_wait(pause, words)):
            return []
        if not config.use_model:
            return [self._end(pause, now, "no_model")] if waited(config.no_model_wait_ms) else []
        if pause.probability is not None and pause.probability >= config.complete:
            return [self._end(pause, now, "model")]
        if self._may_reask(pause) and waited(config.reask_ms, pause.asked_at):
            pause.asked_at, pause.pending = now, True
            return [CheckTurn(pause.id, pause.silence_from, now)]
        return []

    def _may_reask(self, pause: _Pause) -> bool:
        """The model said "not finished" and nothing else holds the turn open."""
        config, words = self.config, self._words_of(pause)
        if not config.use_model or config.reask_ms <= 0 or pause.pending or pause.probability is None:
            return False
        return pause.probability < config.complete and not (words is not None and self._unfinished(words))

    def _statement_wait(self, pause: _Pause, words: str) -> float:
        """How long these finished-looking words hold the turn: less when the words model judged these very words
        and found that a message very likely ends with them."""
        config, sentence = self.config, pause.sentence
        if sentence is not None and sentence[0] == words and sentence[1] >= config.sentence_end:
            return min(config.sentence_wait_ms, config.statement_wait_ms)
        return config.statement_wait_ms

    def _unfinished(self, words: str) -> bool:
        return looks_unfinished(words, punctuated=self.config.punctuated)

    def _words_of(self, pause: _Pause) -> str | None:
        """The transcript, if it reaches the start of this pause's silence."""
        if self._words is None or self._words[1] < pause.silence_from:
            return None
        return self._words[0]

    def _end(self, pause: _Pause, now: float, reason: EndReason) -> TurnEnded:
        self._pause, self._words = None, None
        return TurnEnded(pause.id, pause.silence_from, now, reason)
