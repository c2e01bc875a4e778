"""A reply generated ahead of its turn: once a speculation has read the prompt (engine.speculation), the embedded
model goes on to generate the first words of the reply, into a buffer nobody hears. When the turn is decided on
the same words, its first attempt takes the buffer and follows the generation from there, so the chunker has its
first clause at once; if the user goes on, the buffer is dropped with the speculation. Nothing is generated ahead
for a remote provider (that would be a speculative request with a cost)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio

from adapters.contract import CancelSignal, GenerateOptions, LlmAdapter, LlmError, StreamChunk, TextDelta

AHEAD_PIECES = 24  # text pieces generated before the turn claims them (about a sentence); then it waits


class Ahead:
    """The generation's chunks so far; `pull` fills it (in the speculation's task), `follow` reads it (the turn)."""

    def __init__(self, options: GenerateOptions) -> None:
        self.options = options
        self.chunks: list[StreamChunk] = []
        self.claimed = False
        self.done = False  # the stream ended: finished, failed or stopped
        self._error: LlmError | None = None
        self._changed = anyio.Event()

    @property
    def pieces(self) -> int:
        return sum(isinstance(chunk, TextDelta) for chunk in self.chunks)

    async def pull(self, llm: LlmAdapter, signal: CancelSignal) -> None:
        """Generate until the stream ends, pausing after AHEAD_PIECES until the turn claims it (or `signal`)."""
        try:
            async with aclosing(llm.stream(self.options, signal)) as stream:
                async for chunk in stream:
                    self.chunks.append(chunk)
                    self._notify()
                    while not self.claimed and self.pieces >= AHEAD_PIECES and not signal.cancelled:
                        await self._changed.wait()
        except LlmError as error:
            self._error = error
        finally:
            self.done = True
            self._notify()

    async def follow(self) -> AsyncGenerator[StreamChunk, None]:
        """Every chunk so far, then each new one until the stream ends (its failure raised as the stream's)."""
        self.claimed = True
        self._notify()
        read = 0
        while True:
            while read < len(self.chunks):
                read += 1
                yield self.chunks[read - 1]
            if self.done:
                if self._error is not None:
                    raise self._error
                return
            await self._changed.wait()

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
