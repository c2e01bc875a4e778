"""Piper's memory after a long phrase: handed back, except the share the next reply's first words need."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.contract.workers import StopFlag
from adapters.tts.arena import WARM_TEXT
from adapters.tts.piper_voice import _load, default_voice_path
from adapters.tts.render import render

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# 236 characters, near the chunker's longest: Piper's arena grew ~290 MB for it and kept that for the session
LONG = (
    "The keeper climbed the winding stairs of the old lighthouse every evening at dusk to light the great lamp "
    "that guided the fishing boats safely home across the dark and stormy water while his grey cat slept by "
    "the warm stove below."
)
FIRST_PHRASE = "Once upon a time,"


def resident_mb() -> float:
    status = Path("/proc/self/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_a_long_phrase_gives_back_what_it_took_past_a_first_phrase() -> None:
    voice = _load(default_voice_path())  # its own session: an arena no earlier test has grown
    assert render(voice, 0, WARM_TEXT, StopFlag()) is not None  # as the synthesizer's preload does
    before = resident_mb()
    for _ in range(3):
        segment = render(voice, 0, LONG, StopFlag())
        assert segment is not None
        assert len(segment.audio) > 5 * segment.sample_rate
    assert resident_mb() - before < 140  # the rest of the first words' region and ~35 MB; it was ~+290 MB


def test_the_first_phrase_after_a_long_one_finds_its_memory_in_place() -> None:
    voice = _load(default_voice_path())
    grown = []
    for _ in range(5):
        assert render(voice, 0, LONG, StopFlag()) is not None
        before = resident_mb()
        assert render(voice, 0, FIRST_PHRASE, StopFlag()) is not None
        grown.append(resident_mb() - before)
    assert max(grown) < 4  # shrinking every region made it fault ~20 MB back in each time
