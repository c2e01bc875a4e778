"""What the ears dropped, in words for the person: said only when they likely meant to be heard."""

from __future__ import annotations

from audio.turns.facts import UtteranceDropped
from desktop.model.facts import Problem
from desktop.pipeline.facts import TOO_QUIET_DBFS

DIDNT_CATCH = "didnt_catch"


def dropped_problem(dropped: UtteranceDropped) -> Problem | None:
    """A notice for speech that was likely meant for Parley and made no turn; None for coughs, fillers, echo."""
    if not dropped.likely_meant:
        return None
    if dropped.level_dbfs < TOO_QUIET_DBFS:
        return Problem(
            f"I didn't catch that: your voice reached me very quietly ({dropped.level_dbfs:.0f} dBFS)",
            "Speak up, move closer, or raise the microphone's input volume in your system's sound settings",
            DIDNT_CATCH,
            "info",
        )
    return Problem("I didn't catch that", "Please say it again, or type it below", DIDNT_CATCH, "info")
