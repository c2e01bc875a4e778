"""The VAD's energy gate: a silent room skips Silero, and speech after the silence is heard as without it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from audio.events import SpeechEnded, SpeechStarted
from audio.ports import RATE, Frame
from audio.vad import WINDOW, Vad, VadConfig

GATED = VadConfig(gate_dbfs=-60.0, gate_hold_ms=500.0)
ONE_WINDOW_S = WINDOW / RATE


def _feed(vad: Vad, audio: np.ndarray, at: float = 0.0) -> list[SpeechStarted | SpeechEnded]:
    frames = [Frame(audio[i : i + 320], at + i / RATE, i) for i in range(0, len(audio) - 319, 320)]
    return [event for frame in frames for event in vad.feed(frame)]


def _noise(seconds: float, dbfs: float) -> np.ndarray:
    rng = np.random.default_rng(2)
    return (rng.standard_normal(round(seconds * RATE)) * 10 ** (dbfs / 20)).astype(np.float32)


@pytest.mark.parametrize("silence", ["digital", "quiet_noise"])
def test_a_silent_room_stops_running_the_model_after_the_hold(silence: str) -> None:
    audio = np.zeros(5 * RATE, np.float32) if silence == "digital" else _noise(5.0, -75.0)
    vad = Vad(GATED)
    assert _feed(vad, audio) == []
    windows = len(audio) // WINDOW
    assert vad.model_calls == pytest.approx(500 / (1000 * ONE_WINDOW_S), abs=1)
    assert vad.gated_windows == windows - vad.model_calls
    assert vad.last_probability == 0.0


def test_without_the_gate_or_above_it_every_window_is_judged() -> None:
    for config, audio in ((replace(GATED, gate_dbfs=None), np.zeros(2 * RATE, np.float32)), (GATED, _noise(2, -45))):
        vad = Vad(config)
        _feed(vad, audio)
        assert vad.gated_windows == 0
        assert vad.model_calls == len(audio) // WINDOW


def test_speech_after_a_long_silence_is_heard_as_without_the_gate(user_speech: np.ndarray) -> None:
    silence = np.zeros(3 * RATE, np.float32)
    audio = np.concatenate([silence, user_speech, silence, user_speech, silence])
    plain, gated = Vad(replace(GATED, gate_dbfs=None)), Vad(GATED)
    expected, events = _feed(plain, audio), _feed(gated, audio)
    assert [type(e) for e in events] == [type(e) for e in expected] == [SpeechStarted, SpeechEnded] * 2
    for ours, theirs in zip(events, expected, strict=True):
        assert ours.at == pytest.approx(theirs.at, abs=ONE_WINDOW_S + 1e-9)
    assert gated.gated_windows > 0, "the silences between were gated"


def test_the_gate_never_shuts_inside_speech(user_speech: np.ndarray) -> None:
    """A pause shorter than the hangover, however silent and however short the hold, is judged by Silero."""
    pause = np.zeros(int(0.25 * RATE), np.float32)
    vad = Vad(replace(GATED, min_silence_ms=300, gate_hold_ms=64))
    speech = np.concatenate([user_speech, pause, user_speech])
    assert [type(e) for e in _feed(vad, speech)] == [SpeechStarted]
    assert vad.gated_windows == 0
    assert [type(e) for e in _feed(vad, np.zeros(RATE, np.float32), at=len(speech) / RATE)] == [SpeechEnded]
    assert vad.gated_windows > 0
