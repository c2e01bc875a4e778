"""The words side of end-of-turn: a transcript whose last words are plainly unfinished is not a finished turn.

Only words that can hardly end an English request are listed ("about", "the", "and", "to"...), plus
Whisper's own marks of a cut-off phrase (a trailing comma, dash or ellipsis) and a turn that is
nothing but a discourse marker ("Well," "So,"). Words that often do end a request ("on", "in", "is",
"how", "like": "turn it on", "what is it like") are left to the acoustic model: calling a finished
turn unfinished costs the maximum wait, never a cut-off.

With a punctuating recogniser (Whisper ends each sentence it hears with . ? or !), a transcript with
no such mark at its end ("My favourite food is", "Set an alarm for seven") is a sentence going on.
"""

from __future__ import annotations

import re

UNFINISHED_WORDS = frozenset(
    """
    a an the my your our their
    and or but nor because although whereas than if whether
    about for to of from with between into onto towards toward without within among
    um uh er erm
    """.split()
)
OPENERS = frozenset("well so and but um uh er erm".split())  # a turn of only these is not a turn
CUT_MARKS = (",", "-", "\u2013", "\u2014", "...", "\u2026", ":", ";")
SENTENCE_ENDS = (".", "?", "!")
_WORD = re.compile(r"[a-z']+")
_CLOSING = "\"')\u201d\u2019 "


def looks_unfinished(text: str, *, punctuated: bool = False) -> bool:
    """True when `text` (a transcript of the turn so far) plainly stops mid-sentence.

    `punctuated`: the recogniser marks sentence ends, so a transcript without one at its end goes on.
    """
    stripped = text.strip()
    if not stripped:
        return False
    if stripped.endswith(CUT_MARKS):
        return True
    if punctuated and not stripped.rstrip(_CLOSING).endswith(SENTENCE_ENDS):
        return True
    words = _WORD.findall(stripped.lower())
    if not words:
        return False
    return words[-1] in UNFINISHED_WORDS or all(word in OPENERS for word in words)


def is_question(text: str) -> bool:
    """The transcript ends with a question mark."""
    return text.strip().rstrip(_CLOSING).endswith("?")


SURE_LAST_WORD = 0.6  # Whisper's probability for its last word: below it the word may be made up ("about [it].")
WORDS_REACH_S = 0.15  # the last word ends at most this long before the speech does: no word was left out


def ending_is_readable(last_word_end: float, last_word_probability: float, speech_end: float) -> bool:
    """Can a turn's end be read from its words? Not when Whisper is unsure of the last word (it completes a fragment:
    "Tell me about" becomes "Tell me about it.") or the last word ends well before the speech did (it dropped one:
    "... in the kitchen and" becomes "... in the kitchen."). Times in seconds on one clock."""
    return last_word_probability >= SURE_LAST_WORD and last_word_end >= speech_end - WORDS_REACH_S


def statement_to_read(text: str, last_word_end: float, last_word_probability: float, speech_end: float) -> bool:
    """Is this the transcript at a pause that the words model should read? A finished-looking statement (a question
    is decided without it, unfinished words hold the turn anyway) whose ending can be read."""
    finished = bool(text.strip()) and not looks_unfinished(text, punctuated=True) and not is_question(text)
    return finished and ending_is_readable(last_word_end, last_word_probability, speech_end)
