"""Never go mute without saying why (issue 37): replies that keep ending before a sound of them was heard.

On loudspeakers Parley can hear itself: each reply stops as it starts, its own voice taken for the person's, and
from the window it looks as if Parley went mute. A speaker that never plays looks the same. After a few such
replies in a row (none of them stopped by the person) a banner says why it is silent and what to do; it goes as
soon as a reply is heard again.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from desktop.model.board import Board
from desktop.model.facts import HandsFreeChanged, Problem, StopCause, TurnStopped
from engine.events import ReplyHeard, TurnEnded

UNHEARD = "unheard"  # the banner's kind
IN_A_ROW = 3  # replies ending unheard, one after another, before the banner shows
BY_THE_PERSON: frozenset[StopCause] = frozenset({"you", "push_to_talk", "settings", "conversation", "closed"})


def hearing_itself(hands_free: bool = True) -> Problem:
    fix = "Use a headset, turn the volume down, or turn off Hands-free"
    return Problem(
        "Parley keeps stopping as it starts to speak: it may be hearing itself",
        fix if hands_free else "Use a headset or turn the volume down",
        UNHEARD,
    )


def not_playing() -> Problem:
    return Problem(
        "Parley's replies are not being heard: none of the last ones made a sound",
        "Check the speaker and its volume in your system's sound settings, or choose another speaker in Settings",
        UNHEARD,
    )


class SilenceWatch:
    """Counts the replies that said something and ended with nothing heard; subscribe `handle` to the session.
    A reply the person stopped (Stop, Talk, another conversation...) is neither counted nor a reason to start
    counting again; a reply of which anything was heard is."""

    def __init__(self, board: Board, in_a_row: int = IN_A_ROW) -> None:
        self._board = board
        self._in_a_row = in_a_row
        self._stopped_by_person: set[int] = set()  # turns, until they end
        self._unheard: deque[bool] = deque(maxlen=in_a_row)  # per reply of the run: cut off (else soundless)
        self._hands_free = False

    def handle(self, event: Any) -> None:
        if isinstance(event, HandsFreeChanged):
            self._hands_free = event.on
        elif isinstance(event, TurnStopped) and event.cause in BY_THE_PERSON:
            self._stopped_by_person.add(event.turn)
        elif isinstance(event, TurnEnded):
            self._stopped_by_person.discard(event.turn)
        elif isinstance(event, ReplyHeard):
            self._reply(event)

    def _reply(self, reply: ReplyHeard) -> None:
        if reply.heard.strip():
            self._unheard.clear()
            self._board.clear_problem(UNHEARD)
            return
        if not reply.generated.strip() or reply.turn in self._stopped_by_person:
            return
        self._unheard.append(reply.interrupted)
        if len(self._unheard) == self._in_a_row and UNHEARD not in self._board.problems:
            self._board.raise_problem(hearing_itself(self._hands_free) if any(self._unheard) else not_playing())
