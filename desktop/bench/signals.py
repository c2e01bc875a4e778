"""Measurements taken on the signals themselves: speech onset in a clip, the output's last sound, word edits."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from audio.levels import speech_level_dbfs
from desktop.bench.everyday_match import words

Samples = npt.NDArray[np.float32]
ONSET_RMS = 0.01  # a 10 ms window this loud (about -40 dBFS) is speech, not the clip's noise floor
END_BELOW_DB = 20.0  # speech ends where it falls this far under its own level (-40 dBFS for a -20 dBFS voice)
NOISE_MARGIN_DB = 6.0  # ...and above the clip's noise floor by this much
SILENT_ABS = 1e-3  # the output counts as silent below this (the pipeline test's threshold)
ALIKE = 3  # the ear's word past the kept text is the reply's next one within a third of its letters misread


def onset_s(samples: Samples, rate: int) -> float:
    """Seconds from the clip's start to its first 10 ms window louder than ONSET_RMS (0 if none)."""
    window = max(1, rate // 100)
    usable = len(samples) // window * window
    if usable == 0:
        return 0.0
    rms = np.sqrt(np.mean(np.square(samples[:usable].reshape(-1, window)), axis=1))
    loud = np.flatnonzero(rms > ONSET_RMS)
    return float(loud[0] * window / rate) if len(loud) else 0.0


def offset_s(samples: Samples, rate: int) -> float | None:
    """Seconds from the clip's start to the end of its last 10 ms window of speech (None if none): louder than
    END_BELOW_DB under the clip's speech level (and clear of its noise floor), so a soft speaker's voice ends
    where it does, not where it falls under a fixed level (-40 dBFS is only 8 dB under a real -32 dBFS voice)."""
    window = max(1, rate // 100)
    usable = len(samples) // window * window
    if usable == 0:
        return None
    power = np.mean(np.square(samples[:usable].reshape(-1, window), dtype=np.float64), axis=1)
    threshold = max(10 ** (speech_level_dbfs(samples) / 10) * 10 ** (-END_BELOW_DB / 10), ONSET_RMS**2 / 100)
    threshold = max(threshold, float(np.percentile(power, 10)) * 10 ** (NOISE_MARGIN_DB / 10))
    loud = np.flatnonzero(power > threshold)
    return float((loud[-1] + 1) * window / rate) if len(loud) else None


def found_at(captured: Samples, clip: Samples) -> int:
    """The sample of `captured` at which `clip` begins (its best cross-correlation): the user's words are found
    under Parley's own loud echo, which does not correlate with them."""
    size = 1 << (len(captured) + len(clip) - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(captured, size) * np.conj(np.fft.rfft(clip, size)), size)[: len(captured)]
    return int(np.argmax(corr))


def silent_from_s(samples: Samples, rate: int, start_s: float, end_s: float) -> float:
    """The time (s) from which `samples` stay silent up to `end_s`; `start_s` if already silent there."""
    lo, hi = max(0, round(start_s * rate)), min(len(samples), round(end_s * rate))
    loud = np.flatnonzero(np.abs(samples[lo:hi]) > SILENT_ABS)
    return start_s if not len(loud) else (lo + int(loud[-1]) + 1) / rate


def normalise(text: str) -> list[str]:
    """Lower case, no punctuation, every number in digits ("nineteen", "19." and "19" are one word; "1,000" and
    "one thousand" are "1000"): the differences that are not heard as different. A written number is one word, as
    it is one word to the heard cursor (Piper's alignment times the written word)."""
    return words(text)


def word_edits(reference: str, hypothesis: str) -> int:
    """Levenshtein distance over normalised words."""
    return _edit_table(normalise(reference), normalise(hypothesis))[-1][-1]


def boundary_word_error(kept: str, transcript: str, reply: str | None = None) -> int:
    """Words kept that were not audible plus words audible that were not kept: what the cut got wrong.

    The two texts are aligned letter by letter (spaces dropped, so "dragon named" ~ "drag and named" costs
    little) with a free gap at the end of one side; the words (at least half) inside that gap are the error.
    Whisper's misreadings inside the sentence cost edits, not gap, so they do not count here.

    `reply`, the whole reply the model wrote (when known), reads what the ear heard past the kept text: the
    reply's next words count one each, and whatever the ear made of the rest ("of 99", "1,000,000" for a
    half-played "one thou-") is the cut word's fragment, one word however many the ear wrote.
    """
    kept_words, heard_words = normalise(kept), normalise(transcript)
    table = _edit_table(list("".join(kept_words)), list("".join(heard_words)))
    rows, cols = len(table) - 1, len(table[0]) - 1
    ends = [(table[rows][cols], 0, rows, cols)]
    ends += [(table[i][cols], rows - i, i, cols) for i in range(rows)]  # kept letters i.. not heard
    ends += [(table[rows][j], cols - j, rows, j) for j in range(cols)]  # heard letters j.. not kept
    _, _, i, j = min(ends)
    past, rest = _words_in_tail(heard_words, j), _rest(kept_words, reply)
    return len(_words_in_tail(kept_words, i)) + (len(past) if rest is None else past_the_cut(past, rest))


def _rest(kept: list[str], reply: str | None) -> list[str] | None:
    """The reply's words after the kept ones; None unknown, or if the kept words are not how the reply begins."""
    said = normalise(reply) if reply is not None else []
    return said[len(kept) :] if reply is not None and said[: len(kept)] == kept else None


def past_the_cut(past: list[str], rest: list[str]) -> int:
    """Words the ear heard past the kept text, read against the reply's next words: as many of those as the ear's
    first words spell in order (one as up to three of the ear's: "drag and" for "dragon"), plus one for anything
    after them (the cut word's fragment, whatever the ear made of it)."""
    reached = {(0, 0)}  # (reply words spelled, ear words used)
    frontier = [(0, 0)]
    while frontier:
        m, k = frontier.pop()
        for n in (1, 2, 3):
            if m < len(rest) and k + n <= len(past) and (m + 1, k + n) not in reached:
                if _alike(rest[m], "".join(past[k : k + n])):
                    reached.add((m + 1, k + n))
                    frontier.append((m + 1, k + n))
    m, k = max(reached, key=lambda mk: (mk[0], -mk[1]))
    return m + (k < len(past))


def _alike(said: str, heard: str) -> bool:
    """The ear's `heard` is the reply's `said`, misread by at most a third of its letters."""
    return ALIKE * _edit_table(list(said), list(heard))[-1][-1] <= len(said)


def _words_in_tail(tokens: list[str], start: int) -> list[str]:
    """Those of `tokens` (as one letter string) with at least half their letters at or after `start`."""
    found, position = [], 0
    for word in tokens:
        after = max(0, position + len(word) - max(start, position))
        if 2 * after >= len(word) > 0:
            found.append(word)
        position += len(word)
    return found


def _edit_table(ref: list[str], hyp: list[str]) -> list[list[int]]:
    """The Levenshtein table: cell [i][j] is the distance between ref[:i] and hyp[:j]."""
    table = [list(range(len(hyp) + 1))]
    for i, r in enumerate(ref, 1):
        row = [i]
        for j, h in enumerate(hyp, 1):
            row.append(min(table[-1][j] + 1, row[j - 1] + 1, table[-1][j - 1] + (r != h)))
        table.append(row)
    return table
