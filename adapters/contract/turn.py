"""The end-of-turn contract: the user's audio so far in, the probability that their turn is complete out.

A model reports a fact (a probability) and decides nothing: whether the turn is over is the endpoint
policy's call (`audio.turns.endpoint`), which also weighs the transcript and how long the silence has lasted.
"""

from __future__ import annotations

from typing import Protocol

from adapters.contract.cancel import CancelSignal
from adapters.contract.speech_io import ASR_SAMPLE_RATE, Samples


class EndOfTurnModel(Protocol):
    """Audio of the turn so far (ending in the silence under question) to P(the speaker has finished)."""

    async def predict(self, samples: Samples, signal: CancelSignal, *, sample_rate: int = ASR_SAMPLE_RATE) -> float:
        """A probability in [0, 1]; raises CancelledError (after its thread returned) once `signal` fires."""
        ...
