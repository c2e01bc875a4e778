"""The last line of defence against Parley hearing itself: an utterance whose words are the words Parley was
playing at that very moment (shifted by no more than the echo's delay) is its own voice, whatever the acoustics
said. A pure function of the two word timelines, for the pipeline to call before it starts a turn.

A user who merely shares a word or two with the reply is not matched: every heard word must be one being played
then (all but one of five or more), in order, each within the echo's delay of when it was played.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ECHO_LAG_S = (-0.15, 0.6)  # a heard word starts this long after the played one (ASR timing error, acoustic path)
_NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve".split()


@dataclass(frozen=True)
class TimedWord:
    text: str
    start: float  # clock seconds
    end: float


@dataclass(frozen=True)
class OwnVoice:
    """The verdict and its evidence (for the journal's `barge_in/echo_rejected`)."""

    own: bool
    heard_words: int
    matched: tuple[tuple[str, float], ...]  # (word, lag in seconds: heard start - played start) per match

    @property
    def share(self) -> float:
        return len(self.matched) / self.heard_words if self.heard_words else 0.0


def normalise(word: str) -> str:
    """Lower case, letters and digits only, small numbers as words ("2" and "two" are the same word)."""
    clean = re.sub(r"[^a-z0-9]", "", word.lower())
    return _NUMBERS[int(clean)] if clean.isdigit() and int(clean) < len(_NUMBERS) else clean


def _same(heard: str, played: str) -> bool:
    if heard == played:
        return True
    if min(len(heard), len(played)) < 5 or abs(len(heard) - len(played)) > 1:
        return False
    return _edits(heard, played) <= 1  # "lighthouse" / "lighthouses": an ASR slip on a long word


def _edits(a: str, b: str) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def own_voice(
    heard: Sequence[TimedWord], played: Sequence[TimedWord], lag_s: tuple[float, float] = ECHO_LAG_S
) -> OwnVoice:
    """Match `heard` (the utterance's words, timed) in order against `played` (what the speaker played, timed
    on the same clock): the longest chain of heard words each equal to a played word that started within
    `lag_s` before it."""
    words = [(normalise(w.text), w.start) for w in heard]
    words = [(text, start) for text, start in words if text]
    said = [(normalise(w.text), w.start) for w in played]
    low, high = lag_s
    # best[j]: the longest chain of matches ending with played word j
    best: dict[int, tuple[tuple[str, float], ...]] = {}
    for text, start in words:
        earlier = dict(best)  # chains of the words before this one: each heard word is used once
        for j, (played_text, played_start) in enumerate(said):
            lag = start - played_start
            if not (low <= lag <= high and _same(text, played_text)):
                continue
            before = max((earlier[k] for k in earlier if k < j), key=len, default=())
            candidate = (*before, (text, round(lag, 3)))
            if len(candidate) > len(best.get(j, ())):
                best[j] = candidate
    matched = max(best.values(), key=len, default=())
    allowed_misses = 1 if len(words) >= 5 else 0
    own = bool(words) and len(words) - len(matched) <= allowed_misses
    return OwnVoice(own, len(words), matched)
