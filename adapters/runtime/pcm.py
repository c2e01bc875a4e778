"""PCM in the contract's form (mono float32 in [-1, 1]): one converter and one resampler for adapters and audio.

It lives in the shared runtime because both sides of the contract need the same conversion: the ASR adapter
accepts any rate (`Transcriber.transcribe(..., sample_rate=)`), and the audio layer (WAV files, playout) may
import no concrete adapter. soxr is the resampler: band-limited, and the output length is exactly
`round(len * to_rate / from_rate)`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import soxr

from adapters.contract.speech_io import Samples


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
    """Mono float32 audio at another rate (the same array when the rates agree or there is nothing to do)."""
    if from_rate <= 0 or to_rate <= 0:
        raise ValueError(f"sample rates must be positive, got {from_rate} -> {to_rate}")
    samples = np.asarray(samples, dtype=np.float32)
    if from_rate == to_rate or len(samples) == 0:
        return samples
    return np.asarray(soxr.resample(samples, from_rate, to_rate), dtype=np.float32)
