"""Cut a streaming LLM reply into speakable segments: the first early (time to first audio), the rest at sentence ends.

The first segment ends at the first clause mark after a few words; a reply's voice (`first_phrase`) may end it
sooner, before the word that opens the sentence's next phrase ("The time | is 9:02 PM."): the first audio then
waits for two or three words of the model and a short synthesis instead of a whole sentence of each. The seam is a
phrase break, not a sentence break: the segment is marked `phrase` and its speaker trims the silence Piper ends it
with (adapters.tts.tail).

Segments are exact, contiguous slices of the generated text: concatenated, they give back the text
fed so far (less a trailing part with nothing to say), so the words heard are always a word-wise
prefix of the reply. A boundary is only taken once the character after it has arrived, which is
what keeps "3.14", "e.g.", "U.S.", URLs and e-mail addresses whole across deltas. Two exceptions, for the first
audio, which would otherwise wait one token more: the first segment may end at a comma, semicolon, question or
exclamation mark right after a letter of a plain word ("Once upon a time,") as soon as the mark comes (nothing
after it could take it into a word; had a closing quote or another mark come with it, the boundary would have
been after those), and before a phrase's opening word as soon as that word comes (`_phrase_end`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from adapters.tts.speakable import Speakable, to_speakable

FIRST_CLAUSE_WORDS = 3
PHRASE_WORDS = (2, 7)  # a first phrase has this many words (at least, at most) before the word that opens the next
# Words that open a phrase: a verb after its subject, a preposition, a conjunction or a relative. Not "of" or
# "to", which bind too tightly to the word before ("the capital | of France").
PHRASE_OPENERS = frozenset(
    "is are was were will would can could should may might must has have had does do did "
    "in on at for with about from by into over under after before during "
    "and but or so because that which who when where while if than".split()
)
MAX_CHARS = 240  # bounds one synthesis step even for text without punctuation

_CLOSERS = "\"'\u201d\u2019)]*_`"  # quotes (straight and curly), brackets, markdown closers
_SENTENCE = re.compile(rf"[.!?…]+[{re.escape(_CLOSERS)}]*(?=\s)|\n")
_CLAUSE = re.compile(rf"[,;:][{re.escape(_CLOSERS)}]*(?=\s)|\s[-\u2013\u2014](?=\s)|\u2014(?=\S)")  # en and em dashes
_LAST_TOKEN = re.compile(r"(\S+)$")
SETTLED_MARKS = ",;!?"  # right after a letter, these end the first segment as soon as they come ...
MARK_GOES_ON = _CLOSERS + ",;:!?.…"  # ... unless one of these came with them
_SETTLED = re.compile(rf"(?<=[^\W\d_])[{SETTLED_MARKS}](?![{re.escape(MARK_GOES_ON)}])")
_SENTENCE_MARKS = "!?"  # of those, the ones that end a sentence: they need no words before them
_ADDRESS = re.compile(r"[./@:=&#_\\]")  # a word holding these is an address or a path ("a.b?c"): no early end
_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\S+")
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
    phrase: bool = False  # it ends inside a sentence, before a phrase's first word: the sentence goes on

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @cached_property
    def speakable(self) -> Speakable:
        return to_speakable(self.text)


class SpeechChunker:
    """Fed text deltas, yields segments; `flush()` at the end of the reply yields the rest."""

    def __init__(
        self,
        *,
        first_clause_words: int | None = FIRST_CLAUSE_WORDS,
        max_chars: int = MAX_CHARS,
        first_phrase: bool = False,
    ) -> None:
        """`first_clause_words=None` cuts at sentence ends only (for text that is not a reply's start);
        `first_phrase` lets the first segment end before a phrase's opening word (for a speaker that trims it)."""
        self._first_clause_words = first_clause_words
        self._first_phrase = first_phrase
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
        while (found := self._boundary(search_from)) is not None:
            end, phrase = found
            if to_speakable(self._buffer[:end]).has_words:
                segments.append(self._cut(end, phrase=phrase))
                search_from = 0
            else:
                search_from = end  # nothing to say yet: it will lead the next segment
        return segments

    def _cut(self, end: int, *, phrase: bool = False) -> SpeechSegment:
        segment = SpeechSegment(self._buffer[:end], self._offset, phrase)
        self._buffer = self._buffer[end:]
        self._offset += end
        self._emitted += 1
        return segment

    def _boundary(self, search_from: int) -> tuple[int, bool] | None:
        """End of the next segment in the buffer (always past `search_from`) and whether it is a first phrase's end,
        or None while more text is needed.

        `max_chars` bounds the segment from its first spoken word on: leading markup, emoji and
        whitespace cost no synthesis and are not counted.
        """
        lead = to_speakable(self._buffer).first_word_at()
        start = max(search_from, lead)
        window = self._buffer[: lead + self._max_chars]
        ends = [_sentence_end(window, start)]
        phrase = None
        if self._emitted == 0 and self._first_clause_words is not None:
            ends.append(_clause_end(window, start, self._first_clause_words))
            ends.append(_settled_end(self._buffer, start, len(window), self._first_clause_words))
            ends_here = len(window) == len(self._buffer)  # the window ends where the text so far does
            phrase = _phrase_end(window, start, ends_here) if self._first_phrase else None
        found = [end for end in [*ends, phrase] if end is not None]
        if found:
            end = min(found)
            return end, end == phrase
        if len(self._buffer) > len(window) > start:
            return _forced(window, start), False
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


def _settled_end(text: str, search_from: int, limit: int, min_words: int) -> int | None:
    """The end of the first settled mark (`_SETTLED`) before `limit` that is not in an address, with `min_words`
    before it if it is a clause mark; the character after it need not have come."""
    for match in _SETTLED.finditer(text, search_from):
        if match.end() > limit:
            break
        word = text[: match.start()].split()[-1]
        enough = match.group() in _SENTENCE_MARKS or len(_WORD.findall(text[: match.start()])) >= min_words
        if enough and not _ADDRESS.search(word):
            return match.end()
    return None


def _phrase_end(window: str, search_from: int, ends_here: bool) -> int | None:
    """The end of the word before a phrase's opening word ("The time| is"), with PHRASE_WORDS words before it and
    no punctuation between the two. The opening word is taken as it comes (`ends_here`: it ends the text so far):
    a model's tokens keep common words whole, so " is" is "is", not the start of "island"; were it one, the cut
    would fall before a noun, a phrase break that only sounds a little early."""
    fewest, most = PHRASE_WORDS
    tokens = list(_TOKEN.finditer(window, search_from))
    for index in range(fewest, min(most, len(tokens) - 1) + 1):
        before, opener = tokens[index - 1], tokens[index]
        whole = opener.end() < len(window) or ends_here
        same_line = "\n" not in window[before.end() : opener.start()]
        if whole and same_line and opener.group() in PHRASE_OPENERS and before.group()[-1].isalnum():
            return before.end()
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
