"""Test signals and measurements."""

from __future__ import annotations

import numpy as np

from desktop.bench.signals import found_at


def tone(seconds: float, rate: int, amplitude: float = 0.5) -> np.ndarray:
    """A steady 440 Hz tone with two harmonics: loud all through, so its start and cut are sharp."""
    t = np.arange(round(seconds * rate)) / rate
    wave = np.sin(2 * np.pi * 440 * t) + 0.5 * np.sin(2 * np.pi * 880 * t) + 0.25 * np.sin(2 * np.pi * 1320 * t)
    result: np.ndarray = (amplitude * wave / np.abs(wave).max()).astype(np.float32)
    return result


def normalised_xcorr_peak(captured: np.ndarray, original: np.ndarray) -> float:
    """max over lags of <captured window, original> / (|window| |original|)."""
    n = len(captured) + len(original)
    size = 1 << (n - 1).bit_length()
    corr = np.fft.irfft(np.fft.rfft(captured, size) * np.conj(np.fft.rfft(original, size)), size)[: len(captured)]
    energy = np.concatenate([[0.0], np.cumsum(captured.astype(np.float64) ** 2)])
    ends = np.minimum(np.arange(len(captured)) + len(original), len(captured))
    window = np.sqrt(np.maximum(energy[ends] - energy[np.arange(len(captured))], 1e-12))
    return float(np.max(corr / (window * np.linalg.norm(original))))


def offset_of(captured: np.ndarray, original: np.ndarray) -> int:
    """The lag at which `original` best matches inside `captured` (the bench's own measure)."""
    return found_at(captured, original)


def db(x: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.asarray(x, dtype=np.float64) ** 2) + 1e-12))


MEASUREMENTS: list[str] = []


def report(line: str) -> None:
    """Keep a measured number for the run's summary (printed by conftest at the end of the session)."""
    MEASUREMENTS.append(line)
