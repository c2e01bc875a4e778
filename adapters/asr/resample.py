"""Bring any PCM array to mono float32 at the model's rate, with numpy only (no heavy DSP dependency)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from adapters.contract.speech_io import Samples

_TAPS_PER_SIDE = 32  # windowed-sinc low-pass half length; plenty for speech recognition


def to_mono_float32(samples: npt.NDArray[np.generic]) -> Samples:
    """Integer PCM is scaled to [-1, 1]; a (frames, channels) array is averaged to one channel."""
    data = np.asarray(samples)
    if np.issubdtype(data.dtype, np.integer):
        scale = float(np.iinfo(data.dtype).max) + 1.0
        data = data.astype(np.float32) / scale
    data = data.astype(np.float32, copy=False)
    if data.ndim == 2:
        data = data.mean(axis=1, dtype=np.float32)
    if data.ndim != 1:
        raise ValueError(f"audio must be mono (frames,) or (frames, channels), got shape {data.shape}")
    return data


def resample(samples: Samples, from_rate: int, to_rate: int) -> Samples:
    """Low-pass (when going down) then linear interpolation; the length scales exactly with the rate."""
    if from_rate <= 0 or to_rate <= 0:
        raise ValueError(f"sample rates must be positive, got {from_rate} -> {to_rate}")
    if from_rate == to_rate or len(samples) == 0:
        return samples
    source = _low_pass(samples, cutoff=0.5 * to_rate / from_rate) if to_rate < from_rate else samples
    count = round(len(samples) * to_rate / from_rate)
    positions = np.arange(count, dtype=np.float64) * (from_rate / to_rate)
    return np.interp(positions, np.arange(len(source)), source).astype(np.float32)


def _low_pass(samples: Samples, cutoff: float) -> Samples:
    """Hann-windowed sinc FIR with `cutoff` as a fraction of the input rate (0.5 = Nyquist)."""
    n = np.arange(-_TAPS_PER_SIDE, _TAPS_PER_SIDE + 1)
    kernel = 2 * cutoff * np.sinc(2 * cutoff * n) * np.hanning(len(n))
    kernel /= kernel.sum()
    return np.convolve(samples, kernel.astype(np.float32), mode="same").astype(np.float32)
