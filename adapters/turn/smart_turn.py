"""Smart Turn v3.2 behind the `EndOfTurnModel` contract: one shared ONNX session, inference in one worker thread.

The model file (BSD-2, ~8.7 MB) is package data of the `pipecat-ai` wheel, installed without its
dependencies; only the file is read, pipecat's code is never imported. One call takes ~100-150 ms on one
core. Cancellation: a stop ends the inference under way (ONNX Runtime's RunOptions.terminate), the thread
returns, and `predict` raises `asyncio.CancelledError`.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors

from adapters.contract.cancel import CancelSignal, stopped
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples
from adapters.runtime.model_files import ModelError, ModelNotFound, find_in_distribution
from adapters.runtime.pcm import resample, to_mono_float32
from adapters.runtime.workers import StopFlag, Worker
from adapters.turn.features import FRAMES, MELS, log_mel

DEFAULT_PACKAGE = "pipecat-ai"
PACKAGE_VERSION = "1.14.0"  # packaging/bootstrap.sh installs this one, without dependencies
MODEL_FILE = "smart-turn-v3.2-cpu.onnx"
INPUT = "input_features"
INSTALL = f"pip install --no-deps {DEFAULT_PACKAGE}=={PACKAGE_VERSION}"
_RUN_ERRORS = (ort_errors.Fail, ort_errors.RuntimeException, ort_errors.InvalidArgument)
_LOAD_ERRORS = (OSError, RuntimeError, ValueError, *_RUN_ERRORS, ort_errors.InvalidGraph, ort_errors.InvalidProtobuf,
                ort_errors.NoSuchFile, ort_errors.NotImplemented)  # fmt: skip

TURN_WORKER = Worker("parley-turn", threads=1)
_sessions: dict[Path, Any] = {}
_sessions_lock = threading.Lock()


@functools.cache
def default_model_path() -> Path:
    """smart-turn-v3.2-cpu.onnx from the `pipecat-ai` wheel (package data; pipecat itself is not imported). Found
    once per process: the wheel lists thousands of files (a few hundred ms of scanning)."""
    try:
        return find_in_distribution(DEFAULT_PACKAGE, f"*/smart_turn/data/{MODEL_FILE}")
    except ModelNotFound:
        missing = f"the Smart Turn model ({MODEL_FILE}) is not installed"
        raise ModelNotFound(f"{missing}; install it with `{INSTALL}`") from None


def check_model_file(path: str | Path) -> Path:
    """The resolved path of an existing model file, or a one-line `ModelNotFound`."""
    model = Path(path).expanduser().resolve()
    if not model.is_file():
        raise ModelNotFound(f"Smart Turn model {model} does not exist; `{INSTALL}` or set the path to a .onnx file")
    return model


def shared_session(model: Path) -> Any:
    """Load once per process (blocking: call it from a worker thread); one intra-op thread, sequential."""
    with _sessions_lock:
        if model not in _sessions:
            _sessions[model] = _load(model)
        return _sessions[model]


def _load(model: Path) -> Any:
    options = onnxruntime.SessionOptions()
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = 1
    options.log_severity_level = 4
    try:
        session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    except _LOAD_ERRORS as error:
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        raise ModelError(f"{model}: cannot load the Smart Turn model ({reason}); `{INSTALL}` again") from None
    shapes = {node.name: node.shape[1:] for node in session.get_inputs()}
    if shapes != {INPUT: [MELS, FRAMES]}:
        raise ModelError(f"{model} is not a Smart Turn v3 model (inputs {shapes}); point it to {MODEL_FILE}")
    return session


def infer(session: Any, samples: Samples, options: Any = None) -> float:
    """P(complete) for 16 kHz mono audio ending now (blocking)."""
    features = log_mel(samples)[None, :, :]
    (output,) = session.run(None, {INPUT: features}, options)
    probability = float(np.asarray(output).reshape(-1)[0])  # the graph ends in a sigmoid
    return min(max(probability, 0.0), 1.0) if np.isfinite(probability) else 0.0


class SmartTurn:
    """Asks Smart Turn whether the speaker has finished; feed it the turn's audio up to now (the last 8 s count)."""

    def __init__(self, model_path: str | Path | None = None, *, worker: Worker = TURN_WORKER) -> None:
        self._model = check_model_file(model_path if model_path is not None else default_model_path())
        self._worker = worker

    @property
    def model_path(self) -> Path:
        return self._model

    @property
    def busy(self) -> int:
        """Jobs of this model's worker whose thread has not returned."""
        return self._worker.active

    async def preload(self, signal: CancelSignal) -> None:
        """Load the shared session in the worker now, so the first pause does not pay for it."""
        await self._worker.run(lambda _stop: shared_session(self._model), signal)

    def probability(self, samples: Samples, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        """Blocking form of `predict`, for offline evaluation on the caller's thread."""
        return infer(shared_session(self._model), _prepared(samples, sample_rate))

    async def predict(self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        if signal.cancelled:
            await stopped()
        audio = _prepared(samples, sample_rate)
        return await self._worker.answer(lambda stop: self._infer(audio, stop), signal)

    def _infer(self, audio: Samples, stop: StopFlag) -> float | None:
        """Runs in the worker: None when `stop` was set before or during the inference."""
        session = shared_session(self._model)
        options = onnxruntime.RunOptions()
        unregister = stop.on_set(lambda: setattr(options, "terminate", True))
        try:
            return None if stop.is_set() else infer(session, audio, options)
        except _RUN_ERRORS:
            if stop.is_set():
                return None  # terminated mid-inference
            raise
        finally:
            unregister()


def _prepared(samples: Samples, sample_rate: int) -> Samples:
    return resample(to_mono_float32(samples), sample_rate, ASR_SAMPLE_RATE)
