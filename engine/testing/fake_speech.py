"""The tests' speaker: the engine's silent speech on a virtual clock."""

from __future__ import annotations

from engine.silent_speech import SilentSpeech


class FakeSpeechOutput(SilentSpeech):
    """A speaker that plays segments back to back on the injected clock (300 ms a word by default)."""
