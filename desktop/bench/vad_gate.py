"""What the VAD's energy gate saves and costs: CPU over a silent stream, and the onset of speech after silence.

.venv/bin/python -m desktop.bench.vad_gate
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from audio.events import SpeechStarted
from audio.ports import RATE, Frame
from audio.vad import SileroModel, Vad, VadConfig
from audio.wav import load_wav
from desktop.assets import fixture

Samples = npt.NDArray[np.float32]
FRAME = 320  # 20 ms, what the microphone delivers
LEAD_S = 3.0  # silence before each clip: long enough for the gate to shut
UNGATED = VadConfig(gate_dbfs=None)


def vad_cpu_pct(config: VadConfig, seconds: float = 30.0, noise_dbfs: float | None = None) -> float:
    """% of one core the VAD takes on `seconds` of silence (digital, or white noise at `noise_dbfs`)."""
    audio = np.zeros(round(seconds * RATE), np.float32)
    if noise_dbfs is not None:
        audio = (np.random.default_rng(1).standard_normal(len(audio)) * 10 ** (noise_dbfs / 20)).astype(np.float32)
    vad = Vad(config, SileroModel())
    frames = [Frame(audio[i : i + FRAME], i / RATE, i) for i in range(0, len(audio) - FRAME + 1, FRAME)]
    started = time.process_time()
    for frame in frames:
        vad.feed(frame)
    return round(100 * (time.process_time() - started) / seconds, 2)


@dataclass(frozen=True)
class Onset:
    name: str
    onset_s: float | None  # SpeechStarted.at without the gate (seconds into the clip's speech)
    onset_gated_s: float | None  # the same with the gate
    reported_s: float | None  # when the VAD reported it (end of the frame that completed the minimum)
    reported_gated_s: float | None

    @property
    def delay_ms(self) -> float | None:
        if self.reported_s is None or self.reported_gated_s is None:
            return None
        return round((self.reported_gated_s - self.reported_s) * 1000, 1)


def _first_onset(config: VadConfig, model: SileroModel, audio: Samples) -> tuple[float | None, float | None]:
    model.reset()
    vad = Vad(config, model)
    for start in range(0, len(audio) - FRAME + 1, FRAME):
        for event in vad.feed(Frame(audio[start : start + FRAME], start / RATE, start)):
            if isinstance(event, SpeechStarted):
                return event.at - LEAD_S, (start + FRAME) / RATE - LEAD_S
    return None, None


def onsets(paths: list[Path], config: VadConfig | None = None) -> list[Onset]:
    """Each clip after LEAD_S of silence, with and without the gate."""
    gated = config or VadConfig()
    model = SileroModel()
    out = []
    for path in paths:
        audio = np.concatenate([np.zeros(round(LEAD_S * RATE), np.float32), load_wav(path)])
        plain = _first_onset(replace(gated, gate_dbfs=None), model, audio)
        with_gate = _first_onset(gated, model, audio)
        out.append(Onset(path.stem, plain[0], with_gate[0], plain[1], with_gate[1]))
    return out


def fixture_wavs() -> list[Path]:
    """Every speech WAV of assets/fixtures and assets/fixtures/turns."""
    return sorted(fixture("").glob("*.wav")) + sorted(fixture("turns").glob("*.wav"))


def main() -> None:
    for noise in (None, -70.0, -50.0):
        level = "digital silence" if noise is None else f"white noise at {noise:g} dBFS"
        before, after = vad_cpu_pct(UNGATED, noise_dbfs=noise), vad_cpu_pct(VadConfig(), noise_dbfs=noise)
        print(f"VAD CPU on {level}: {before} % of one core without the gate, {after} % with it")
    results = onsets(fixture_wavs())
    delays = [r.delay_ms for r in results if r.delay_ms is not None]
    changed = [r for r in results if r.onset_s != r.onset_gated_s or r.reported_s != r.reported_gated_s]
    print(f"onset after {LEAD_S:g} s of silence, {len(results)} clips: report delay with the gate "
          f"max {max(delays):+.1f} ms, mean {np.mean(delays):+.1f} ms; {len(changed)} clips differ")  # fmt: skip
    for r in changed:
        print(f"  {r.name}: onset {r.onset_s} -> {r.onset_gated_s}, reported {r.reported_s} -> {r.reported_gated_s}")


if __name__ == "__main__":
    main()
