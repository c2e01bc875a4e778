"""Word timings from Piper's phoneme alignments (pure: phonemes and sample counts in, word spans out).

Piper reports, per sentence chunk, each phoneme with the number of audio samples it produced. To
know which phonemes belong to which *text* word — even where espeak reads "$3.50" as five words,
"Dr." as "doctor", or runs "I am" together into one phoneme word — each text word is phonemized on its own,
and that expected phoneme sequence is aligned to the spoken one (difflib's longest matching blocks;
unmatched stretches are shared out in order). A word then sounds from the start of its first
phoneme to the end of its last one; pauses, spaces and punctuation belong to no word.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

PIPER_MARKERS = frozenset("^$_ ")  # BOS, EOS, PAD and the word separator
MIN_MATCH_RATIO = 0.5  # below this the alignment is a guess and is reported as estimated


@dataclass(frozen=True)
class Token:
    """A word of the spoken text (`[start, end)` characters) and its phonemes when read alone."""

    start: int
    end: int
    phonemes: tuple[str, ...]


@dataclass(frozen=True)
class Phone:
    """A spoken phoneme and its `[start, end)` sample span in the segment audio."""

    symbol: str
    start: int
    end: int


@dataclass(frozen=True)
class Span:
    """Where token `token` sounds, in samples of the segment audio."""

    token: int
    start: int
    end: int


def is_sounded(symbol: str) -> bool:
    """True for phonemes (and stress marks); False for markers, spaces and punctuation."""
    if not symbol or symbol in PIPER_MARKERS:
        return False
    return not all(unicodedata.category(char)[0] in "PZS" for char in symbol)


def phones_of(alignments: Iterable[tuple[str, int]], offset: int = 0) -> list[Phone]:
    """Sounded phones with absolute sample spans from `(phoneme, num_samples)` pairs starting at `offset`."""
    phones: list[Phone] = []
    position = offset
    for symbol, count in alignments:
        if is_sounded(symbol) and count > 0:
            phones.append(Phone(symbol, position, position + count))
        position += count
    return phones


def align(tokens: Sequence[Token], phones: Sequence[Phone]) -> tuple[list[Span], float]:
    """Each token's sample span, and how well the expected phonemes matched the spoken ones (0..1)."""
    expected = [
        (symbol, index) for index, token in enumerate(tokens) for symbol in token.phonemes if is_sounded(symbol)
    ]
    if not expected or not phones:
        return [], 0.0
    matcher = SequenceMatcher(None, [s for s, _ in expected], [p.symbol for p in phones], autojunk=False)
    owners = _owners(matcher, [index for _, index in expected], len(phones))
    return _spans(owners, phones), matcher.ratio()


def _owners(matcher: SequenceMatcher[str], labels: list[int], count: int) -> list[int]:
    """The token that owns each spoken phone; non-decreasing because opcodes come in order."""
    owners = [0] * count
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for j in range(j1, j2):
            if tag == "equal":
                owners[j] = labels[i1 + j - j1]
            elif tag == "replace":
                owners[j] = labels[i1 + (j - j1) * (i2 - i1) // (j2 - j1)]
            else:  # "insert": sounds nobody expected belong to the word being spoken
                owners[j] = labels[max(i1 - 1, 0)]
    return owners


def _spans(owners: list[int], phones: Sequence[Phone]) -> list[Span]:
    spans: list[Span] = []
    for owner, phone in zip(owners, phones, strict=True):
        if spans and spans[-1].token == owner:
            spans[-1] = Span(owner, spans[-1].start, phone.end)
        else:
            spans.append(Span(owner, phone.start, phone.end))
    return spans


def proportional(tokens: Sequence[Token], total_samples: int) -> list[Span]:
    """Without alignments: share the audio out by characters (an estimate, and reported as one)."""
    weights = [token.end - token.start for token in tokens]
    total = sum(weights)
    if not total or total_samples <= 0:
        return []
    spans: list[Span] = []
    done = 0
    for index, weight in enumerate(weights):
        start = done * total_samples // total
        done += weight
        spans.append(Span(index, start, done * total_samples // total))
    return spans
