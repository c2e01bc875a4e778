"""What turn-taking reports to whoever runs it (frozen, past tense): speech it did not take as a turn."""

from __future__ import annotations

from dataclasses import dataclass

UTTERANCE_PART = "ears:"  # the work of one utterance or one interruption (audio.turns.ears names it so)
LIKELY_MEANT_S = 0.5


@dataclass(frozen=True)
class UtteranceDropped:
    """Speech the ears heard and did not take as the person's turn, and why (it is on the record too)."""

    reason: str  # "no words", "only fillers", "own voice", "session ended"
    duration_s: float
    level_dbfs: float
    detail: str = ""  # the recogniser's reason for hearing no words ("too quiet", "no speech"), if it gave one

    @property
    def likely_meant(self) -> bool:
        """Long enough to be words meant for Parley, and not Parley's own voice: worth telling the person."""
        return self.reason in ("no words", "session ended") and self.duration_s >= LIKELY_MEANT_S
