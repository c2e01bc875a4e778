"""Speculative prefill: start on the reply before the turn is decided, and drop it without a trace if the user goes on.

At a pause the listening side has the words so far; `Speculator.start(text)` builds the request the next turn would
send with them (system prompt, history, the words) and has the model read it: the embedded model evaluates it into
its KV cache, and its prefix cache keeps what still matches when the turn's own request comes, so the first token
follows the decision at once. A remote provider is sent nothing unless the user opted in (`speculative_requests`):
then a one-token request warms the provider's prompt cache, journalled as `llm/prefill` (what is sent to a provider
is always on the record), and costs what any request costs.

Once the embedded model has read the prompt it generates the reply's first words ahead (engine.ahead): a turn
decided on the same words takes them as its first attempt's stream.

A speculation is not a turn: it writes no turn event and is never in the history. It is owned like any other work:
its task lives in the speculator's group, a newer one or the user going on drops it (what it read stays in the
prefix cache for the next one), a turn waits for it to end
before sending (so speculative llama work never runs beside a real generation), and `cancel()` ends it before
returning. It never starts while a turn is live.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import anyio

from adapters.contract import CancelSignal, GenerateOptions, Hook, LlmAdapter, LlmError, StreamChunk
from adapters.contract.clock import Clock
from adapters.runtime.tasks import Tasks, open_tasks
from engine.ahead import Ahead, Prepare
from engine.journal import Event, Journal
from engine.prompt import PromptBuilder
from engine.tools import ToolRegistry
from engine.trim import carried_trim

log = logging.getLogger(__name__)
DROPPED = Hook("speculation dropped")


@runtime_checkable
class Prefills(Protocol):
    """An adapter that can read a prompt ahead of the request that will use it (the embedded model)."""

    async def prefill(self, options: GenerateOptions, signal: CancelSignal) -> None:
        """Read the prompt of `options`, sample nothing; return early (no error) once `signal` fires."""
        ...


@dataclass(eq=False)
class Speculation:
    """One speculative prefill: the words it was started on, its own signal, and when it ended."""

    text: str
    generate_ahead: bool = False  # once read, begin the reply (engine.ahead)
    signal: CancelSignal = field(default_factory=CancelSignal)
    ended: anyio.Event = field(default_factory=anyio.Event)
    read_done: anyio.Event = field(default_factory=anyio.Event)  # reading the prompt is over (read, or not)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    read: bool = False  # the model finished reading the prompt
    ahead: Ahead | None = None  # the reply generated ahead, once read
    rehearsing: bool = False  # the voice may synthesize the reply's opening (engine.ahead)

    def rehearse(self) -> None:
        """The turn's decision will wait: the reply's opening may be synthesized meanwhile, once it is generated."""
        self.rehearsing = True
        if self.ahead is not None:
            self.ahead.rehearse()

    def drop(self) -> None:
        """The user went on (or the turn differs): stop it; `ended` is set once its work has returned."""
        self.scope.cancel()
        self.signal.set(DROPPED)


@dataclass(frozen=True)
class SpeculationParts:
    """What a speculation reads from the engine."""

    llm: LlmAdapter
    journal: Journal
    prompt: PromptBuilder
    tools: ToolRegistry
    clock: Clock
    speculative_requests: bool  # the user allows speculative requests to a remote provider
    prepare: Prepare | None = None  # the voice's synthesis of a reply's opening (engine.speech.PreparesSpeech)


class Speculator:
    """Starts, drops and settles speculations; `running()` owns their tasks."""

    def __init__(self, parts: SpeculationParts, next_turn: Callable[[], int]) -> None:
        self._parts = parts
        self._next_turn = next_turn
        self._tasks: Tasks | None = None
        self.current: Speculation | None = None
        self._last: Speculation | None = None  # the latest one started, until a turn settles it
        self.started = 0

    @property
    def useful(self) -> bool:
        """Speculating can make the first token come sooner with this provider (and the user allows it)."""
        return isinstance(self._parts.llm, Prefills) or self._parts.speculative_requests

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with open_tasks(on_error=_failed, cancel_on_exit=True) as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self.drop()

    def start(self, text: str, *, ahead: bool = False) -> Speculation | None:
        """Read the next turn's request for `text` (and with `ahead`, begin its reply); None when it would gain
        nothing or is not running. Empty `text` reads the part that does not depend on the words (system prompt
        and history: most of it) while the user is still speaking; only a model that prefills does that."""
        if self._tasks is None or not self.useful or (not text.strip() and not isinstance(self._parts.llm, Prefills)):
            return None
        previous, spec = self.current, Speculation(text, generate_ahead=ahead)
        if previous is not None:
            previous.drop()
        self.current = self._last = spec
        self.started += 1
        events = self._next_events(text)  # as the journal is now: the turn may start while this one waits
        self._tasks.start(self._run, spec, previous, events, name="speculative-prefill")
        return spec

    def drop(self) -> None:
        if self.current is not None:
            self.current.drop()
            if self.current.ended.is_set():
                self.current = None

    async def settle(self, text: str, metrics: dict[str, float]) -> None:
        """Before a turn sends: keep a speculation on the same words (wait for it to finish reading, it is the same
        work the request would do; its reply generated ahead waits for `claim`), drop any other and wait until it
        has ended. `metrics` get `prefilled` (1: the model had read this very request) and `prefill_wait_ms`."""
        spec, last, self._last = self.current, self._last, None
        if spec is not None:
            started = self._parts.clock.now()
            if spec.text == text:
                await spec.read_done.wait()
                metrics["prefill_wait_ms"] = round((self._parts.clock.now() - started) * 1000, 1)
            else:
                spec.drop()
                await spec.ended.wait()
        if last is not None and last.text == text:
            metrics["prefilled"] = float(last.read)

    async def claim(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None] | None:
        """The turn's first request: the reply generated ahead for exactly `options`, followed from where it is, and
        cancelled with `signal`; None (after any speculation has ended) when there is none."""
        spec = self.current
        if spec is None:
            return None
        ahead = spec.ahead
        if ahead is None or ahead.claimed or ahead.options != options:
            spec.drop()
            await spec.ended.wait()
            return None
        return self._follow(spec, ahead, signal.on_cancel(lambda _cause: spec.drop()))

    async def _follow(
        self, spec: Speculation, ahead: Ahead, unlink: Callable[[], None]
    ) -> AsyncGenerator[StreamChunk, None]:
        try:
            async for chunk in ahead.follow():
                yield chunk
        finally:
            unlink()
            spec.drop()  # a no-op once the generation ended; else it stops within a token
            with anyio.CancelScope(shield=True):  # the turn is quiescent only once the generation's thread is
                await spec.ended.wait()

    async def cancel(self) -> None:
        """Drop the speculation under way and wait until its work has ended."""
        spec = self.current
        if spec is not None:
            spec.drop()
            await spec.ended.wait()
            if self.current is spec:
                self.current = None

    async def _run(self, spec: Speculation, previous: Speculation | None, events: list[Event]) -> None:
        try:
            with spec.scope:
                if previous is not None:
                    await previous.ended.wait()
                await self._read(spec, events)
        finally:
            spec.read_done.set()
            spec.ended.set()
            kept = spec.ahead is not None and not spec.ahead.claimed and not spec.signal.cancelled
            if self.current is spec and not kept:  # a whole reply generated ahead waits for its turn
                self.current = None

    async def _read(self, spec: Speculation, events: list[Event]) -> None:
        parts = self._parts
        trim = carried_trim(events, parts.llm.provider, parts.llm.model)  # as the turn's first request will
        messages = await parts.prompt.build(events, spec.signal, drop_oldest=trim)
        options = GenerateOptions(messages, tools=parts.tools.specs())
        if spec.signal.cancelled:
            return
        try:
            if isinstance(parts.llm, Prefills):
                await parts.llm.prefill(options, spec.signal)
            else:
                await self._warm_remote(options, spec.signal)
        except LlmError as error:  # a prompt too long, say: the turn's own request will meet it and say so
            log.info("speculative prefill failed (%s); the turn will read its prompt itself", error.failure.code)
            return
        spec.read = not spec.signal.cancelled
        if spec.read and spec.generate_ahead and spec.text.strip() and isinstance(parts.llm, Prefills):
            spec.ahead = Ahead(options, parts.prepare)
            if spec.rehearsing:
                spec.ahead.rehearse()
            spec.read_done.set()
            await spec.ahead.pull(parts.llm, spec.signal)

    def _next_events(self, text: str) -> list[Event]:
        """The journal as it will be once the next turn has started on `text`: what its request is built from."""
        turn = self._next_turn()
        return [
            *self._parts.journal.events,
            _event("turn/start", turn=turn, source="voice"),
            _event("user/message", turn=turn, text=text),
        ]

    async def _warm_remote(self, options: GenerateOptions, signal: CancelSignal) -> None:
        """The opt-in: a one-token request on the record (`llm/prefill`), its answer thrown away."""
        llm = self._parts.llm
        self._parts.journal.append("llm/prefill", provider=llm.provider, model=llm.model, speculative=True)
        async with aclosing(llm.stream(replace(options, max_tokens=1), signal)) as stream:
            async for _chunk in stream:
                pass


def _event(type_: str, **fields: Any) -> Event:
    return {"type": type_, **fields}


def _failed(name: str, error: Exception) -> None:
    log.error("%s failed; the turn will read its prompt itself", name, exc_info=error)
