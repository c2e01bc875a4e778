"""WAV in and out, the one loader: any rate or channel count is converted (mixed to mono, resampled once).

Every file that cannot be used is a `WavError` whose message is one line naming the file, what is wrong
with it and what to do.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

import numpy as np
import soundfile as sf

from adapters.runtime.pcm import resample, to_mono_float32
from adapters.runtime.private_files import replacing
from audio.events import WavError
from audio.ports import RATE


def load_wav(path: str | Path, rate: int = RATE) -> np.ndarray:
    """Read a sound file as mono float32 at `rate`; an unusable file raises WavError naming it."""
    path = Path(path)
    _check_path(path)
    try:
        data, file_rate = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError, TypeError) as error:
        raise WavError(f"cannot read WAV file {path}: {_reason(error)}; re-export it as 16-bit PCM WAV") from None
    if data.shape[0] == 0:
        raise WavError(f"WAV file {path} holds no audio; record or export at least a moment of sound")
    if not np.isfinite(data).all():
        raise WavError(f"WAV file {path} holds NaN or infinite samples; re-export it as 16-bit PCM WAV")
    return resample(to_mono_float32(data), int(file_rate), rate)


def save_wav(path: str | Path, samples: np.ndarray, rate: int) -> None:
    """Write mono audio as 16-bit PCM WAV, readable by its owner only (it may hold a conversation)."""
    clipped = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    encoded = io.BytesIO()  # encoded in memory: libsndfile's own writes would hide a full disk in its callbacks
    sf.write(encoded, clipped, rate, subtype="PCM_16", format="WAV")
    with replacing(Path(path)) as handle:  # a full disk leaves no partial WAV
        handle.write(encoded.getbuffer())


def _check_path(path: Path) -> None:
    """Say exactly why a path is not a readable file: missing, a directory, a link loop, no permission."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise WavError(f"WAV file not found: {path}; check the path") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise WavError(f"WAV path {path} is a symbolic link loop; point the link at a real file") from None
        raise WavError(f"cannot open WAV file {path}: {error.strerror}; check the path and its permissions") from None
    if stat.S_ISDIR(mode):
        raise WavError(f"WAV path {path} is a directory, not a file; give the path of a .wav file")
    if not stat.S_ISREG(mode):
        raise WavError(f"WAV path {path} is not a regular file; give the path of a .wav file")
    if not os.access(path, os.R_OK):
        raise WavError(f"cannot open WAV file {path}: permission denied; check its permissions")


def _reason(error: Exception) -> str:
    """libsndfile's own words for what is wrong, on one line."""
    text = str(getattr(error, "error_string", "") or error)
    return " ".join(text.split()) or type(error).__name__
