"""The app's model, without Qt: owns the engine conversation, the voice and the journal; publishes facts.

Commands (`send_text`, `press_to_talk`, ...) are plain calls made on the event loop's thread;
anything that waits runs as a task the session owns and awaits on `aclose()`. Listeners get the
engine's events (engine.events) and the app's facts (desktop.app.facts), all on the loop thread.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from adapters.contract import LlmAdapter, User
from adapters.llm.models import ModelError
from desktop.app.backend import BackendUnavailable, LlmChoice, choose_llm
from desktop.app.board import Board
from desktop.app.engine_host import new_journal_path, open_engine
from desktop.app.facts import (
    EngineClosed,
    EngineOpened,
    HandsFreeChanged,
    MicLevel,
    ModelLoading,
    TalkChanged,
)
from desktop.app.keyring_store import KeyStore, StoredKey
from desktop.app.tasks import OwnedTasks
from desktop.app.voice import SimulatedVoice, VoiceCallbacks, VoiceIO, VoiceUnavailable
from desktop.app.wording import internal_error, journal_unwritable, missing_model, no_engine, problem_for_failure
from desktop.config import Config, data_dir
from engine.clock import Clock, MonotonicClock
from engine.conversation import Conversation
from engine.events import State, StateChanged, TurnEnded
from engine.inbox import UserInput
from engine.journal import REDACTED
from engine.tools import ToolRegistry

log = logging.getLogger(__name__)
TURN_PROBLEMS = ("auth", "unreachable", "quota")


class Session(Board):
    def __init__(
        self,
        config: Config,
        *,
        journal_dir: Path | None = None,
        voice: VoiceIO | None = None,
        llm: LlmAdapter | None = None,
        clock: Clock | None = None,
        keys: KeyStore | None = None,
        tools: ToolRegistry | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.clock = clock or MonotonicClock()
        self.voice: VoiceIO = voice or SimulatedVoice(self.clock)
        self.keys = keys or KeyStore()
        self.journal_path = new_journal_path(journal_dir or data_dir() / "sessions")
        self.conversation: Conversation | None = None
        self.hands_free = False
        self.talking = False
        self._llm = llm
        self._tools = tools or ToolRegistry()
        self._executor = ThreadPoolExecutor(4, "parley-turn")
        self._tasks = OwnedTasks(self._task_failed)
        self._engine: AsyncExitStack | None = None
        self._engine_lock = asyncio.Lock()
        self._generation = 0
        self._key: StoredKey | None = None
        self._closed = False

    # Lifecycle

    async def start(self) -> None:
        """Open the engine (typing works from then on), then the voice (which may load models)."""
        async with self._engine_lock:
            await self._open_engine()
        try:
            await self.voice.open(self._voice_events(), self.config)
        except VoiceUnavailable as error:
            self.raise_problem(error.problem)

    async def aclose(self) -> None:
        """Dispose the live turn, wait until everything it started has ended, then close the voice."""
        if self._closed:
            return
        self._closed = True
        async with self._engine_lock:
            await self._close_engine()
        await self._tasks.settle()
        await self.voice.aclose()
        self._executor.shutdown(wait=True)  # instant: every turn is quiescent, so its threads are idle

    def apply_settings(self, config: Config) -> None:
        """Take new settings now; rebuild the engine for them (the current turn is disposed first)."""
        self.config = config
        self._tasks.spawn(self.reconfigure(config))

    async def reconfigure(self, config: Config) -> None:
        async with self._engine_lock:
            self.config = config
            await self._close_engine()
            if not self._closed:
                await self._open_engine()

    async def _open_engine(self) -> None:
        self._key = key = self.keys.load()
        try:
            choice = LlmChoice(self._llm, f"{self._llm.model} ({self._llm.provider})") if self._llm else None
            choice = choice or choose_llm(self.config, key)
        except BackendUnavailable as error:
            self.raise_problem(error.problem)
            self.publish(EngineClosed())
            return
        self.clear_problem("missing_model")
        stack = AsyncExitStack()
        engine = open_engine(
            choice,
            self.config,
            journal_path=self.journal_path,
            speech=self.voice.speech,
            clock=self.clock,
            executor=self._executor,
            tools=self._tools,
            key=key,
            voice="simulated" if self.voice.simulated else "live",
        )
        try:
            self.conversation = await stack.enter_async_context(engine)
        except OSError as error:  # the journal's folder cannot be written
            self.raise_problem(journal_unwritable(self.journal_path, error))
            self.publish(EngineClosed())
            return
        stack.callback(self.conversation.subscribe(self._on_engine))
        await self.voice.attach(self.conversation)
        stack.push_async_callback(self.voice.attach, None)  # detached before the conversation closes
        self._engine, self._generation = stack, self._generation + 1
        self.publish(EngineOpened(choice.adapter.provider, choice.adapter.model, choice.label))
        if choice.load is not None:
            self._tasks.spawn(self._load(choice, self._generation))

    async def _close_engine(self) -> None:
        stack, self._engine, self.conversation = self._engine, None, None
        if stack is not None:
            await stack.aclose()
            self.publish(EngineClosed())

    async def _load(self, choice: LlmChoice, generation: int) -> None:
        assert choice.load is not None
        started = self.clock.now()
        self.publish(ModelLoading(choice.label, "loading"))
        try:
            await choice.load()
        except ModelError as error:
            self.publish(ModelLoading(choice.label, "failed", self.clock.now() - started))
            self.raise_problem(missing_model(str(error)))
            async with self._engine_lock:
                if generation == self._generation:
                    await self._close_engine()
            return
        self.publish(ModelLoading(choice.label, "ready", self.clock.now() - started))

    def _on_engine(self, event: Any) -> None:
        self.publish(event)
        if isinstance(event, TurnEnded):
            self._after_turn(event)

    def _after_turn(self, event: TurnEnded) -> None:
        if event.failure is None:
            for kind in TURN_PROBLEMS if event.outcome == "completed" else ():
                self.clear_problem(kind)
            return
        problem = problem_for_failure(event.failure, self.config.llm, key_set=self._key is not None)
        if problem is not None:
            self.raise_problem(problem)

    # Commands

    def send_text(self, text: str) -> bool:
        """Queue typed input; False (and the reason as a banner) when nothing can answer it."""
        return bool(text.strip()) and self.submit(UserInput(text.strip(), source="text"))

    def submit(self, item: UserInput) -> bool:
        """Queue an input for its turn; the API key is redacted from it, as the journal would."""
        if self.conversation is None:
            self.raise_problem(self.problems.get("missing_model") or no_engine())
            return False
        if self._key is not None:
            item = replace(item, text=item.text.replace(self._key.secret.reveal(), REDACTED))
        self.conversation.submit(item)
        return True

    def press_to_talk(self) -> None:
        """Barge in on a reply that is being thought of or spoken, then start capturing."""
        if self.talking:
            return
        self.talking = True
        self.barge_in()
        self.voice.press()
        self.publish(TalkChanged(True))

    def release_to_talk(self) -> None:
        if not self.talking:
            return
        self.talking = False
        self.voice.release()
        self.publish(TalkChanged(False))

    def set_hands_free(self, on: bool) -> None:
        try:
            self.voice.start_listening() if on else self.voice.stop_listening()
        except VoiceUnavailable as error:
            self.raise_problem(error.problem)
            on = False
        self.hands_free = on
        self.publish(HandsFreeChanged(on))

    def barge_in(self) -> None:
        """Abort the live turn only; input queued meanwhile stays (the person is talking)."""
        if self.conversation is not None and self.conversation.live_turn is not None:
            self._tasks.spawn(self.conversation.cancel(User(), keep_inbox=True))

    def stop(self) -> None:
        """The Stop button: abort the live turn and drop queued input."""
        if self.conversation is not None:
            self._tasks.spawn(self.conversation.cancel(User()))

    def set_input_state(self, state: State) -> None:
        if self.conversation is not None:
            self.conversation.set_input_state(state)
        else:
            self.publish(StateChanged(None, state))

    def _task_failed(self, error: BaseException) -> None:
        log.error("session task failed", exc_info=error)
        self.raise_problem(internal_error(error, self.journal_path))

    def _voice_events(self) -> VoiceCallbacks:
        def level(value: float) -> None:
            self.publish(MicLevel(min(1.0, max(0.0, value))))

        def utterance(item: UserInput) -> None:
            self.submit(item)

        def listening_stopped() -> None:
            if self.hands_free:
                self.set_hands_free(False)

        return VoiceCallbacks(
            level, self.set_input_state, self.barge_in, utterance, self.raise_problem, self.publish, listening_stopped
        )
