"""The words side of turn-taking: fillers are no turn, and a transcript whose last words are plainly unfinished is
not a finished turn.

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

from adapters.contract.speech_io import Transcript

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
# Backchannels: the listener is following along, not taking the turn. They neither interrupt nor get answered.
FILLERS = frozenset("ah aha eh er hm hmm huh mhm mm mmm oh uh uhhuh um ummm mmhmm yeah".split())


def says_something(transcript: Transcript) -> bool:
    """True when the transcript holds a word that is not a filler or backchannel (a number is a word: "1 0 0 0 1")."""
    words = ("".join(ch for ch in w.text.lower() if ch.isalnum()) for w in transcript.words)
    return any(word and word not in FILLERS for word in words)


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
