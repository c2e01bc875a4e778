"""Real people, not synthetic voices (assets/real_speech), through the whole pipeline on the real models: every
read sentence is one turn holding its words, a soft voice over room noise is heard, a turn with a breath pause
inside is one turn (a made one, and a real sentence with two), softly read digits are heard, and PulseAudio hears
what the fixture path hears, the sentence with two breaths included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adapters.contract import CancelSignal
from audio.ports import RATE
from desktop.bench.real_pulse import real_pulse_turns
from desktop.bench.real_runs import RealTurn, say_once
from desktop.bench.real_speech import Clip, at_level, conversation_turns, more_speech, room_tone, sentences
from desktop.bench.scenarios import Hearing
from desktop.bench.sessions import Models
from desktop.bench.signals import word_edits
from desktop.config import Config
from desktop.pipeline.parts import speech_models
from engine.journal import read_events
from tests.audio.pulse import Pulse

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SAME_WORDS = 1  # word edits the pipeline may differ by from Whisper's offline reading of the whole file


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def models() -> Models:
    config = Config()
    transcriber, synthesizer = speech_models(config)
    await transcriber.preload(CancelSignal())
    await synthesizer.preload(CancelSignal())
    return Models(config, transcriber, synthesizer, Hearing(transcriber, transcriber))


def _one_turn_with_its_words(turn: RealTurn) -> None:
    assert len(turn.texts) == 1, f"{turn.clip.name}: {turn.texts}"
    assert word_edits(turn.offline, turn.texts[0]) <= SAME_WORDS, (turn.texts[0], turn.offline)


async def test_every_read_sentence_is_one_turn_with_its_words(models: Models, tmp_path: Path) -> None:
    for n, clip in enumerate(sentences()):
        _one_turn_with_its_words(await say_once(models, tmp_path / str(n), "sentence", clip))


@pytest.mark.parametrize(("level", "noise"), [(-45.0, None), (-40.0, -50.0), (-10.0, -50.0)])
async def test_a_soft_or_loud_voice_over_room_noise_is_heard(
    models: Models, tmp_path: Path, level: float, noise: float | None
) -> None:
    clip = at_level(sentences()[4], level, noise)
    _one_turn_with_its_words(await say_once(models, tmp_path, "level", clip))


async def test_a_conversation_turn_of_two_utterances_is_one_turn(models: Models, tmp_path: Path) -> None:
    for n, clip in enumerate(c for c in conversation_turns("Diane") if c.utterances > 1):
        turn = await say_once(models, tmp_path / str(n), "conversation", clip)
        assert len(turn.texts) == 1, f"{clip.name} split: {turn.texts}"


async def test_a_breath_pause_inside_a_sentence_keeps_one_turn(models: Models, tmp_path: Path) -> None:
    """ "The child almost hurt [0.6 s of room tone] the small dog.": one turn, no aborted one before it."""
    clip = sentences()[0]
    words = (await models.transcriber.transcribe(clip.audio, CancelSignal())).words
    cut = round((words[3].end_s + words[4].start_s) / 2 * RATE)
    breath = room_tone(round(0.6 * RATE), clip.level_dbfs - 45)
    paused = Clip("breath", clip.text, np.concatenate([clip.audio[:cut], breath, clip.audio[cut:]]))
    turn = await say_once(models, tmp_path, "sentence", paused)
    _one_turn_with_its_words(turn)
    events = read_events(tmp_path / "session" / "journal.jsonl")
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed"]


async def test_a_real_sentence_with_two_breaths_of_a_second_is_one_turn(models: Models, tmp_path: Path) -> None:
    """ "And so my fellow Americans, [1.1 s] ask not what your country can do for you, [1.1 s] ask what you can do
    for your country.": one user message holding the whole sentence, no aborted turn before it."""
    turn = await say_once(models, tmp_path, "long", more_speech()["jfk"])
    _one_turn_with_its_words(turn)
    events = read_events(tmp_path / "session" / "journal.jsonl")
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["completed"]


async def test_softly_read_digits_are_one_turn_holding_every_digit(models: Models, tmp_path: Path) -> None:
    """Fifteen digits read at about -40 dBFS over room hiss: one turn, and its digits are the ones Whisper reads
    offline from the whole file (however it groups them: "1,0001 90210" and "10001 90210" are the same digits)."""
    turn = await say_once(models, tmp_path, "digits", more_speech()["digits"])
    assert len(turn.texts) == 1, turn.texts
    digits = "".join(ch for ch in turn.texts[0] if ch.isdigit())
    assert len(digits) >= 14, turn.texts
    assert digits == "".join(ch for ch in turn.offline if ch.isdigit()), (turn.texts, turn.offline)


async def test_pulseaudio_hears_what_the_fixture_path_hears(models: Models, pulse: Pulse, tmp_path: Path) -> None:
    clips = sentences()[:3]
    on_pulse = await real_pulse_turns(models, tmp_path / "pulse", clips, lambda _: None)
    for clip, heard in zip(clips, on_pulse, strict=True):
        fixture = await say_once(models, tmp_path / clip.name, "sentence", clip)
        assert len(heard.texts) == len(fixture.texts) == 1, (heard.texts, fixture.texts)
        assert word_edits(fixture.texts[0], heard.texts[0]) <= SAME_WORDS, (heard.texts, fixture.texts)
        assert heard.ttfa_ms is not None


async def test_pulseaudio_keeps_a_real_sentence_with_two_breaths_one_turn(
    models: Models, pulse: Pulse, tmp_path: Path
) -> None:
    """The same sentence in real time on the real devices: its breaths are where a reply may begin, and the
    person goes on over it; one turn holds the whole sentence."""
    clip = more_speech()["jfk"]
    [heard] = await real_pulse_turns(models, tmp_path / "pulse", [clip], lambda _: None)
    offline = (await models.transcriber.transcribe(clip.audio, CancelSignal())).text
    assert len(heard.texts) == 1, heard.texts
    assert word_edits(offline, heard.texts[0]) <= SAME_WORDS, (heard.texts, offline)
    events = read_events(tmp_path / "pulse" / "real_pulse1" / "journal.jsonl")
    assert sum(e["type"] == "turn/start" for e in events) == 1, [e["type"] for e in events]
