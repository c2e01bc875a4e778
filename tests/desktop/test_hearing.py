"""What the ears dropped reaches the person only when they likely meant to be heard, and says what to do."""

from __future__ import annotations

from audio.turns.facts import UtteranceDropped
from desktop.model.hearing import DIDNT_CATCH, dropped_problem


def test_speech_meant_for_parley_that_made_no_words_is_told() -> None:
    problem = dropped_problem(UtteranceDropped("no words", 1.4, -32.0, "no speech"))
    assert problem is not None
    assert (problem.message, problem.kind, problem.severity) == ("I didn't catch that", DIDNT_CATCH, "info")


def test_a_soft_voice_is_told_to_speak_up() -> None:
    problem = dropped_problem(UtteranceDropped("no words", 2.0, -56.0, "too quiet"))
    assert problem is not None
    assert "quietly" in problem.message
    assert "closer" in problem.fix


def test_coughs_fillers_and_parleys_own_voice_are_not_told() -> None:
    assert dropped_problem(UtteranceDropped("no words", 0.3, -30.0)) is None, "a cough"
    assert dropped_problem(UtteranceDropped("only fillers", 1.0, -30.0)) is None
    assert dropped_problem(UtteranceDropped("own voice", 2.0, -30.0)) is None
