"""The languages Parley can be set to ([speech] language): "detect" or one of these ISO 639-1 codes. Each has a
translated system prompt (engine.prompt) and at least one voice in the model catalogue; English is the default,
and the only language with end-of-turn word rules (audio.turns.words)."""

from __future__ import annotations

from dataclasses import dataclass

DETECT = "detect"
ENGLISH = "en"


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-1, as Whisper takes it
    name: str  # in English, for messages
    native: str  # as its speakers write it, for the Settings list


LANGUAGES = {
    lang.code: lang
    for lang in (
        Language("en", "English", "English"),
        Language("de", "German", "Deutsch"),
        Language("fr", "French", "Français"),
        Language("es", "Spanish", "Español"),
        Language("it", "Italian", "Italiano"),
    )
}
CHOICES = (*LANGUAGES, DETECT)


def language_name(code: str) -> str:
    """`German`, or for "detect" what it means."""
    return LANGUAGES[code].name if code in LANGUAGES else "the language you speak"


def asr_language(code: str) -> str | None:
    """What Whisper is told: the code, or None to detect the language of each utterance."""
    return None if code == DETECT else code


def word_rules_apply(code: str | None) -> bool:
    """The end-of-turn word rules (audio.turns.words) are English: other languages end turns on the end-of-turn
    model and the silence alone."""
    return code == ENGLISH
