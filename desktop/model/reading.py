"""The live reading position: which words of a reply the listener has heard so far, while it is spoken.

It is the journal's own boundary, taken early: the speech port's report (segments, word timings, ms played)
mapped to words by engine.heard, the function that decides what an interrupted reply keeps. Cheap enough
to ask a few times a second: a report is a tuple per synthesized segment, and the mapping walks its words.
"""

from __future__ import annotations

from engine.heard import heard_of
from engine.speech import SpeechKey, SpeechOutput


def heard_so_far(speech: SpeechOutput, turn: int, step: int, attempt: int) -> str:
    """The words of one step's reply heard by now (word-exact, as `assistant/message` would keep them)."""
    key = SpeechKey(turn, step, attempt)
    return heard_of(s for s in speech.report(turn) if s.key == key).text
