"""The end-of-turn fixtures (assets/fixtures/turns): clips with pauses inside sentences, and complete questions."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from audio.ports import RATE
from audio.wav import load_wav
from desktop.assets import fixture

Samples = npt.NDArray[np.float32]


@dataclass(frozen=True)
class InsertedPause:
    after: str  # the word before the pause
    at_s: float  # where the inserted silence starts in the file
    length_s: float


@dataclass(frozen=True)
class TurnClip:
    """One utterance: 16 kHz audio, its text, and the stretches of speech in it (seconds in the file)."""

    name: str
    text: str
    kind: str  # "paused" (one turn with pauses inside it) or "complete" (one turn, no pause)
    speech: tuple[tuple[float, float], ...]
    pauses: tuple[InsertedPause, ...]
    path: Path

    @property
    def speech_end_s(self) -> float:
        return self.speech[-1][1]

    def audio(self) -> Samples:
        return load_wav(self.path, RATE)

    def until(self, end_s: float, silence_s: float = 0.0) -> Samples:
        """The clip up to `end_s`, then `silence_s` of digital silence."""
        audio = self.audio()[: round(end_s * RATE)]
        return np.concatenate([audio, np.zeros(round(silence_s * RATE), np.float32)])


def turn_clips(folder: Path | None = None) -> list[TurnClip]:
    """Every clip of the manifest, in its order."""
    folder = folder or fixture("turns")
    manifest = tomllib.loads((folder / "turns.toml").read_text(encoding="utf-8"))
    return [_clip(entry, folder) for entry in manifest["clip"]]


def _clip(entry: dict[str, Any], folder: Path) -> TurnClip:
    speech = tuple((float(a), float(b)) for a, b in entry["speech"])
    pauses = tuple(InsertedPause(str(p["after"]), float(p["at_s"]), float(p["length_s"])) for p in entry["pauses"])
    name = str(entry["file"]).removesuffix(".wav")
    return TurnClip(name, str(entry["text"]), str(entry["kind"]), speech, pauses, folder / str(entry["file"]))
