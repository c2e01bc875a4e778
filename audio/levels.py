"""How loud a stretch of speech is, as the ear judges it: the level of its voiced part, not of its pauses."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

BLOCK = 320  # 20 ms at 16 kHz
ACTIVE_DB = 30.0  # blocks within this much of the loudest one count as speech


def speech_level_dbfs(samples: npt.NDArray[np.float32]) -> float:
    """RMS level (dBFS) of the 20 ms blocks within ACTIVE_DB of the loudest: a soft speaker with long pauses reads
    as soft, not as silent (-inf for digital silence)."""
    usable = len(samples) // BLOCK * BLOCK
    if usable == 0:
        return -math.inf
    power = np.mean(np.square(samples[:usable].reshape(-1, BLOCK), dtype=np.float64), axis=1)
    loudest = float(power.max())
    if loudest <= 0:
        return -math.inf
    active = power[power >= loudest * 10 ** (-ACTIVE_DB / 10)]
    return 10 * math.log10(float(active.mean()))


CEILING_DBFS = -1.0  # the loudest sample Parley sends to a speaker: headroom the DAC and resampler never clip in
CEILING = 10 ** (CEILING_DBFS / 20)


def within_ceiling(samples: npt.NDArray[np.float32], ceiling: float = CEILING) -> npt.NDArray[np.float32]:
    """`samples` turned down as a whole so that no sample is louder than `ceiling` (the same array when none is).

    Piper normalises every sentence to full scale and resampling overshoots it, so played as is the loudest
    syllables clip. One gain per segment keeps the waveform's shape (no limiter pumping inside a word)."""
    peak = float(np.max(np.abs(samples))) if len(samples) else 0.0
    if peak <= ceiling:
        return samples
    return (samples * np.float32(ceiling / peak)).astype(np.float32, copy=False)
