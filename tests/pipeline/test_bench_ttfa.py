"""The bench's time to first audio is read off the signals (SPEC §9), not taken from the pipeline's own VAD."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from audio.wav import save_wav
from desktop.bench.scenarios import RATE, Run, Ttfa, ttfas


def _clip(path: Path, quiet_s: float, loud_s: float) -> str:
    """Silence, then a tone, then the same silence again: the speech ends `quiet_s + loud_s` into the clip."""
    quiet = np.zeros(round(quiet_s * RATE), dtype=np.float32)
    tone = 0.3 * np.sin(2 * np.pi * 220 * np.arange(round(loud_s * RATE)) / RATE).astype(np.float32)
    save_wav(path, np.concatenate([quiet, tone, quiet]), RATE)
    return str(path)


def test_each_voice_turn_is_timed_from_the_end_of_its_utterance_in_the_signal(tmp_path: Path) -> None:
    story = _clip(tmp_path / "story.wav", 0.2, 1.0)
    stop = _clip(tmp_path / "stop.wav", 0.1, 0.5)
    timeline = {
        "clock_origin": 100.0,
        "says": [{"what": story, "at_s": 0.5}, {"what": stop, "at_s": 4.0}],
        "turns": {
            "1": {"first_audio_s": 2.2, "silent_s": 4.3},  # the story's speech ended at 0.5 + 1.2 s
            "2": {"first_audio_s": 5.05, "silent_s": None},  # "stop" ended at 4.0 + 0.6 s
            "3": {"first_audio_s": 9.0, "silent_s": None},  # a typed turn: no ttfa of its own
        },
    }
    events = [
        {"type": "metrics/turn", "turn": 1, "ttfa_ms": 440.0, "eot_ms": 300.0},
        {"type": "metrics/turn", "turn": 2, "ttfa_ms": 390.0, "eot_ms": 280.0},
        {"type": "metrics/turn", "turn": 3, "tts_first_ms": 120.0},
    ]
    run = Run(tmp_path, events, {"timeline": timeline})

    assert ttfas(run) == [Ttfa(1, 500.0, 440.0), Ttfa(2, 450.0, 390.0)]


def test_a_reply_heard_before_any_utterance_ended_has_no_time_to_first_audio(tmp_path: Path) -> None:
    story = _clip(tmp_path / "story.wav", 0.2, 1.0)
    timeline = {"says": [{"what": story, "at_s": 0.5}], "turns": {"1": {"first_audio_s": 1.0, "silent_s": None}}}
    run = Run(tmp_path, [{"type": "metrics/turn", "turn": 1, "ttfa_ms": 300.0}], {"timeline": timeline})

    assert ttfas(run) == []
