"""The echo path: learned while the assistant speaks and kept across replies; it tells a voice of the user's own
(unexplained sound) from the assistant's echo within a few 10 ms chunks, and assumes the worst until it knows."""

from __future__ import annotations

import numpy as np

from audio.echo_path import CHUNK, EchoPath
from audio.ports import RATE


def _speechlike(seconds: float, seed: int, phase: float = 0.0) -> np.ndarray:
    """Noise shaped like syllables: 4 Hz bursts with pauses, loud enough to be a voice (-20 dBFS)."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * RATE)) / RATE
    envelope = np.clip(np.sin(2 * np.pi * 4 * t + phase), 0, None) ** 2
    return (0.2 * envelope * rng.standard_normal(len(t))).astype(np.float32)


def _run(path: EchoPath, mic: np.ndarray, ref: np.ndarray, talking_from: int | None = None) -> list[float]:
    """Unexplained power per chunk; from sample `talking_from` on the VAD hears someone (nothing is learned)."""
    return [path.step(mic[i : i + CHUNK], ref[i : i + CHUNK], i / RATE,
                      quiet=talking_from is None or i < talking_from).unexplained
            for i in range(0, len(mic) - CHUNK + 1, CHUNK)]  # fmt: skip


def _echo(ref: np.ndarray, gain: float, delay_s: float) -> np.ndarray:
    lag = round(delay_s * RATE)
    return (gain * np.concatenate([np.zeros(lag, np.float32), ref[:-lag]])).astype(np.float32)


def test_the_path_is_learned_and_its_echo_is_explained_from_the_next_reply_on() -> None:
    path = EchoPath()
    reply = _speechlike(3.0, 1)
    _run(path, _echo(reply, 0.3, 0.06), reply)
    assert path.delay_chunks == 6
    assert np.allclose(10 * np.log10(path.gains), 20 * np.log10(0.3), atol=1.5)
    next_reply = _speechlike(2.0, 2)
    unexplained = _run(path, _echo(next_reply, 0.3, 0.06), next_reply)
    assert max(unexplained) < 1e-5, "the echo of the next reply is explained from its first chunk"


def test_a_voice_over_the_echo_is_unexplained_within_two_chunks() -> None:
    path = EchoPath()
    reply = _speechlike(4.0, 3)
    mic = _echo(reply, 0.5, 0.04)
    voice_at = round(3.0 * RATE)
    voice = _speechlike(1.0, 9, phase=np.pi)[: len(mic) - voice_at] * 0.5  # as loud as the echo, out of step
    mic[voice_at:] += voice
    rms = np.sqrt(np.mean(voice[: len(voice) // CHUNK * CHUNK].reshape(-1, CHUNK) ** 2, axis=1))
    onset_chunk = voice_at // CHUNK + int(np.flatnonzero(rms > 0.01)[0])  # its first chunk above -40 dBFS
    unexplained = np.array(_run(path, mic, reply, talking_from=voice_at + round(0.1 * RATE)))
    loud = np.flatnonzero(unexplained > 10 ** (-45 / 10))
    assert loud.size, "the voice is heard"
    assert onset_chunk - 1 <= loud[0] <= onset_chunk + 5, "within 50 ms of its onset"
    assert not np.any(unexplained[: voice_at // CHUNK] > 10 ** (-45 / 10)), "the echo alone never is"


def test_before_it_knows_the_path_it_assumes_the_echo_as_loud_as_played() -> None:
    path = EchoPath()
    reply = _speechlike(0.2, 4)
    unexplained = _run(path, _echo(reply, 1.0, 0.03), reply)
    assert max(unexplained) < 1e-5, "an unknown path at unity gain: its echo is explained"


def test_with_no_echo_at_all_a_headset_the_gains_fall_and_the_user_is_heard() -> None:
    path = EchoPath()
    reply = _speechlike(3.0, 5)
    _run(path, np.zeros_like(reply), reply)
    assert path.delay_chunks is None
    assert np.all(path.gains < 1e-2)
    voice = _speechlike(0.5, 6) * 0.3
    assert max(_run(path, voice, _speechlike(0.5, 7))) > 1e-4


def test_a_delay_longer_than_the_old_limit_is_found() -> None:
    """A loopback whose sound server fell behind holds 0.4-0.6 s (measured here): beyond 0.4 s nothing explained
    the echo, and Parley interrupted itself."""
    path = EchoPath()
    reply = _speechlike(3.0, 13)
    unexplained = _run(path, _echo(reply, 0.5, 0.55), reply)
    assert path.delay_chunks == 55
    assert max(unexplained[100:]) < 1e-5
