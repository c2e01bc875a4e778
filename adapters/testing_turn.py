"""A first-class fake of the end-of-turn contract: scripted answers, the real adapter's thread and cancellation.

It answers in one blocking step in a worker thread (checking the stop flag), so pipeline tests see
the same quiescence behaviour as with Smart Turn, in milliseconds and without a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from adapters.contract.cancel import CancelSignal
from adapters.contract.pcm import resample, to_mono_float32
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples
from adapters.contract.workers import StopFlag, Worker

FAKE_TURN_WORKER = Worker("parley-fake-turn")
Answer = Callable[[Samples], float]


class FakeEndOfTurnModel:
    """Answers `answer(audio)` (or a fixed probability) after `step_s` of thread time, unless stopped first."""

    def __init__(self, answer: Answer | float = 0.9, *, step_s: float = 0.005) -> None:
        self._answer: Answer = answer if callable(answer) else _constant(float(answer))
        self._step_s = step_s
        self.calls: list[float] = []  # duration of each judged input, seconds

    @property
    def busy(self) -> int:
        return FAKE_TURN_WORKER.active

    async def predict(self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        if signal.cancelled:
            raise asyncio.CancelledError
        audio = resample(to_mono_float32(samples), sample_rate, ASR_SAMPLE_RATE)
        self.calls.append(len(audio) / ASR_SAMPLE_RATE)
        result = await FAKE_TURN_WORKER.run(lambda stop: self._judge(audio, stop), signal)
        if result is None or signal.cancelled:
            raise asyncio.CancelledError
        return result

    def _judge(self, audio: Samples, stop: StopFlag) -> float | None:
        if stop.wait(self._step_s):
            return None
        return min(max(float(self._answer(audio)), 0.0), 1.0)


def _constant(probability: float) -> Answer:
    return lambda _audio: probability


class FakeWordsEndModel:
    """The words model's fake: `answer(text)` (or a fixed probability) after `step_s` of thread time, unless stopped."""

    def __init__(self, answer: Callable[[str], float] | float = 0.0, *, step_s: float = 0.005) -> None:
        self._answer: Callable[[str], float] = answer if callable(answer) else (lambda _text: float(answer))
        self._step_s = step_s
        self.calls: list[str] = []

    @property
    def busy(self) -> int:
        return FAKE_TURN_WORKER.active

    async def predict_words(self, text: str, signal: CancelSignal) -> float:
        if signal.cancelled:
            raise asyncio.CancelledError
        self.calls.append(text)
        result = await FAKE_TURN_WORKER.run(lambda stop: self._judge(text, stop), signal)
        if result is None or signal.cancelled:
            raise asyncio.CancelledError
        return result

    def _judge(self, text: str, stop: StopFlag) -> float | None:
        if stop.wait(self._step_s):
            return None
        return min(max(float(self._answer(text)), 0.0), 1.0)
