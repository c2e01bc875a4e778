"""Keep Whisper from putting words in a silent mouth: an energy gate and per-segment confidence filters.

tiny.en decodes *something* for any 30 s window: "." for silence, and for noise or a breath after
speech an invented phrase ("Thank you.", "I'm going to do that.") with a high no-speech probability
and a low log-probability. The thresholds are Whisper's own (no_speech 0.6, avg_logprob -1.0),
plus a stricter rule for the few phrases tiny.en is known to invent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np

from adapters.contract.speech_io import Samples

QUIET_DBFS = -60.0  # below this the input is silence: the model is not even run
NO_SPEECH_PROB = 0.6
AVG_LOGPROB = -1.0
SUSPECT_NO_SPEECH_PROB = 0.3
SUSPECT_WORD_PROB = 0.5
SQUEEZED_S = 0.05  # a closing run of words each begun less than this after the one before has no audio...
SQUEEZED_RUN = 3  # ...under it when it is this many words or more
KNOWN_HALLUCINATIONS = frozenset(
    {"thank you", "thanks for watching", "thank you for watching", "you", "bye", "thank you very much"}
)
_WORDLIKE = re.compile(r"\w")
_NORMALISE = re.compile(r"[^a-z' ]+")


class DecodedWord(Protocol):
    @property
    def word(self) -> str: ...

    @property
    def probability(self) -> float: ...


class TimedWord(Protocol):
    @property
    def start(self) -> float: ...

    @property
    def end(self) -> float: ...


W = TypeVar("W", bound=TimedWord)


class DecodedSegment(Protocol):
    """The parts of a faster-whisper `Segment` the guard looks at."""

    @property
    def text(self) -> str: ...

    @property
    def no_speech_prob(self) -> float: ...

    @property
    def avg_logprob(self) -> float: ...


def dbfs(samples: Samples) -> float:
    """Root-mean-square level in dB relative to full scale (-inf for digital silence)."""
    if len(samples) == 0:
        return float("-inf")
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return 20.0 * float(np.log10(rms)) if rms > 0 else float("-inf")


def too_quiet(samples: Samples) -> bool:
    return dbfs(samples) < QUIET_DBFS


def is_wordlike(text: str) -> bool:
    """A word with at least one letter or digit (Whisper emits bare "." words on silence)."""
    return bool(_WORDLIKE.search(text))


def left_out(segment: DecodedSegment, word_probabilities: list[float]) -> str | None:
    """Why a segment is most likely the model talking over silence or noise (None: keep it)."""
    if segment.no_speech_prob > NO_SPEECH_PROB and segment.avg_logprob < AVG_LOGPROB:
        return "no speech"
    if not word_probabilities:
        return "no words"
    if _normalised(segment.text) in KNOWN_HALLUCINATIONS:
        mean_probability = sum(word_probabilities) / len(word_probabilities)
        sure = segment.no_speech_prob < SUSPECT_NO_SPEECH_PROB and mean_probability >= SUSPECT_WORD_PROB
        return None if sure else "a phrase the model invents over noise"
    return None


def _normalised(text: str) -> str:
    return " ".join(_NORMALISE.sub(" ", text.lower()).split())


def before_squeezed(words: Sequence[W]) -> Sequence[W]:
    """The words less a closing run that the decoder timed into almost no audio. Past the end of what it heard,
    a fallback decode repeats itself: "what is 2 plus 2? What is 2 plus 2?", the second five words all begun at
    0.94 s, came out of a barge-in and became the user's message (issue 36). Nobody begins three words in a row
    within 50 ms of each other."""
    first = len(words)
    while first > 0 and (first == len(words) or words[first].start - words[first - 1].start < SQUEEZED_S):
        first -= 1
    return words[:first] if len(words) - first >= SQUEEZED_RUN else words
