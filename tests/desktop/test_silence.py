"""Issue 37: never go mute without saying why. Replies that keep ending before a sound of them was heard (Parley
hearing itself on loudspeakers, or a speaker that plays nothing) put a banner in plain words; a heard reply
takes it away; replies the person stopped never count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytestqt.qtbot import QtBot

from adapters.runtime.clock import SystemClock
from desktop.config import Config
from desktop.model.board import Board
from desktop.model.facts import HandsFreeChanged, TurnStopped
from desktop.model.session import Session
from desktop.model.silence import IN_A_ROW, UNHEARD, SilenceWatch
from desktop.model.voice import SimulatedVoice
from engine.events import ReplyHeard, TurnEnded
from engine.testing import reply
from tests.desktop.helpers import AnswersByContent, running_window, until


def _unheard(turn: int, *, interrupted: bool = True, generated: str = "Once upon a time") -> ReplyHeard:
    return ReplyHeard(turn, 1, "", generated, interrupted, 0.0)


def _watched() -> tuple[Board, SilenceWatch]:
    board = Board()
    watch = SilenceWatch(board)
    board.subscribe(watch.handle)
    return board, watch


def _end(board: Board, event: ReplyHeard) -> None:
    board.publish(event)
    board.publish(TurnEnded(event.turn, "aborted" if event.interrupted else "completed"))


def test_replies_cut_off_before_a_sound_say_parley_may_be_hearing_itself() -> None:
    board, _ = _watched()
    board.publish(HandsFreeChanged(True))
    for turn in range(1, IN_A_ROW):
        _end(board, _unheard(turn))
        assert UNHEARD not in board.problems  # one or two can be the person talking at once
    _end(board, _unheard(IN_A_ROW))
    problem = board.problems[UNHEARD]
    assert problem.message == "Parley keeps stopping as it starts to speak: it may be hearing itself"
    assert "headset" in problem.fix
    assert "Hands-free" in problem.fix
    _end(board, ReplyHeard(IN_A_ROW + 1, 1, "Hello.", "Hello.", False, 400.0))
    assert UNHEARD not in board.problems
    board.publish(HandsFreeChanged(False))
    for turn in range(IN_A_ROW + 2, 2 * IN_A_ROW + 2):
        _end(board, _unheard(turn))
    assert board.problems[UNHEARD].fix == "Use a headset or turn the volume down"  # Hands-free is off already


def test_replies_that_play_without_a_sound_say_the_speaker_is_not_heard() -> None:
    board, _ = _watched()
    for turn in range(1, IN_A_ROW + 1):
        _end(board, _unheard(turn, interrupted=False))
    assert "not being heard" in board.problems[UNHEARD].message
    assert "speaker" in board.problems[UNHEARD].fix


def test_replies_the_person_stopped_or_that_said_nothing_do_not_count() -> None:
    board, _ = _watched()
    turn = 0
    for cause in ("you", "push_to_talk", "conversation", "settings", "closed"):
        turn += 1
        board.publish(TurnStopped(turn, cause))  # type: ignore[arg-type]
        _end(board, _unheard(turn))
    for _ in range(IN_A_ROW):
        turn += 1
        _end(board, _unheard(turn, generated=" "))  # nothing was said: nothing to hear
    assert UNHEARD not in board.problems
    turn += 1
    board.publish(TurnStopped(turn, "voice"))  # a voice over the reply's start: its own, maybe
    _end(board, _unheard(turn))
    assert UNHEARD not in board.problems  # one is not a run


def test_a_heard_reply_starts_the_count_again() -> None:
    board, _ = _watched()
    for turn in range(1, IN_A_ROW):
        _end(board, _unheard(turn))
    _end(board, ReplyHeard(IN_A_ROW, 1, "Sure.", "Sure, here it is.", True, 300.0))
    for turn in range(IN_A_ROW + 1, 2 * IN_A_ROW):
        _end(board, _unheard(turn))
    assert UNHEARD not in board.problems


def test_the_window_says_why_parley_is_silent(run: Any, qtbot: QtBot, tmp_path: Path) -> None:
    """In the window: replies cut off as they start, as the pipeline does when it takes Parley's voice for the
    person's (a barge-in with no cause of the person's), end in a banner that says why; a heard reply ends it."""
    clock = SystemClock()
    voice = SimulatedVoice(clock, ms_per_word=3000)  # the first word is heard only after 3 s
    llm = AnswersByContent([("story", reply("Once upon a time there was a dragon."))], otherwise="Hi.")
    session = Session(Config(), journal_dir=tmp_path, voice=voice, llm=llm, clock=clock)

    async def scenario() -> None:
        async with running_window(session, tmp_path / "config.toml") as window:
            for turn in range(1, IN_A_ROW + 1):
                assert "unheard" not in window.banners.banners
                assert session.send_text("Tell me a story")
                await until(lambda t=turn: _spoken(window, t), what=f"reply {turn} speaking")
                session.barge_in()  # what the pipeline calls when it hears a voice
                await until(lambda t=turn: _settled(window, t), what=f"reply {turn} stopped")
                bubble = window.transcript_model.assistant(turn)
                assert bubble.note == "No reply — stopped before anything was heard"
            banner = window.banners.banners["unheard"]
            await until(banner.isVisible, what="the banner shown")  # Qt shows a widget added to a layout queued
            assert "it may be hearing itself" in banner.label.text()
            assert "Use a headset or turn the volume down" in banner.label.text()
            assert session.send_text("Say hi")
            await until(lambda: "unheard" not in window.banners.banners, within=15, what="a heard reply")
            assert window.transcript_model.assistant(IN_A_ROW + 1).heard == "Hi."

    run(scenario(), within=40)


def _spoken(window: Any, turn: int) -> bool:
    bubble = window.transcript_model.assistant(turn)
    return bubble is not None and bool(bubble.text) and window.session.conversation.state.value == "speaking"


def _settled(window: Any, turn: int) -> bool:
    bubble = window.transcript_model.assistant(turn)
    return bubble is not None and bubble.settled
