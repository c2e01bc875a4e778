"""Cut a streaming LLM reply into speakable segments: the first early (time to first audio), the rest at sentence ends.

Segments are exact, contiguous slices of the generated text: concatenated, they give back the text
fed so far (less a trailing part with nothing to say), so the words heard are always a word-wise
prefix of the reply. A boundary is only taken once the character after it has arrived, which is
what keeps "3.14", "e.g.", "U.S.", URLs and e-mail addresses whole across deltas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from adapters.tts.speakable import Speakable, to_speakable

FIRST_CLAUSE_WORDS = 3
MAX_CHARS = 240  # bounds one synthesis step even for text without punctuation

_CLOSERS = "\"'\u201d\u2019)]*_`"  # quotes (straight and curly), brackets, markdown closers
_SENTENCE = re.compile(rf"[.!?…]+[{re.escape(_CLOSERS)}]*(?=\s)|\n")
_CLAUSE = re.compile(rf"[,;:][{re.escape(_CLOSERS)}]*(?=\s)|\s[-\u2013\u2014](?=\s)|\u2014(?=\S)")  # en and em dashes
_LAST_TOKEN = re.compile(r"(\S+)$")
_WORD = re.compile(r"\w+")
_INITIALISM = re.compile(r"^(?:[A-Za-z]\.){2,}$|^[A-Z]\.$")
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t]*\d{1,3}\.$")
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc no nos fig figs approx inc ltd co corp dept est mt ave blvd rd "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun cf al ca min max ft "
    "oz lb lbs vol pp gen col lt sgt capt gov sen rep rev hon".split()
)


@dataclass(frozen=True)
class SpeechSegment:
    """An exact slice `[start, start + len(text))` of the generated text, and what of it is spoken."""

    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @cached_property
    def speakable(self) -> Speakable:
        return to_speakable(self.text)


class SpeechChunker:
    """Fed text deltas, yields segments; `flush()` at the end of the reply yields the rest."""

    def __init__(self, *, first_clause_words: int | None = FIRST_CLAUSE_WORDS, max_chars: int = MAX_CHARS) -> None:
        """`first_clause_words=None` cuts at sentence ends only (for text that is not a reply's start)."""
        self._first_clause_words = first_clause_words
        self._max_chars = max_chars
        self._buffer = ""
        self._offset = 0  # where the buffer starts in the whole text
        self._emitted = 0

    def feed(self, delta: str) -> list[SpeechSegment]:
        self._buffer += delta
        return self._drain()

    def flush(self) -> list[SpeechSegment]:
        segments = self._drain()
        if self._buffer and to_speakable(self._buffer).has_words:
            segments.append(self._cut(len(self._buffer)))
        self._offset += len(self._buffer)
        self._buffer = ""
        return segments

    def _drain(self) -> list[SpeechSegment]:
        segments: list[SpeechSegment] = []
        search_from = 0
        while (end := self._boundary(search_from)) is not None:
            if to_speakable(self._buffer[:end]).has_words:
                segments.append(self._cut(end))
                search_from = 0
            else:
                search_from = end  # nothing to say yet: it will lead the next segment
        return segments

    def _cut(self, end: int) -> SpeechSegment:
        segment = SpeechSegment(self._buffer[:end], self._offset)
        self._buffer = self._buffer[end:]
        self._offset += end
        self._emitted += 1
        return segment

    def _boundary(self, search_from: int) -> int | None:
        """End of the next segment in the buffer (always past `search_from`), or None while more text is needed.

        `max_chars` bounds the segment from its first spoken word on: leading markup, emoji and
        whitespace cost no synthesis and are not counted.
        """
        lead = to_speakable(self._buffer).first_word_at()
        start = max(search_from, lead)
        window = self._buffer[: lead + self._max_chars]
        ends = [_sentence_end(window, start)]
        if self._emitted == 0 and self._first_clause_words is not None:
            ends.append(_clause_end(window, start, self._first_clause_words))
        found = [end for end in ends if end is not None]
        if found:
            return min(found)
        if len(self._buffer) > len(window) > start:
            return _forced(window, start)
        return None


def _sentence_end(window: str, search_from: int) -> int | None:
    for match in _SENTENCE.finditer(window, search_from):
        if match.group() == "\n":
            if match.start() > search_from:
                return match.start()
        elif not _keeps_going(window, match.start(), match.group()):
            return match.end()
    return None


def _clause_end(window: str, search_from: int, min_words: int) -> int | None:
    for match in _CLAUSE.finditer(window, search_from):
        if len(_WORD.findall(window[: match.start()])) >= min_words:
            return match.end()
    return None


def _keeps_going(text: str, at: int, mark: str) -> bool:
    """True when the period at `at` ends an abbreviation, an initial or a list number, not a sentence."""
    if not mark.startswith(".") or mark.startswith(".."):
        return False
    token = _LAST_TOKEN.search(text[: at + 1])
    word = token.group(1).lstrip("([\"'\u201c\u2018") if token else ""
    if word[:-1].lower() in ABBREVIATIONS or _INITIALISM.search(word):
        return True
    return bool(_LIST_NUMBER.search(text[: at + 1]))


def _forced(window: str, search_from: int) -> int:
    """An over-long stretch without a sentence end: cut after its last clause mark, else its last space."""
    clauses = [m.end() for m in _CLAUSE.finditer(window, search_from)]
    if clauses:
        return clauses[-1]
    space = max(window.rfind(" ", search_from + 1), window.rfind("\n", search_from + 1))
    return space if space > search_from else len(window)
