"""A reply generated ahead of its turn: once a speculation has read the prompt (engine.speculation), the embedded
model goes on to generate the first words of the reply, into a buffer nobody hears. When the turn is decided on
the same words, its first attempt takes the buffer and follows the generation from there, so the chunker has its
first clause at once; if the user goes on, the buffer is dropped with the speculation. Once taken, the generation
goes only as fast as the turn reads it, like any stream: a token generated while Piper synthesises the first clause
would take a core from Piper and slow its clause (figures: docs/decisions/0002), and the reply is far ahead of the
voice anyway.

When the decision will wait (the end-of-turn model doubts the pause), the voice synthesizes the first clause
meanwhile (engine.speech `PreparesSpeech`), the generation waiting for it: the turn then finds its first audio
ready. Not before: beside the model that decides, the synthesis would take its core and delay the decision.
Nothing is generated ahead for a remote provider (that would be a speculative request with a cost)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing

import anyio

from adapters.contract import CancelSignal, Finish, GenerateOptions, LlmAdapter, LlmError, StreamChunk, TextDelta

Prepare = Callable[..., Awaitable[bool]]  # engine.speech.PreparesSpeech.prepare
AHEAD_PIECES = 24  # text pieces generated before the turn claims them (about a sentence); then it waits


class Ahead:
    """The generation's chunks so far; `pull` fills it (in the speculation's task), `follow` reads it (the turn)."""

    def __init__(self, options: GenerateOptions, prepare: Prepare | None = None) -> None:
        self.options = options
        self._prepare = prepare  # None once the voice has its opening (or cannot make one)
        self._rehearse = False  # the turn's decision waits: the voice may synthesize the opening now
        self.chunks: list[StreamChunk] = []
        self.claimed = False
        self._wanted = False  # the turn has read every chunk and waits for the next
        self.done = False  # the stream ended: finished, failed or stopped
        self._error: LlmError | None = None
        self._changed = anyio.Event()

    @property
    def pieces(self) -> int:
        return sum(isinstance(chunk, TextDelta) for chunk in self.chunks)

    @property
    def text(self) -> str:
        return "".join(chunk.text for chunk in self.chunks if isinstance(chunk, TextDelta))

    def rehearse(self) -> None:
        """The turn will not be decided at once: let the voice synthesize the reply's opening meanwhile."""
        self._rehearse = True
        self._notify()

    async def pull(self, llm: LlmAdapter, signal: CancelSignal) -> None:
        """Generate until the stream ends: AHEAD_PIECES before the turn claims it, then as the turn reads it. A
        reply over before it is claimed stays until the turn takes it, to hand its opening to the voice."""
        try:
            async with aclosing(llm.stream(self.options, signal)) as stream:
                async for chunk in stream:
                    self.chunks.append(chunk)
                    self._wanted = False
                    self._notify()
                    await self._wait(self._may_go_on, signal)
        except LlmError as error:
            self._error = error
        finally:
            self.done = True
            self._notify()
        if self._error is None:
            await self._wait(lambda: self.claimed or self._prepare is None, signal)

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

    async def _wait(self, until: Callable[[], bool], signal: CancelSignal) -> None:
        """Until `until()` holds, serving the voice whenever something changed."""
        await self._prepare_voice(signal)
        while not until() and not signal.cancelled:
            await self._changed.wait()
            await self._prepare_voice(signal)

    async def _prepare_voice(self, signal: CancelSignal) -> None:
        """While the turn waits to be decided, hand the voice the text so far until it has the opening; a turn
        taking the reply meanwhile finds that synthesis under way and waits for it rather than starting its own."""
        if self._prepare is None or not self._rehearse or self.claimed or not self.text:
            return
        whole = self.done or isinstance(self.chunks[-1], Finish)
        if await self._prepare(self.text, signal, whole=whole) or (whole and not signal.cancelled):
            self._prepare = None

    def _may_go_on(self) -> bool:
        return self._wanted if self.claimed else self.pieces < AHEAD_PIECES

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
