"""A scripted LLM adapter that keeps every SPEC §2 obligation, so the engine is tested against the contract."""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field

from adapters.contract import (
    CancelSignal,
    Finish,
    GenerateOptions,
    LlmError,
    LlmFailure,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from adapters.contract.clock import Clock
from adapters.contract.llm import EMPTY_RESPONSE, FailureCode
from adapters.runtime.clock import SystemClock
from adapters.runtime.workers import StopFlag, run_blocking, run_job


@dataclass(frozen=True)
class Emit:
    chunk: StreamChunk


@dataclass(frozen=True)
class Raise:
    """The transport/protocol error path: `stream()` raises."""

    failure: LlmFailure


@dataclass(frozen=True)
class Delay:
    """Wait on the injected clock (a slow trickle is pauses between emits)."""

    seconds: float


@dataclass(frozen=True)
class Hang:
    """Wait until cancelled (a stalled provider that honours cancel)."""


@dataclass(frozen=True)
class Stubborn:
    """Block a worker thread that ignores the cancel signal until `release` is set."""

    release: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)  # the thread is in

    def block(self) -> None:
        self.entered.set()
        self.release.wait()


Action = Emit | Raise | Delay | Hang | Stubborn
DEFAULT_USAGE = Usage(10, 5)
Script = Sequence[Action]


class FakeLlm:
    """Each `stream()` call plays the next script; every call is recorded as one attempt."""

    def __init__(
        self,
        scripts: Sequence[Script] = (),
        *,
        clock: Clock | None = None,
        provider: str = "fake",
        model: str = "fake-1",
    ) -> None:
        self._scripts = list(scripts)
        self._clock = clock or SystemClock()
        self._provider = provider
        self._model = model
        self.calls: list[GenerateOptions] = []
        self.open_streams = 0
        self.started = threading.Event()
        self.prefills: list[GenerateOptions] = []  # prompts read ahead (engine.speculation), never sent anywhere
        self.prefill_s = 0.005  # how long reading a prompt keeps its worker thread busy
        self.prefill_threads = 0  # prefill threads that have not returned

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model(self) -> str:
        return self._model

    def push(self, *scripts: Script) -> None:
        self._scripts.extend(scripts)

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        self.calls.append(options)
        script = self._scripts.pop(0) if self._scripts else reply("OK.")
        self.open_streams += 1
        self.started.set()
        try:
            async for chunk in self._play(script, signal):
                yield chunk
        finally:
            self.open_streams -= 1

    async def prefill(self, options: GenerateOptions, signal: CancelSignal) -> None:
        """Read a prompt ahead of its request: one blocking step in a worker thread that returns on `signal`."""
        self.prefills.append(options)
        await run_job(self._read, signal)

    def _read(self, stop: StopFlag) -> None:
        self.prefill_threads += 1
        try:
            stop.wait(self.prefill_s)
        finally:
            self.prefill_threads -= 1

    async def _play(self, script: Script, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        content = False
        for action in script:
            if isinstance(action, Emit):
                if isinstance(action.chunk, Finish):
                    yield _finish(action.chunk, content)
                    return
                content = content or isinstance(action.chunk, TextDelta | ToolCallDelta)
                yield action.chunk
            elif isinstance(action, Raise):
                raise LlmError(action.failure)
            elif isinstance(action, Delay):
                await self._clock.sleep(action.seconds)
            elif isinstance(action, Hang):
                await signal.wait()
                return
            else:
                await run_blocking(action.block)


def _finish(finish: Finish, content: bool) -> Finish:
    if finish.failure is None and not content:
        return Finish("error", LlmFailure("the model finished without any content", EMPTY_RESPONSE))
    return finish


def reply(text: str, *, pieces: int = 0, delay: float = 0.0, usage: Usage = DEFAULT_USAGE) -> Script:
    """A normal streamed answer, split by words (or into `pieces`), with optional pauses between deltas."""
    parts = _split(text, pieces)
    actions: list[Action] = []
    for part in parts:
        if delay:
            actions.append(Delay(delay))
        actions.append(Emit(TextDelta(part)))
    return [*actions, Emit(usage), Emit(Finish("stop"))]


def tool_reply(name: str, fragments: Sequence[str], *, call_id: str = "call_1", text: str = "") -> Script:
    """A tool call whose raw JSON arguments arrive in `fragments`."""
    actions: list[Action] = [Emit(TextDelta(text))] if text else []
    actions.append(Emit(ToolCallDelta(0, fragments[0] if fragments else "", call_id, name)))
    actions.extend(Emit(ToolCallDelta(0, fragment)) for fragment in fragments[1:])
    return [*actions, Emit(Usage(10, 5)), Emit(Finish("tool_calls"))]


def failure(code: str, *, retry_after_ms: int | None = None, status: int | None = None) -> Script:
    """The transport path: `stream()` raises before any chunk."""
    return [Raise(LlmFailure(f"fake {code}", FailureCode(code), status, retry_after_ms, "req-fake"))]


def stream_failure(code: str, *, after: str = "", retry_after_ms: int | None = None) -> Script:
    """The provider path: an error reported inside the stream ends it with a failing finish."""
    head: list[Action] = [Emit(TextDelta(after))] if after else []
    failing = Finish("error", LlmFailure(f"fake {code}", FailureCode(code), None, retry_after_ms, "req-fake"))
    return [*head, Emit(Usage(10, 0)), Emit(failing)]


def empty_reply() -> Script:
    return [Emit(Usage(10, 0)), Emit(Finish("stop"))]


def _split(text: str, pieces: int) -> list[str]:
    if pieces <= 0:
        words = text.split(" ")
        return [word + " " for word in words[:-1]] + [words[-1]]
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]
