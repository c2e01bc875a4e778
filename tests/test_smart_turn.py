"""Smart Turn's input matches pipecat's own (its vendored transformers code); a wrong model file is one clear line."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from adapters.runtime.model_files import ModelError, ModelNotFound
from adapters.runtime.workers import Worker
from adapters.turn.features import WINDOW, log_mel
from adapters.turn.smart_turn import SmartTurn, default_model_path, shared_session
from audio.vad import default_model_path as silero_path
from desktop.bench.turn_clips import turn_clips


def _pipecat_features() -> ModuleType:
    """pipecat's numpy copy of transformers' WhisperFeatureExtractor, loaded from the wheel without pipecat."""
    path = importlib.metadata.distribution("pipecat-ai").locate_file(
        "pipecat/audio/turn/smart_turn/_whisper_features.py"
    )
    spec = importlib.util.spec_from_file_location("pipecat_whisper_features", str(path))
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference(audio: np.ndarray) -> np.ndarray:
    """pipecat's local_smart_turn_v3: keep the last 8 s, zero-pad at the start, normalise, extract."""
    audio = audio[-WINDOW:]
    audio = np.pad(audio, (WINDOW - len(audio), 0))
    features: np.ndarray = _pipecat_features().compute_whisper_log_mel_features(audio, do_normalize=True)
    return features


@pytest.mark.parametrize("seconds", [0.0, 2.0, 8.0, 11.5])
def test_features_match_pipecats_for_short_exact_and_long_audio(seconds: float) -> None:
    speech = turn_clips()[0].audio()
    audio = np.resize(speech, round(seconds * 16_000)).astype(np.float32)  # repeats the clip when longer
    ours, theirs = log_mel(audio), _reference(audio)
    assert ours.shape == theirs.shape == (80, 800)
    assert ours.dtype == np.float32
    assert np.abs(ours - theirs).max() < 1e-4


def test_only_the_last_eight_seconds_count() -> None:
    rng = np.random.default_rng(5)
    tail = rng.standard_normal(WINDOW).astype(np.float32) * 0.1
    early = rng.standard_normal(3 * 16_000).astype(np.float32)
    assert np.array_equal(log_mel(np.concatenate([early, tail])), log_mel(tail))


def test_the_model_ships_in_the_pipecat_wheel() -> None:
    path = default_model_path()
    assert path.name == "smart-turn-v3.2-cpu.onnx"
    assert path.stat().st_size > 5_000_000


def test_a_missing_model_file_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound) as error:
        SmartTurn(tmp_path / "nope.onnx", worker=Worker("test-turn"))
    message = str(error.value)
    assert "\n" not in message
    assert "nope.onnx" in message
    assert "pip install --no-deps pipecat-ai==" in message


def test_an_onnx_file_that_is_not_smart_turn_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as error:
        shared_session(silero_path())
    assert "not a Smart Turn v3 model" in str(error.value)
    assert "\n" not in str(error.value)
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(ModelError) as error:
        shared_session(broken)
    assert "\n" not in str(error.value)
