"""Read a WAV (or any libsndfile format) as mono float32 at 16 kHz, with one-line errors naming the file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

from adapters.asr.resample import resample, to_mono_float32
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples


class AudioFileError(Exception):
    """An audio file cannot be read; the message names the file and the problem in one line."""


def load_wav(path: str | Path, *, rate: int = ASR_SAMPLE_RATE) -> tuple[Samples, int]:
    """Samples as mono float32 at `rate` (channels averaged, other rates resampled) and the file's own rate."""
    file = Path(path)
    if not file.is_file():
        raise AudioFileError(f"{file}: no such audio file; check the path")
    try:
        data, file_rate = soundfile.read(str(file), dtype="float32", always_2d=True)
    except soundfile.LibsndfileError as error:
        raise AudioFileError(
            f"{file}: not a readable audio file ({_reason(error)}); re-record or convert it to WAV"
        ) from None
    mono = to_mono_float32(np.asarray(data, dtype=np.float32))
    return resample(mono, int(file_rate), rate), int(file_rate)


def _reason(error: soundfile.LibsndfileError) -> str:
    return " ".join(str(error.error_string).split()) or "unknown format"
