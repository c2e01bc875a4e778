"""A first-class fake of the end-of-turn contract: scripted answers, the real adapter's thread and cancellation.

It answers in one blocking step in a worker thread (checking the stop flag), so pipeline tests see
the same quiescence behaviour as with Smart Turn, in milliseconds and without a model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from adapters.contract.cancel import CancelSignal, stopped
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples
from adapters.runtime.pcm import resample, to_mono_float32
from adapters.runtime.workers import StopFlag, Worker

FAKE_TURN_WORKER = Worker("parley-fake-turn")
Answer = Callable[[Samples], float]
In = TypeVar("In")


class _Scripted(Generic[In]):
    """An answer after `step_s` of thread time in the fakes' worker, unless stopped first (then CancelledError)."""

    def __init__(self, answer: Callable[[In], float], step_s: float) -> None:
        self._answer = answer
        self._step_s = step_s

    @property
    def busy(self) -> int:
        return FAKE_TURN_WORKER.active

    async def _answered(self, value: In, signal: CancelSignal) -> float:
        return await FAKE_TURN_WORKER.answer(lambda stop: self._judge(value, stop), signal)

    def _judge(self, value: In, stop: StopFlag) -> float | None:
        if stop.wait(self._step_s):
            return None
        return min(max(float(self._answer(value)), 0.0), 1.0)


class FakeEndOfTurnModel(_Scripted[Samples]):
    """Answers `answer(audio)` (or a fixed probability) after `step_s` of thread time, unless stopped first."""

    def __init__(self, answer: Answer | float = 0.9, *, step_s: float = 0.005) -> None:
        super().__init__(answer if callable(answer) else _constant(float(answer)), step_s)
        self.calls: list[float] = []  # duration of each judged input, seconds

    async def predict(self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        if signal.cancelled:
            await stopped()
        audio = resample(to_mono_float32(samples), sample_rate, ASR_SAMPLE_RATE)
        self.calls.append(len(audio) / ASR_SAMPLE_RATE)
        return await self._answered(audio, signal)


def _constant(probability: float) -> Callable[[object], float]:
    return lambda _value: probability
