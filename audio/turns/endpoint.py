"""End of turn decided by evidence, not by one long silence: pure logic on an injected clock.

A short VAD silence (the VAD run with `PAUSE_SILENCE_MS`) opens the question "is the turn over?";
the policy answers `CheckTurn`: the caller runs the end-of-turn model on the audio up to now and
reports `model_said(pause, p)`, and reports the transcript and how far it reaches with `heard`
(a speculative final pass started at the same moment is what makes the words current). Then:

- the configured minimum silence is a floor: no turn ends with less silence;
- words that plainly stop mid-sentence ("about the", or no full stop from a punctuating recogniser) keep
  the turn open, up to the maximum wait;
- a transcript with no words (a cough, a breath, or words the recogniser could not make out) holds it
  `no_words_wait_ms`, then ends the utterance: it is no turn, unless the speaker goes on;
- finished-looking words end the turn as soon as the model hears a finished turn in the pause's audio
  (`complete`); when it doubts it, they hold it `doubt_wait_ms`, then end it.

The model is asked once per pause, at its start: asked again as the silence grows, it hears a finished turn
in any long enough silence, mid-sentence breaths included. A turn ended too soon is not lost: the listening
side reopens it if the speaker goes on before any of the reply was heard.

Speech before a decision resumes the turn (`TurnResumed`: drop whatever was started on the pause).
No devices, no threads, no sleeping: the caller calls `tick()` at `deadline()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from adapters.contract.clock import Clock
from audio.events import SpeechEnded, SpeechStarted
from audio.turns.words import looks_unfinished

PAUSE_SILENCE_MS = 100.0  # the VAD's min_silence_ms under this policy: the silence that opens the question
# (the model and the speculative final pass start then; a floor, min_silence_ms, keeps the decision for later)
EndReason = Literal["model", "doubt", "max_wait", "no_model", "no_words"]
EPSILON_S = 1e-6  # a deadline reached to within float rounding is reached


@dataclass(frozen=True)
class EndpointConfig:
    complete: float = 0.5  # a model probability at or above this ends the turn (given finished-looking words)
    max_wait_ms: float = 2000.0  # this much silence ends the turn whatever the evidence says
    min_silence_ms: float = 0.0  # the floor: no turn ends with less silence than this
    doubt_wait_ms: float = 600.0  # finished-looking words the model doubts hold the turn this long
    no_words_wait_ms: float = 1000.0  # a pause after sound with no words in it holds the utterance this long
    wait_for_words: bool = True  # decide only once the transcript reaches the start of the silence
    use_model: bool = True  # False: words and silence only; finished-looking words end it after no_model_wait_ms
    no_model_wait_ms: float = 600.0
    punctuated: bool = True  # the transcript marks sentence ends (Whisper): without a final . ? ! it goes on
    word_rules: bool = True  # the words can say "unfinished" (English only: audio.turns.words); False: model + silence


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
class TurnDecided:
    """The turn is over: its speech ended at `speech_ended_at`, the policy decided at `at`."""

    pause: int
    speech_ended_at: float
    at: float
    reason: EndReason


Decision = CheckTurn | TurnResumed | TurnDecided


@dataclass
class _Pause:
    id: int
    silence_from: float
    probability: float | None = None  # the model's answer to this pause's CheckTurn


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
        self._pause = _Pause(self._pauses, event.at)
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
        current.probability = probability
        return self._evaluate(self._clock.now())

    def tick(self) -> list[Decision]:
        """Time passed: end on a wait that ran out."""
        return self._evaluate(self._clock.now())

    def deadline(self) -> float | None:
        """The next clock time at which `tick()` may decide something (None: nothing is waiting on time)."""
        pause, now = self._pause, self._clock.now()
        if pause is None:
            return None
        times = (pause.silence_from + ms / 1000 for ms in (self.config.min_silence_ms, *self._waits(pause)))
        return min((t for t in times if t > now + EPSILON_S), default=None)

    def _waits(self, pause: _Pause) -> tuple[float, ...]:
        """The silences (ms) after which the evidence so far ends the turn."""
        config, words = self.config, self._words_of(pause)
        if (words is None and config.wait_for_words) or (words is not None and self._unfinished(words)):
            return (config.max_wait_ms,)
        if words is not None and not words.strip():
            return (config.max_wait_ms, config.no_words_wait_ms)
        return (config.max_wait_ms, config.doubt_wait_ms if config.use_model else config.no_model_wait_ms)

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

        def waited(ms: float) -> bool:
            return now + EPSILON_S >= pause.silence_from + ms / 1000

        if not waited(config.min_silence_ms):
            return []
        if waited(config.max_wait_ms):
            return [self._end(pause, now, "max_wait")]
        words = self._words_of(pause)
        if words is None:
            return [] if config.wait_for_words else self._judged(pause, now, waited)
        if not words.strip():
            return [self._end(pause, now, "no_words")] if waited(config.no_words_wait_ms) else []
        if self._unfinished(words):
            return []
        return self._judged(pause, now, waited)

    def _judged(self, pause: _Pause, now: float, waited: Callable[[float], bool]) -> list[Decision]:
        """Finished-looking words (or none awaited): the model's hearing of the pause decides, or the waits."""
        config = self.config
        if not config.use_model:
            return [self._end(pause, now, "no_model")] if waited(config.no_model_wait_ms) else []
        if pause.probability is not None and pause.probability >= config.complete:
            return [self._end(pause, now, "model")]
        return [self._end(pause, now, "doubt")] if waited(config.doubt_wait_ms) else []

    def _unfinished(self, words: str) -> bool:
        return self.config.word_rules and looks_unfinished(words, punctuated=self.config.punctuated)

    def _words_of(self, pause: _Pause) -> str | None:
        """The transcript, if it reaches the start of this pause's silence."""
        if self._words is None or self._words[1] < pause.silence_from:
            return None
        return self._words[0]

    def _end(self, pause: _Pause, now: float, reason: EndReason) -> TurnDecided:
        self._pause, self._words = None, None
        return TurnDecided(pause.id, pause.silence_from, now, reason)
