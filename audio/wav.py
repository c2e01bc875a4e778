"""WAV in and out: any rate or channel count is converted (mixed to mono, resampled once with soxr)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from adapters.contract.private_files import open_private
from audio.events import WavError
from audio.ports import RATE


def resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """One-shot high-quality resampling of mono float32 audio."""
    samples = np.asarray(samples, dtype=np.float32)
    if rate_in == rate_out or len(samples) == 0:
        return samples
    return np.asarray(soxr.resample(samples, rate_in, rate_out), dtype=np.float32)


def to_float32(samples: np.ndarray) -> np.ndarray:
    """int16 PCM (Piper's output) or float audio as float32 in [-1, 1]."""
    array = np.asarray(samples)
    if array.dtype == np.int16:
        return array.astype(np.float32) / 32768.0
    return array.astype(np.float32, copy=False)


def load_wav(path: str | Path, rate: int = RATE) -> np.ndarray:
    """Read a sound file as mono float32 at `rate`; a missing or corrupt file raises WavError naming it."""
    path = Path(path)
    if not path.is_file():
        raise WavError(f"WAV file not found: {path}")
    try:
        data, file_rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError, TypeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise WavError(f"cannot read WAV file {path}: {reason} (re-export it as PCM WAV)") from error
    if data.shape[0] == 0:
        raise WavError(f"WAV file {path} holds no audio")
    mono = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    return resample(mono, int(file_rate), rate)


def save_wav(path: str | Path, samples: np.ndarray, rate: int) -> None:
    """Write mono audio as 16-bit PCM WAV, readable by its owner only (it may hold a conversation)."""
    clipped = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    with open_private(Path(path), "wb") as handle:
        sf.write(handle, clipped, rate, subtype="PCM_16", format="WAV")
