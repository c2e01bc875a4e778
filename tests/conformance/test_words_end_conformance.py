"""The `WordsEndModel` contract, proven for SmolLM2's reading and for the fake alike; then what the real model reads."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from adapters.contract.cancel import CancelSignal, User
from adapters.contract.turn import WordsEndModel
from adapters.testing_turn import FakeWordsEndModel
from adapters.turn.words_lm import SentenceEnd, normalized
from audio.endpoint import EndpointConfig
from tests.conformance.speech_harness import check_stopped_midway

pytestmark = pytest.mark.anyio
Model = SentenceEnd | FakeWordsEndModel
MODELS: dict[str, Callable[[], Model]] = {"smolLM2": SentenceEnd, "fake": lambda: FakeWordsEndModel(step_s=0.2)}
LONG = " ".join(["and then the keeper climbed the stairs"] * 40)  # more than the context: the last words count
THRESHOLD = EndpointConfig().sentence_end


@pytest.fixture(params=["smolLM2", "fake"])
def model(request: pytest.FixtureRequest) -> Model:
    return MODELS[request.param]()


def as_model(model: Model) -> WordsEndModel:
    return model


async def test_a_probability_for_any_words(model: Model) -> None:
    for text in ("Tell me a joke about cats.", "", "...", "¿Qué hora es?", LONG, "3 + 4 = 7"):
        probability = await as_model(model).predict_words(text, CancelSignal())
        assert 0.0 <= probability <= 1.0
    assert model.busy == 0


async def test_an_already_cancelled_signal_does_no_work(model: Model) -> None:
    signal = CancelSignal()
    signal.set(User())
    with pytest.raises(asyncio.CancelledError):
        await as_model(model).predict_words("Tell me a joke.", signal)
    assert model.busy == 0


def _read(model: Model) -> Callable[[CancelSignal], Awaitable[float]]:
    return lambda signal: as_model(model).predict_words(LONG, signal)


async def test_cancel_while_reading_raises_once_the_thread_returned(model: Model) -> None:
    await as_model(model).predict_words("hello", CancelSignal())  # warm: the context is loaded
    await check_stopped_midway(_read(model), lambda: model.busy, by_signal=True)


async def test_a_cancelled_task_still_waits_for_its_worker_thread(model: Model) -> None:
    await check_stopped_midway(_read(model), lambda: model.busy, by_signal=False)


def test_whispers_full_stop_and_case_are_not_read() -> None:
    assert normalized("My favourite food is.") == normalized("my favourite food is") == "my favourite food is"


@pytest.mark.parametrize(
    "fragment",
    ["My favourite food is.", "Who wrote the book.", "Set an alarm for seven.", "Remind me to water the plants."],
)
async def test_smollm2_reads_a_complete_sounding_fragment_as_going_on(fragment: str) -> None:
    """The pauses of the end-of-turn fixtures that the unfinished-word list cannot tell (assets/fixtures/turns)."""
    assert await SentenceEnd().predict_words(fragment, CancelSignal()) < THRESHOLD


@pytest.mark.parametrize(
    "whole",
    ["Turn off the lights in the kitchen and the living room.", "Tell me a joke about cats.",
     "Tell me a long story about a dragon who learns to fly."],
)  # fmt: skip
async def test_smollm2_reads_a_whole_request_as_ended(whole: str) -> None:
    assert await SentenceEnd().predict_words(whole, CancelSignal()) >= THRESHOLD
