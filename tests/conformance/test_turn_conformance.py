"""The `EndOfTurnModel` contract, proven for Smart Turn and for the fake alike; then what the real model hears."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import numpy as np
import pytest

from adapters.contract.cancel import CancelSignal, User
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples
from adapters.contract.turn import EndOfTurnModel
from adapters.testing_turn import FakeEndOfTurnModel
from adapters.turn.smart_turn import SmartTurn
from desktop.bench.turn_clips import TurnClip, turn_clips
from tests.conformance.speech_harness import check_stopped_midway

pytestmark = pytest.mark.anyio
Model = SmartTurn | FakeEndOfTurnModel
MODELS: dict[str, Callable[[], Model]] = {"smart_turn": SmartTurn, "fake": lambda: FakeEndOfTurnModel(step_s=0.2)}
SILENCE_S = 0.2  # what the VAD waits before the question is asked


@pytest.fixture(params=[pytest.param("smart_turn", marks=pytest.mark.slow), "fake"])
def model(request: pytest.FixtureRequest) -> Model:
    return MODELS[request.param]()


def _clip(name: str) -> TurnClip:
    return next(clip for clip in turn_clips() if clip.name == name)


def _speech() -> Samples:
    clip = _clip("q_everest")
    return clip.until(clip.speech_end_s, SILENCE_S)


def as_model(model: Model) -> EndOfTurnModel:
    return model


async def test_a_probability_for_any_audio(model: Model) -> None:
    for audio in (_speech(), np.zeros(ASR_SAMPLE_RATE, np.float32), np.zeros(0, np.float32), np.tile(_speech(), 4)):
        probability = await as_model(model).predict(audio, CancelSignal())
        assert 0.0 <= probability <= 1.0
    assert model.busy == 0


async def test_other_rates_are_resampled(model: Model) -> None:
    audio = _speech()
    at_48k = np.repeat(audio, 3)
    same = await as_model(model).predict(audio, CancelSignal())
    assert await as_model(model).predict(at_48k, CancelSignal(), sample_rate=48_000) == pytest.approx(same, abs=0.1)


async def test_an_already_cancelled_signal_does_no_work(model: Model) -> None:
    signal = CancelSignal()
    signal.set(User())
    with pytest.raises(asyncio.CancelledError):
        await as_model(model).predict(_speech(), signal)
    assert model.busy == 0


def _predict(model: Model) -> Callable[[CancelSignal], Awaitable[float]]:
    return lambda signal: as_model(model).predict(_speech(), signal)


async def test_cancel_while_predicting_raises_once_the_thread_returned(model: Model) -> None:
    await as_model(model).predict(_speech(), CancelSignal())  # warm: the session is loaded
    await check_stopped_midway(_predict(model), lambda: model.busy, by_signal=True)


async def test_a_cancelled_task_still_waits_for_its_worker_thread(model: Model) -> None:
    await check_stopped_midway(_predict(model), lambda: model.busy, by_signal=False)


@pytest.mark.slow
async def test_smart_turn_hears_a_finished_question_as_complete() -> None:
    assert await SmartTurn().predict(_speech(), CancelSignal()) > 0.5


@pytest.mark.slow
@pytest.mark.parametrize("name", ["know_more_the", "reading_the"])
async def test_smart_turn_hears_a_sentence_cut_after_about_the_as_incomplete(name: str) -> None:
    clip = _clip(name)  # "I want to know more about the ... history of Rome.", "I was reading about the ... war"
    assert clip.pauses[0].after == "the"
    cut = clip.until(clip.speech[0][1], SILENCE_S)
    assert await SmartTurn().predict(cut, CancelSignal()) < 0.5
