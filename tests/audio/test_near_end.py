"""What the VAD and Whisper hear (audio.near_end): the canceller's output, or the microphone itself where the
listener says no echo can be left, switched without a click."""

from __future__ import annotations

import numpy as np

from audio.echo_path import CHUNK
from audio.near_end import NearEnd
from audio.ports import RATE, Frame


def _offer(near: NearEnd, mic: np.ndarray, at: float, as_is: list[bool]) -> None:
    for i, flag in enumerate(as_is):
        near.offer(at + i * CHUNK / RATE, mic[i * CHUNK : (i + 1) * CHUNK], as_is=flag)


def _chunks(samples: np.ndarray) -> list[np.ndarray]:
    return [samples[i : i + CHUNK] for i in range(0, len(samples), CHUNK)]


def test_the_microphone_goes_out_where_offered_as_it_is_and_the_switch_is_faded() -> None:
    rng = np.random.default_rng(3)
    mic = rng.normal(0, 0.1, 8 * CHUNK).astype(np.float32)
    cleaned = rng.normal(0, 0.01, 8 * CHUNK).astype(np.float32)
    near = NearEnd()
    flags = [False, False, True, True, True, False, False, False]
    _offer(near, mic, 10.0, flags)
    out = _chunks(near.mix(Frame(cleaned, 10.0, 0)).samples)
    mics, cleans = _chunks(mic), _chunks(cleaned)
    for i in (0, 1, 6, 7):
        np.testing.assert_array_equal(out[i], cleans[i])
    for i in (3, 4):
        np.testing.assert_array_equal(out[i], mics[i])
    for i, rising in ((2, True), (5, False)):  # a 10 ms ramp from the one to the other
        share = (out[i] - cleans[i]) / (mics[i] - cleans[i])
        assert np.all(np.diff(share) > 0) if rising else np.all(np.diff(share) < 0)
        assert share.min() > 0
        assert share.max() < 1
    assert near.raw_chunks == 3


def test_chunks_nobody_offered_and_frames_of_no_whole_chunk_pass_as_they_came() -> None:
    near = NearEnd()
    mic = np.full(2 * CHUNK, 0.5, np.float32)
    _offer(near, mic, 5.0, [True, True])
    cleaned = np.full(2 * CHUNK, 0.1, np.float32)
    later = near.mix(Frame(cleaned, 6.0, 16000))  # a second on: what was offered is long gone
    np.testing.assert_array_equal(later.samples, cleaned)
    odd = Frame(np.full(CHUNK + 7, 0.2, np.float32), 7.0, 32000)  # no canceller: frames as the device gives them
    assert near.mix(odd) is odd
