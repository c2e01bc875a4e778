"""The end-of-turn policy on a virtual clock: pauses mid-sentence stay one turn, finished questions end at once."""

from __future__ import annotations

import pytest

from audio.events import SpeechEnded, SpeechStarted
from audio.turns.endpoint import CheckTurn, EndpointConfig, EndpointPolicy, TurnDecided, TurnResumed
from audio.turns.words import looks_unfinished
from engine.testing.clock import VirtualClock

pytestmark = pytest.mark.anyio
OPEN_S = 0.2  # the VAD reports the end of speech after this much silence


async def _pause(clock: VirtualClock, policy: EndpointPolicy) -> tuple[float, CheckTurn]:
    """Speech for a second, then silence until the VAD reports it; returns when the silence began."""
    assert policy.on_vad(SpeechStarted(clock.now())) == []
    await clock.advance(1.0)
    silence_from = clock.now()
    await clock.advance(OPEN_S)
    decisions = policy.on_vad(SpeechEnded(silence_from))
    assert decisions == [CheckTurn(decisions[0].pause, silence_from, clock.now())]
    assert isinstance(decisions[0], CheckTurn)
    return silence_from, decisions[0]


async def test_a_finished_question_ends_as_soon_as_the_model_answers() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock)
    silence_from, check = await _pause(clock, policy)
    assert policy.heard("What's the weather like today?", until=clock.now()) == []
    await clock.advance(0.1)
    assert policy.model_said(check.pause, 0.93) == [TurnDecided(check.pause, silence_from, clock.now(), "model")]
    assert not policy.in_turn
    assert policy.deadline() is None


async def test_a_pause_after_unfinished_words_stays_one_turn_when_the_speaker_goes_on() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock)
    _, check = await _pause(clock, policy)
    assert policy.heard("Tell me about the", until=clock.now()) == []
    assert policy.model_said(check.pause, 0.97) == [], "the words say unfinished, whatever the sound says"
    await clock.advance(0.6)
    assert policy.tick() == []
    assert policy.on_vad(SpeechStarted(clock.now())) == [TurnResumed(check.pause, clock.now())]
    assert policy.model_said(check.pause, 0.99) == [], "an answer about a pause that is over is ignored"
    silence_from, second = await _pause(clock, policy)
    policy.heard("Tell me about the history of the city of Rome.", until=clock.now())
    ended = policy.model_said(second.pause, 0.8)
    assert ended == [TurnDecided(second.pause, silence_from, clock.now(), "model")]


async def test_unfinished_words_end_the_turn_only_at_the_maximum_wait() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(max_wait_ms=2000))
    silence_from, check = await _pause(clock, policy)
    policy.heard("Can you remind me to", until=clock.now())
    policy.model_said(check.pause, 0.9)
    assert policy.deadline() == pytest.approx(silence_from + 2.0)
    await clock.advance(1.7)
    assert policy.tick() == []
    await clock.advance(0.1)
    assert policy.tick() == [TurnDecided(check.pause, silence_from, clock.now(), "max_wait")]


async def test_the_configured_minimum_silence_is_a_floor() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(min_silence_ms=600))
    silence_from, check = await _pause(clock, policy)
    policy.heard("What is two plus two?", until=clock.now())
    assert policy.model_said(check.pause, 0.99) == []
    assert policy.deadline() == pytest.approx(silence_from + 0.6)
    await clock.advance(silence_from + 0.6 - clock.now())
    assert policy.tick() == [TurnDecided(check.pause, silence_from, clock.now(), "model")]


async def test_the_decision_waits_for_words_that_reach_the_silence() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock)
    silence_from, check = await _pause(clock, policy)
    assert policy.model_said(check.pause, 0.95) == [], "no transcript yet"
    assert policy.heard("Tell me a", until=silence_from - 0.5) == [], "a partial that stops before the silence"
    await clock.advance(0.3)
    assert policy.heard("Tell me a joke.", until=silence_from + 0.2) == [
        TurnDecided(check.pause, silence_from, clock.now(), "model")
    ]


async def test_without_waiting_for_words_a_stale_partial_does_not_hold_the_turn() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(wait_for_words=False))
    silence_from, check = await _pause(clock, policy)
    policy.heard("Tell me about the", until=silence_from - 0.5)
    assert policy.model_said(check.pause, 0.9) == [TurnDecided(check.pause, silence_from, clock.now(), "model")]


async def test_finished_words_the_model_doubts_hold_the_turn_for_the_doubt_wait() -> None:
    """Asked again as the silence grows, the model hears a finished turn in any long enough silence (mid-sentence
    breaths of real speakers included): it is asked once per pause, and a doubt holds the turn for a set time."""
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(doubt_wait_ms=600, max_wait_ms=2000))
    silence_from, check = await _pause(clock, policy)
    policy.heard("Can you recommend a good book?", until=clock.now())
    assert policy.model_said(check.pause, 0.1) == []
    assert policy.deadline() == pytest.approx(silence_from + 0.6)
    await clock.advance(silence_from + 0.6 - clock.now() - 0.01)
    assert policy.tick() == []
    await clock.advance(0.01)
    assert policy.tick() == [TurnDecided(check.pause, silence_from, clock.now(), "doubt")]


async def test_finished_words_without_the_models_answer_wait_no_longer_than_a_doubt() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(doubt_wait_ms=600))
    silence_from, check = await _pause(clock, policy)
    policy.heard("Turn the lights on.", until=clock.now())
    await clock.advance(silence_from + 0.6 - clock.now())
    assert policy.tick() == [TurnDecided(check.pause, silence_from, clock.now(), "doubt")]


async def test_without_a_model_finished_words_end_the_turn_after_the_fallback_wait() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(use_model=False, no_model_wait_ms=600))
    silence_from, _ = await _pause(clock, policy)
    assert policy.heard("What time is it?", until=clock.now()) == []
    assert policy.deadline() == pytest.approx(silence_from + 0.6)
    await clock.advance(silence_from + 0.6 - clock.now())
    assert [type(d) for d in policy.tick()] == [TurnDecided]


async def test_nothing_happens_outside_a_turn() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock)
    assert policy.on_vad(SpeechEnded(clock.now())) == []
    assert policy.heard("hello", until=clock.now()) == []
    assert policy.model_said(1, 1.0) == []
    assert policy.tick() == []
    assert policy.deadline() is None


@pytest.mark.parametrize(
    ("text", "unfinished"),
    [
        ("Tell me about", True),
        ("Tell me about the", True),
        ("What's a good recipe for?", True),
        ("I'd like to book a table for...", True),
        ("Can you remind me to-", True),
        ("Add eggs, milk, and", True),
        ("Well,", True),
        ("So.", True),
        ("Send a message to my", True),
        ("What is the capital of", True),
        ("Tell me about the history of the city of Rome.", False),
        ("Turn the lights on.", False),
        ("What will the weather be like?", False),
        ("Okay.", False),
        ("", False),
    ],
)
def test_plainly_unfinished_words(text: str, unfinished: bool) -> None:
    assert looks_unfinished(text) is unfinished


@pytest.mark.parametrize(
    ("text", "unfinished"),
    [
        ("My favorite food is", True),
        ("Set an alarm for seven", True),
        ("Set an alarm for seven.", False),
        ('He said "stop."', False),
        ("What time is it?", False),
        ("Wow!", False),
        ("Tell me about the.", True),
    ],
)
def test_a_punctuating_recogniser_marks_the_end_of_a_sentence(text: str, unfinished: bool) -> None:
    assert looks_unfinished(text, punctuated=True) is unfinished


async def test_words_without_a_full_stop_hold_the_turn() -> None:
    clock = VirtualClock()
    policy = EndpointPolicy(clock)
    silence_from, check = await _pause(clock, policy)
    policy.heard("My favorite food is", until=clock.now())
    assert policy.model_said(check.pause, 0.98) == []
    assert policy.deadline() == pytest.approx(silence_from + 2.0)


class _HandClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


@pytest.mark.parametrize("silence_from", [3.424, 0.992, 1001.3])
def test_a_tick_at_the_deadline_decides_despite_float_rounding(silence_from: float) -> None:
    clock = _HandClock(silence_from - 1.0)
    policy = EndpointPolicy(clock, EndpointConfig(max_wait_ms=2000))
    policy.on_vad(SpeechStarted(clock.t))
    clock.t = silence_from + 0.2
    (check,) = policy.on_vad(SpeechEnded(silence_from))
    policy.heard("Tell me about the", until=clock.t)
    while (deadline := policy.deadline()) is not None:
        clock.t = deadline
        decisions = policy.tick()
        if decisions:
            assert decisions == [TurnDecided(check.pause, silence_from, deadline, "max_wait")]
    assert not policy.in_turn


async def test_a_pause_without_any_words_holds_the_utterance_for_a_while() -> None:
    """A short word the recogniser could not make out alone ("One," before "two, three") must not end the
    utterance: the speaker may go on, and the words then come with the rest."""
    clock = VirtualClock()
    policy = EndpointPolicy(clock, EndpointConfig(no_words_wait_ms=1000))
    silence_from, check = await _pause(clock, policy)
    assert policy.heard("", until=clock.now()) == []
    assert policy.model_said(check.pause, 0.99) == []
    assert policy.deadline() == pytest.approx(silence_from + 1.0)
    await clock.advance(0.3)
    assert policy.on_vad(SpeechStarted(clock.now())) == [TurnResumed(check.pause, clock.now())]
    silence_from, check = await _pause(clock, policy)
    assert policy.heard("", until=clock.now()) == []
    await clock.advance(silence_from + 1.0 - clock.now())
    assert policy.tick() == [TurnDecided(check.pause, silence_from, clock.now(), "no_words")]
