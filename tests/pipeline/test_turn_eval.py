"""The offline end-of-turn evaluation counts cut-offs and who decided, with scripted models over real Silero."""

from __future__ import annotations

import pytest

from adapters.testing_speech import FakeTranscriber
from adapters.testing_turn import FakeEndOfTurnModel
from audio.turns.endpoint import EndpointConfig
from desktop.bench.turn_accuracy import accuracy
from desktop.bench.turn_clips import TurnClip, turn_clips
from desktop.bench.turn_sim import Delays
from desktop.bench.turns import TurnEval, evaluate_turns, turn_rows

pytestmark = pytest.mark.anyio
NAMES = ("rome_about", "station_the", "q_weather")  # a 0.8 s pause, a 0.3 s pause, no pause


def _clips() -> list[TurnClip]:
    return [clip for clip in turn_clips() if clip.name in NAMES]


async def _evaluate(words: str, probability: float) -> TurnEval:
    config = EndpointConfig(max_wait_ms=2000, doubt_wait_ms=600)
    delays = Delays(model_ms=20, asr_ms=60)  # simulated answer times: no dependence on the machine's load
    return await evaluate_turns(
        FakeEndOfTurnModel(probability), FakeTranscriber(words), config, _clips(), delays=delays
    )


def test_the_fixtures_hold_the_promised_set() -> None:
    clips = turn_clips()
    paused = [c for c in clips if c.kind == "paused"]
    assert len(paused) >= 20
    assert len(clips) - len(paused) >= 10
    assert all(0.3 <= p.length_s <= 1.0 for c in paused for p in c.pauses)
    assert all(len(c.speech) == len(c.pauses) + 1 for c in clips)


async def test_unfinished_words_hold_every_pause_until_the_speaker_goes_on() -> None:
    result = await _evaluate("tell me about the", 0.95)
    by_name = {c.name: c for c in result.clips}
    assert [c.turns for c in result.clips] == [1, 1, 1]
    assert {c.reason for c in result.clips} == {"max_wait"}
    assert by_name["rome_about"].turns_600ms == 2, "a fixed 600 ms hangover splits a 0.8 s pause"
    assert by_name["station_the"].turns_600ms == 1
    rows = {r.name: r for r in turn_rows(result)}
    assert rows["cutoff_rate"].p50 == 0
    assert rows["cutoff_rate"].met == "yes"
    assert rows["cutoff_rate_600ms"].p50 == 50


async def test_finished_words_and_a_sure_model_end_at_every_pause() -> None:
    result = await _evaluate("what time is it?", 0.95)
    by_name = {c.name: c for c in result.clips}
    assert by_name["rome_about"].turns == by_name["station_the"].turns == 2
    assert by_name["q_weather"].turns == 1
    assert {c.reason for c in result.clips} == {"model"}
    assert all(c.text_ms is not None and c.eot_ms is not None and c.text_ms >= c.eot_ms for c in result.clips)
    rows = {r.name: r for r in turn_rows(result)}
    assert rows["cutoff_rate"].p50 == 100
    assert rows["cutoff_rate"].met == "no"
    assert rows["complete_split"].p50 == 0


async def test_a_doubting_model_is_asked_once_per_pause_and_the_doubt_wait_bounds_it() -> None:
    result = await _evaluate("what time is it?", 0.1)
    by_name = {c.name: c for c in result.clips}
    assert by_name["rome_about"].turns == 2, "a 0.8 s pause outlasts the 0.6 s doubt wait"
    assert by_name["station_the"].turns == 1, "a 0.3 s pause does not"
    assert {c.reason for c in result.clips} == {"doubt"}
    assert all(c.eot_ms is not None and 600 <= c.eot_ms < 700 for c in result.clips)
    assert len(result.model_ms) == sum(c.turns for c in result.clips) + 1, "once per pause, never again"


async def test_the_model_accuracy_counts_pauses_and_ends_apart() -> None:
    result = await accuracy(FakeEndOfTurnModel(0.9), 0.2, _clips())
    assert (result.pauses, result.ends) == (2, 3)
    assert (result.pauses_right, result.ends_right) == (0, 3), "always 'complete': every pause is wrong"
    assert sorted(result.wrong) == ["rome_about@1=0.90", "station_the@1=0.90"]
