"""A reply generated ahead of its turn: once a speculation has read the prompt (engine.speculation), the embedded
model goes on to generate the first words of the reply, into a buffer nobody hears. When the turn is decided on
the same words, its first attempt takes the buffer and follows the generation from there, so the chunker has its
first clause at once; if the user goes on, the buffer is dropped with the speculation. Once taken, the generation
goes only as fast as the turn reads it, like any stream: a token generated while Piper synthesises the first clause
would take a core from Piper and slow its clause (figures: docs/decisions/0002), and the reply
is far ahead of the voice anyway. Nothing is generated ahead for a remote provider (that would be a speculative
request with a cost)."""

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
        self._wanted = False  # the turn has read every chunk and waits for the next
        self.done = False  # the stream ended: finished, failed or stopped
        self._error: LlmError | None = None
        self._changed = anyio.Event()

    @property
    def pieces(self) -> int:
        return sum(isinstance(chunk, TextDelta) for chunk in self.chunks)

    async def pull(self, llm: LlmAdapter, signal: CancelSignal) -> None:
        """Generate until the stream ends: AHEAD_PIECES before the turn claims it, then as the turn reads it."""
        try:
            async with aclosing(llm.stream(self.options, signal)) as stream:
                async for chunk in stream:
                    self.chunks.append(chunk)
                    self._wanted = False
                    self._notify()
                    while not self._may_go_on() and not signal.cancelled:
                        await self._changed.wait()
        except LlmError as error:
            self._error = error
        finally:
            self.done = True
            self._notify()

    async def follow(self) -> AsyncGenerator[StreamChunk, None]:
        """Every chunk so far, then each new one until the stream ends (its failure raised as the stream's)."""
        self.claimed = True
        read = 0
        while True:
            while read < len(self.chunks):
                read += 1
                yield self.chunks[read - 1]
            if self.done:
                if self._error is not None:
                    raise self._error
                return
            self._wanted = True  # the turn is done with every chunk: the generation may take its next step
            self._notify()
            await self._changed.wait()

    def _may_go_on(self) -> bool:
        return self._wanted if self.claimed else self.pieces < AHEAD_PIECES

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
