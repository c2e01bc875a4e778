"""Piper's memory after a long phrase: handed back, except the share the next reply's first words need."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.runtime.workers import StopFlag
from adapters.tts.arena import WARM_TEXT
from adapters.tts.piper_voice import _load, default_voice_path
from adapters.tts.render import render
from desktop.bench.soak import resident_mb

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# 230 characters, near the chunker's longest: Piper's own arena grew ~200 MB for it and kept that for the session
LONG = (
    "The keeper climbed the winding stairs of the old lighthouse every evening at dusk to light the great lamp "
    "that guided the fishing boats safely home across the dark and stormy water while his grey cat slept by "
    "the warm stove below."
)
FIRST_PHRASE = "Once upon a time,"
SUBPROCESS_S = 120.0
MID = "in a small coastal town there lived an old lighthouse keeper"  # 60 characters


def test_a_long_phrase_gives_back_what_it_took_past_a_first_phrase() -> None:
    voice = _load(default_voice_path())  # a session of its own; before this change it had an arena of its own too
    assert render(voice, 0, WARM_TEXT, StopFlag()) is not None  # as the synthesizer's preload does
    before = resident_mb()
    for _ in range(3):
        segment = render(voice, 0, LONG, StopFlag())
        assert segment is not None
        assert len(segment.audio) > 5 * segment.sample_rate
    assert resident_mb() - before < 140  # the rest of the first words' region and ~35 MB; it was +199 MB


def test_the_first_phrase_after_a_long_one_finds_its_memory_in_place() -> None:
    """A guard, not a proof of the change: before it the arena never gave anything back, so this held then too;
    shrinking every region (tried first) made the first phrase fault ~20 MB back in each time."""
    voice = _load(default_voice_path())
    for text in (WARM_TEXT, LONG, FIRST_PHRASE):
        assert render(voice, 0, text, StopFlag()) is not None
    grown = []
    for _ in range(5):
        assert render(voice, 0, LONG, StopFlag()) is not None
        before = resident_mb("RssAnon")
        assert render(voice, 0, FIRST_PHRASE, StopFlag()) is not None
        grown.append(resident_mb("RssAnon") - before)
    assert max(grown) < 8


def test_a_region_grown_for_a_phrase_does_not_outlive_it() -> None:
    """A run's outputs are placed best-fit, often in a grown region, and a shrink while they live keeps it: before
    the release after each phrase, a 32 MB region came and went from phrase to phrase (here -31 to +15 MB).

    In a fresh process, as the app has it: one voice on the arena. Here the tests before it leave other voices'
    weights and the heap they freed behind, and the trim after a long phrase hands back theirs too."""
    script = "import json; from tests.test_piper_memory import phrase_levels; print(json.dumps(phrase_levels()))"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=SUBPROCESS_S, check=True
    )
    levels = json.loads(done.stdout.splitlines()[-1])
    assert max(levels) - min(levels) < 16, [round(level - levels[0]) for level in levels]


def phrase_levels() -> list[float]:
    """RssAnon after each of a run of phrases, long and short, once every page of the first region is touched."""
    voice = _load(default_voice_path())
    for text in (WARM_TEXT, LONG, FIRST_PHRASE):
        assert render(voice, 0, text, StopFlag()) is not None
    levels = [resident_mb("RssAnon")]
    for text in (MID, FIRST_PHRASE, LONG[:100], FIRST_PHRASE, MID, "Hi.", LONG[:100], "Hi.", LONG, FIRST_PHRASE, MID):
        assert render(voice, 0, text, StopFlag()) is not None
        levels.append(resident_mb("RssAnon"))
    return levels
