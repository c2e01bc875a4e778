"""The words side of end-of-turn: a transcript whose last words are plainly unfinished is not a finished turn.

Only words that can hardly end an English request are listed ("about", "the", "and", "to"...), plus
Whisper's own marks of a cut-off phrase (a trailing comma, dash or ellipsis) and a turn that is
nothing but a discourse marker ("Well," "So,"). Words that often do end a request ("on", "in", "is",
"how", "like": "turn it on", "what is it like") are left to the acoustic model: calling a finished
turn unfinished costs the maximum wait, never a cut-off.
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
_WORD = re.compile(r"[a-z']+")


def looks_unfinished(text: str) -> bool:
    """True when `text` (a transcript of the turn so far) plainly stops mid-sentence."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped.endswith(CUT_MARKS):
        return True
    words = _WORD.findall(stripped.lower())
    if not words:
        return False
    return words[-1] in UNFINISHED_WORDS or all(word in OPENERS for word in words)
