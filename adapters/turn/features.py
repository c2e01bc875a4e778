"""Smart Turn's input: Whisper-style log-mel features of the last 8 s, as pipecat computes them.

pipecat (local_smart_turn_v3.py) keeps the last 8 s of 16 kHz audio, pads shorter audio with zeros
at the *start*, normalises the padded waveform to zero mean and unit variance, then takes
transformers' WhisperFeatureExtractor features (80 mels x 800 frames, log10, clamped to max - 8,
scaled (x + 4) / 4). faster-whisper's numpy extractor computes the same spectrogram when given no
extra end padding; tests/test_smart_turn.py checks it against pipecat's vendored reference.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from faster_whisper.feature_extractor import FeatureExtractor

from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples

WINDOW_S = 8
WINDOW = WINDOW_S * ASR_SAMPLE_RATE  # 128 000 samples
MELS, FRAMES = 80, 800
NORMALISE_EPS = 1e-7  # transformers' zero_mean_unit_var_norm

_extractor = FeatureExtractor(feature_size=MELS, chunk_length=WINDOW_S)


def last_window(samples: Samples) -> Samples:
    """The last 8 s of `samples`, zero-padded at the start when shorter."""
    audio = np.asarray(samples, dtype=np.float32)[-WINDOW:]
    return np.pad(audio, (WINDOW - len(audio), 0)) if len(audio) < WINDOW else audio


def log_mel(samples: Samples) -> npt.NDArray[np.float32]:
    """(80, 800) float32 features of the last 8 s of 16 kHz mono audio."""
    audio = last_window(samples)
    audio = ((audio - audio.mean()) / np.sqrt(audio.var() + NORMALISE_EPS)).astype(np.float32)
    return np.asarray(_extractor(audio, padding=0), dtype=np.float32)  # stateless without chunk_length
