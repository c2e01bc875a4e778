"""Silero VAD (the ONNX model faster-whisper ships) streaming over 512-sample windows, with hysteresis.

Time is counted in samples: a window's time is its frame's `at` plus its offset, so the hangover needs no clock.
An energy gate keeps a silent room cheap: after `gate_hold_ms` of windows quieter than `gate_dbfs` (far below
any speech Silero would hear at a real microphone) the model is not run and the windows count as silence;
the first louder window resets the model and replays the last quiet windows into it, so its onset is judged
from the same recurrent context as without the gate.

A level floor keeps what follows a person's words from prolonging them: a window far under the loudest of their
own recent speech (a breath in after a sentence) goes on a silence that has begun even where Silero hears voice,
and starts no speech, so the pause that asks "is the turn over?" opens when the words end, not after the breath.
The peak rises only on the user's speech (not while a reply plays, when the room may hold Parley's echo) and
falls away in silence. Such a window continues a silence Silero has begun; it begins one itself only where Silero
doubts it too (`floor_doubt`): some people's words end in a soft tail Silero rates just over its threshold, while
the closures inside words are as faint but certain speech to it.
"""

from __future__ import annotations

import collections
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from audio.events import SpeechEnded, SpeechStarted, VadUnavailable
from audio.ports import RATE, Frame

WINDOW = 512  # samples at 16 kHz (32 ms), what Silero v5/v6 expects
CONTEXT = 64  # samples of the previous window prepended to each window
WINDOW_MS = WINDOW * 1000 / RATE
FAINT_GOES_ON_AFTER = 2  # silent windows after which a faint one goes on the silence (the early pass's start)
WARM_WINDOWS = 4  # quiet windows replayed into a reset model when the gate opens (128 ms)


def default_model_path() -> Path:
    try:
        import faster_whisper  # the model file ships inside the package
    except ImportError as error:
        raise VadUnavailable("Silero VAD model not found: install faster-whisper (it ships the model)") from error
    return Path(os.path.dirname(faster_whisper.__file__)) / "assets" / "silero_vad_v6.onnx"


class SileroModel:
    """One streaming Silero session: feed 512-sample windows in order, get speech probabilities."""

    def __init__(self, path: str | Path | None = None) -> None:
        model = Path(path) if path is not None else default_model_path()
        try:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.inter_op_num_threads = 1
            options.intra_op_num_threads = 1
            options.log_severity_level = 4
            self._session: Any = ort.InferenceSession(
                str(model), providers=["CPUExecutionProvider"], sess_options=options
            )
        except ImportError as error:
            raise VadUnavailable("onnxruntime is missing: install faster-whisper (it brings onnxruntime)") from error
        except Exception as error:  # onnxruntime raises its own untyped errors
            reason = str(error).splitlines()[0][:200]
            raise VadUnavailable(
                f"cannot load the Silero VAD model {model}: {reason} (reinstall faster-whisper)"
            ) from error
        self.reset()

    def reset(self) -> None:
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(CONTEXT, dtype=np.float32)

    def probability(self, window: np.ndarray) -> float:
        batch = np.concatenate([self._context, window])[None, :]
        out, self._h, self._c = self._session.run(None, {"input": batch, "h": self._h, "c": self._c})
        self._context = window[-CONTEXT:].copy()
        return float(np.asarray(out).reshape(-1)[0])


@dataclass(frozen=True)
class VadConfig:
    threshold: float = 0.5  # a window at or above this is speech
    neg_threshold: float | None = None  # speech goes on while above this (default threshold - 0.15)
    min_speech_ms: float = 64.0  # speech must last this long before SpeechStarted
    min_silence_ms: float = 300.0  # silence must last this long before SpeechEnded (the hangover)
    gate_dbfs: float | None = -60.0  # windows quieter than this may skip the model (None: never)
    gate_hold_ms: float = 500.0  # ... once the quiet has lasted this long outside speech
    floor_below_peak_db: float | None = 30.0  # windows this far under the speech peak are silence (None: never)
    floor_decay_db_per_s: float = 3.0  # the peak falls this fast, so the floor is gone after a few silent seconds
    floor_doubt: float = 0.7  # a window under the floor that Silero rates below this begins a silence (a soft tail)


class Vad:
    """Frames in, SpeechStarted/SpeechEnded out. Not thread-safe; run it where the frames arrive."""

    def __init__(self, config: VadConfig | None = None, model: SileroModel | None = None) -> None:
        self.config = config or VadConfig()
        self._model = model or SileroModel()
        self._pending = np.zeros(0, dtype=np.float32)
        self._pending_at = 0.0
        self._speaking = False
        self._run_start: float | None = None  # first window of the current speech (or silence) run
        self._run_windows = 0
        self.voiced_ms = 0.0
        self.last_probability = 0.0
        self.processed_until = 0.0  # clock time up to which audio has been judged
        self.voiced_ms = 0.0  # length of the current run of speech windows (0 after a silent one)
        self._quiet: collections.deque[np.ndarray] = collections.deque(maxlen=WARM_WINDOWS)
        self._quiet_ms = 0.0
        self._gated = False
        self.model_calls = 0  # windows the model judged
        self.gated_windows = 0  # windows the gate counted as silence without the model
        self.may_gate = True  # the owner's say: the room may be idle (False while a reply plays or echoes)
        self._peak_db = -math.inf  # the loudest window of the user's recent speech, decaying (the level floor)

    @property
    def speaking(self) -> bool:
        return self._speaking

    @property
    def gated(self) -> bool:
        """The energy gate holds: a silent room, Silero resting."""
        return self._gated

    @property
    def silence_from(self) -> float | None:
        """While speech lasts, the start of the silence it is falling into (None when it is not): the hangover
        has not run out yet, but whoever prepares for the end may start now."""
        return self._run_start if self._speaking else None

    @property
    def silence_ms(self) -> float:
        """How long the silence from `silence_from` has lasted so far (0 when there is none)."""
        return self._run_windows * WINDOW_MS if self._speaking and self._run_start is not None else 0.0

    def reset(self) -> None:
        self._model.reset()
        self._pending = np.zeros(0, dtype=np.float32)
        self._speaking = False
        self._run_start = None
        self._run_windows = 0
        self._quiet.clear()
        self._quiet_ms, self._gated = 0.0, False
        self._peak_db = -math.inf

    def feed(self, frame: Frame) -> list[SpeechStarted | SpeechEnded]:
        if len(self._pending) == 0:
            self._pending_at = frame.at
        self._pending = np.concatenate([self._pending, frame.samples])
        events: list[SpeechStarted | SpeechEnded] = []
        while len(self._pending) >= WINDOW:
            window, self._pending = self._pending[:WINDOW], self._pending[WINDOW:]
            at = self._pending_at
            self._pending_at += WINDOW / RATE
            self.processed_until = self._pending_at
            probability = self._judge(window)
            event = self._step(probability, at, faint=self._faint(window, probability))
            if event is not None:
                events.append(event)
        return events

    def _judge(self, window: np.ndarray) -> float:
        """Silero's speech probability for `window`, or 0.0 without running it while the gate is shut."""
        gate = self.config.gate_dbfs
        if gate is None or not self.may_gate or self._speaking or self.voiced_ms > 0 or _dbfs(window) >= gate:
            if self._gated:
                self._reopen()
            self._quiet_ms = 0.0
            return self._infer(window)
        self._quiet.append(window)
        self._quiet_ms += WINDOW_MS
        if self._gated or self._quiet_ms >= self.config.gate_hold_ms:
            self._gated = True
            self.gated_windows += 1
            return 0.0
        return self._infer(window)

    def _faint(self, window: np.ndarray, probability: float) -> bool:
        """Far under the user's recent speech peak (a breath, a room's tail); the peak follows their voice."""
        below = self.config.floor_below_peak_db
        if below is None:
            return False
        level = _dbfs(window)
        self._peak_db -= self.config.floor_decay_db_per_s * WINDOW_MS / 1000
        if probability >= self.config.threshold and self.may_gate and level >= self._peak_db - below:
            self._peak_db = max(self._peak_db, level)
        return level < self._peak_db - below

    def _reopen(self) -> None:
        """Sound after a gated silence: a fresh model state, warmed on the quiet just before it."""
        self._gated = False
        self._model.reset()
        for window in self._quiet:
            self._infer(window)
        self._quiet.clear()

    def _infer(self, window: np.ndarray) -> float:
        self.model_calls += 1
        return self._model.probability(window)

    def _step(self, probability: float, at: float, *, faint: bool = False) -> SpeechStarted | SpeechEnded | None:
        """`faint` windows never start speech nor count as voiced (a barge-in), and go on a silence Silero has heard
        for FAINT_GOES_ON_AFTER windows, or begin one where Silero doubts them too (the soft gaps inside words, which
        it is sure of, stay bridged)."""
        self.last_probability = probability
        config = self.config
        low = config.neg_threshold if config.neg_threshold is not None else max(config.threshold - 0.15, 0.01)
        voiced = not faint and (probability >= config.threshold or (self.voiced_ms > 0 and probability >= low))
        self.voiced_ms = self.voiced_ms + WINDOW * 1000 / RATE if voiced else 0.0
        # in silence, a run counts speech windows; in speech, a run counts silent windows
        if self._speaking:
            begun = self._run_windows >= FAINT_GOES_ON_AFTER or probability < config.floor_doubt
            hit = probability < low or (faint and begun)
        else:
            hit = probability >= config.threshold and not faint
        if not hit:
            if self._speaking or probability < low or faint:
                self._run_start, self._run_windows = None, 0
            return None
        if self._run_start is None:
            self._run_start = at
        self._run_windows += 1
        needed = config.min_silence_ms if self._speaking else config.min_speech_ms
        if self._run_windows * WINDOW * 1000 / RATE < needed:
            return None
        start, self._run_start, self._run_windows = self._run_start, None, 0
        self._speaking = not self._speaking
        return SpeechStarted(start) if self._speaking else SpeechEnded(start)


def _dbfs(window: np.ndarray) -> float:
    power = float(np.dot(window, window)) / len(window)
    return 10.0 * math.log10(power) if power > 0 else -200.0
