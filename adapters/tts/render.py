"""One source slice to one `SynthSegment` with Piper, in a worker thread, stopping between sentence chunks."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import onnxruntime
from onnxruntime.capi import onnxruntime_pybind11_state as ort_errors
from piper import PiperVoice

from adapters.contract.speech_io import SynthSegment, WordTiming
from adapters.runtime.heap import give_back_free_heap
from adapters.runtime.workers import StopFlag
from adapters.tts.alignment import MIN_MATCH_RATIO, Span, Token, align, phones_of, proportional
from adapters.tts.arena import LONG_CHARS, SHRINK, release_grown_regions
from adapters.tts.speakable import Speakable, to_speakable

# Piper reads "[[ ... ]]" as raw phonemes; model output must never be able to do that.
_NO_RAW_PHONEMES = str.maketrans("[]", "()")


class TerminableSession:
    """Piper's ONNX session, run with this thread's RunOptions so that a stop ends the inference under way
    (ONNX Runtime checks `terminate` between graph nodes) rather than waiting out a whole sentence."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._local = threading.local()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def run(self, output_names: Any, input_feed: Any, run_options: Any = None) -> Any:
        return self._session.run(output_names, input_feed, run_options or getattr(self._local, "options", None))

    @contextmanager
    def stoppable(self, stop: StopFlag) -> Iterator[None]:
        options = onnxruntime.RunOptions()
        options.add_run_config_entry(*SHRINK)  # what a long phrase took past a first phrase's share goes back
        self._local.options = options
        unregister = stop.on_set(lambda: setattr(options, "terminate", True))
        try:
            yield
        finally:
            unregister()
            self._local.options = None


def render(voice: PiperVoice, index: int, source: str, stop: StopFlag) -> SynthSegment | None:
    """Synthesize `source` (markup is not read aloud); None when `stop` was set before it finished. Then, its
    outputs freed, the arena's grown regions go back (adapters/tts/arena.py); not after a failure, which it would
    mask."""
    segment = _synthesize(voice, index, source, stop)
    release_grown_regions()
    return segment


def _synthesize(voice: PiperVoice, index: int, source: str, stop: StopFlag) -> SynthSegment | None:
    speakable = to_speakable(source)
    spoken = speakable.spoken.translate(_NO_RAW_PHONEMES)
    tokens = [Token(s, e, _phonemes(voice, spoken[s:e])) for s, e in speakable.words()]
    audio_parts: list[np.ndarray] = []
    alignments: list[tuple[str, int]] = []
    aligned = True
    try:
        with _stoppable(voice, stop):
            for chunk in voice.synthesize(spoken, include_alignments=True):
                audio_parts.append(chunk.audio_int16_array)
                if chunk.phoneme_alignments is None:
                    aligned = False
                else:
                    alignments += [(a.phoneme, int(a.num_samples)) for a in chunk.phoneme_alignments]
                if stop.is_set():
                    return None
    except (ort_errors.Fail, ort_errors.RuntimeException):
        if stop.is_set():
            return None  # terminated mid-inference
        raise
    audio = np.concatenate(audio_parts) if audio_parts else np.zeros(0, dtype=np.int16)
    spans, estimated = _spans(tokens, alignments if aligned else None, len(audio))
    rate = voice.config.sample_rate
    words = _timings(speakable, tokens, spans, rate)
    if len(spoken) > LONG_CHARS:
        give_back_free_heap()  # what its Python side and buffers freed; a first phrase skips the 0.3 ms
    return SynthSegment(index, source, audio.astype(np.int16, copy=False), rate, words, estimated)


def _stoppable(voice: PiperVoice, stop: StopFlag) -> Any:
    """Inference the stop can end midway (a voice loaded elsewhere, unwrapped, stops between sentences only)."""
    session = voice.session
    return session.stoppable(stop) if isinstance(session, TerminableSession) else contextlib.nullcontext()


def _phonemes(voice: PiperVoice, word: str) -> tuple[str, ...]:
    """How this one word is read on its own (all of espeak's words for it, e.g. "$3.50" gives five)."""
    return tuple(phoneme for sentence in voice.phonemize(word) for phoneme in sentence)


def _spans(tokens: Sequence[Token], alignments: list[tuple[str, int]] | None, total: int) -> tuple[list[Span], bool]:
    if alignments is None or sum(count for _, count in alignments) != total:
        return proportional(tokens, total), True
    spans, ratio = align(tokens, phones_of(alignments))
    return spans, ratio < MIN_MATCH_RATIO


def _timings(speakable: Speakable, tokens: Sequence[Token], spans: Sequence[Span], rate: int) -> tuple[WordTiming, ...]:
    """Spoken-text word spans back to source characters, samples to milliseconds."""
    timings: list[WordTiming] = []
    for span in spans:
        token = tokens[span.token]
        start, end = speakable.source_span(token.start, token.end)
        timings.append(WordTiming(start, end, 1000.0 * span.start / rate, 1000.0 * span.end / rate))
    return tuple(timings)
