"""The app's model, without Qt: owns the engine conversation, the voice and the journal; publishes facts.

Commands (`send_text`, `press_to_talk`, ...) are plain calls made on the event loop's thread;
anything that waits runs as a task of the session's group, which `running()` opens and closes. Listeners get the
engine's events (engine.events) and the app's facts (desktop.model.facts), all on the loop thread.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

from adapters.contract import LlmAdapter, User
from adapters.contract.clock import Clock
from adapters.llm.secret import Secret
from adapters.runtime.clock import SystemClock
from adapters.runtime.model_files import ModelError
from adapters.runtime.tasks import Tasks, open_tasks
from adapters.runtime.workers import run_blocking
from desktop.catalog.languages import running
from desktop.config import Config, data_dir
from desktop.errors import BadInput
from desktop.model.board import Board
from desktop.model.conversations import last_conversation, reply_cut
from desktop.model.engine_host import new_journal_path, open_engine
from desktop.model.facts import (
    ConversationBusy,
    ConversationOpened,
    EngineClosed,
    EngineOpened,
    HandsFreeChanged,
    MicLevel,
    ModelLoading,
    Problem,
    QueueDropped,
    StartedUp,
    StopCause,
    TalkChanged,
    TextQueued,
    TurnStopped,
)
from desktop.model.hearing import DIDNT_CATCH
from desktop.model.keyring_store import KeyStore, StoredKey
from desktop.model.reading import heard_so_far
from desktop.model.settings_rules import changed, stale_problems, try_connection
from desktop.model.silence import SilenceWatch
from desktop.model.switching import release_llm, same_model, spoken_models
from desktop.model.voice import SimulatedVoice, VoiceCallbacks, VoiceIO, VoiceUnavailable
from desktop.model.wording import (
    conversation_busy,
    internal_error,
    journal_failed,
    journal_repaired,
    journal_unwritable,
    missing_model,
    no_engine,
    problem_for_failure,
)
from desktop.pipeline.parts import LlmChoice, llm_choice
from engine.conversation import Conversation
from engine.events import State, StateChanged, TurnEnded, TurnStarted
from engine.inbox import UserInput
from engine.journal import Journal, JournalBusy, JournalCorrupt, JournalWriteFailed, quarantine_note, read_events
from engine.tools import ToolRegistry

log = logging.getLogger(__name__)
TURN_PROBLEMS = ("auth", "unreachable", "quota")
DEVICE_PROBLEMS = frozenset({"no_microphone", "no_speaker"})
# After start-up, how long a device that went quiet while the models loaded has to come back before it is shown
# as failed: loading a model can starve the audio for a moment, and the microphone is judged "stalled" after a
# second without audio and listened to again a second later.
SETTLE_S = 2.5


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
        resume: bool = False,
    ) -> None:
        """`resume`: continue the most recent conversation under `journal_dir` (else a new one starts)."""
        super().__init__()
        self.config = config
        self.started_with = config  # what the voice read once, at start: its devices run on these until a restart
        self.clock = clock or SystemClock()
        self.voice: VoiceIO = voice or SimulatedVoice(self.clock)
        self.keys = keys or KeyStore()
        self.journal_dir = journal_dir or data_dir() / "sessions"
        last = last_conversation(self.journal_dir) if resume else None
        self.journal_path = last or new_journal_path(self.journal_dir)
        self._shown: Path | None = None  # the conversation the listeners were last told about
        self._causes: dict[int, StopCause] = {}
        self.conversation: Conversation | None = None
        self.hands_free = False
        self.talking = False
        self._llm = llm
        self._tools = tools or ToolRegistry()
        self._tasks: Tasks | None = None
        self._key: StoredKey | None = None
        self._closing = False
        self._version = 0  # of the settings the engine should run with
        self._broken = -1  # settings version whose language model failed to load
        self._changed = anyio.Event()  # settings changed, a model failed, or closing
        self._applied = anyio.Event()  # the engine runs with the current settings (or cannot)
        self._ended = anyio.Event()
        self._closed_by: Problem | None = None  # why no engine runs, when it is not the language model
        self._switching = 0  # settings changes under way
        self._held: list[UserInput] = []  # input that came while the engine was being rebuilt
        self._running: Config | None = None  # the settings the engine runs with
        self._last: LlmChoice | None = None  # the language model the last engine ran
        self.starting = True  # until the speech models and the first language model have loaded (or failed to)
        self._settling = True  # ... and SETTLE_S more: device problems are held meanwhile
        self._first_llm = anyio.Event()  # the first engine's language model loaded, failed, or needs no loading
        self._held_problems: dict[str, Problem] = {}  # device problems that came while settling
        self._listen_again = False  # hands-free stopped on a device problem held while settling
        self.subscribe(SilenceWatch(self).handle)  # replies that keep ending unheard are explained, not silent

    # Lifecycle

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Session]:
        """The session's work for the block: the voice (devices, models), then the engine (typing works from then
        on). Leaving it disposes the live turn and waits until everything the session started has ended."""
        async with open_tasks(on_error=self._task_failed) as tasks:
            self._tasks = tasks
            tasks.start(self._life, name="session")
            try:
                await self._applied.wait()
                yield self
            finally:
                await self.aclose()
        self._tasks = None

    async def aclose(self) -> None:
        """Dispose the live turn, wait until it is quiescent, close the engine and then the voice."""
        self._stopping("closed")
        self._closing = True
        self._changed.set()
        self._applied.set()  # nobody waits for settings that will never be applied
        if self._tasks is not None:
            await self._ended.wait()

    def close_soon(self, then: Callable[[], None]) -> None:
        """Close as `aclose` does, from a plain call (a window's close button), and call `then` once closed."""
        if self._tasks is None:
            then()
            return

        async def close() -> None:
            await self.aclose()
            then()

        self._tasks.start(close, name="close")

    def apply_settings(self, config: Config, *, key_changed: bool = False) -> None:
        """Take new settings from the next turn on (a turn under way finishes as it began). Banners about what the
        change may have fixed go (they come back if it did not)."""
        for kind in stale_problems(self.config, config, key_changed=key_changed):
            self.clear_problem(kind)
        self.config = config
        if self.conversation is not None:
            self.conversation.inbox.hold()  # from now on, input waits for the engine on these settings
        self._spawn(self.reconfigure, config)

    def try_connection(self, config: Config, key: str, done: Callable[[bool, str], None]) -> None:
        """Ask the provider of `config` whether it answers (with `key`, else the stored one); `done` gets the
        verdict in words, on the loop thread."""

        typed = _secret(key)
        if key.strip() and typed is None:  # never test the stored key in place of one the person typed wrong
            done(False, "The API key typed here is not a usable key (printable ASCII, no spaces); fix it or clear it")
            return

        async def probe() -> None:
            secret = typed or (self._key.secret if self._key else None)
            done(*await run_blocking(lambda: try_connection(config, secret)))

        if self._tasks is not None:
            self._tasks.start(probe, name="try-connection")

    async def reconfigure(self, config: Config, *, at_next_turn: bool = True) -> None:
        """Rebuild the engine for `config`; returns once it runs (or could not be set up). `at_next_turn`: a turn
        under way finishes on the old models and no next turn starts meanwhile (its input waits and goes to the new
        engine); the speech models the settings name are loaded first, and the old models released after. Else the
        turn under way is disposed now (another conversation is opened)."""
        self.config = config
        self._switching += 1
        try:
            if at_next_turn:
                await self._after_the_turn(config)
            else:
                self._stopping("conversation")
            self._version += 1
            self._applied = anyio.Event()
            self._changed.set()
            if not self._closing and self._tasks is not None and not self._ended.is_set():
                await self._applied.wait()
        finally:
            self._switching -= 1
            self._pass_on_held()

    async def _after_the_turn(self, config: Config) -> None:
        """Load what the new settings need while the turn under way goes on, then wait for it to end (starting no
        other) and put the change on its conversation's record."""
        conversation = self.conversation
        if conversation is not None:
            conversation.inbox.hold()
        await self.voice.prepare_models(config)
        live = conversation.live_turn if conversation is not None else None
        if live is not None:
            await live.finished.wait()
        if conversation is not None and self._running is not None and conversation is self.conversation:
            names = changed(self._running, config)
            if names:
                now = running(config)
                conversation.record(
                    "settings/changed", changed=sorted(names), models=spoken_models(now), language=now.speech.language
                )

    def _pass_on_held(self) -> None:
        """Input that arrived while the engine was being rebuilt goes to the new one, in order."""
        if self._switching or self.conversation is None:
            return
        held, self._held = self._held, []
        for item in held:
            self.conversation.submit(item)

    async def _life(self) -> None:
        """One task holds the voice and, inside it, one engine per settings version, so every context is left in
        the task that entered it, innermost first."""
        try:
            async with self.voice.running(self._voice_events()), open_tasks(cancel_on_exit=True) as starting:
                starting.start(self._start_up, name="start-up")
                while not self._closing:
                    self._changed = anyio.Event()
                    version = self._version
                    try:
                        await self.voice.use_models(self.config)  # between two engines: no turn is under way
                        async with self._engine(version):
                            self._applied.set()
                            await self._changed.wait()
                    except Exception as error:  # noqa: BLE001 (the engine died: said, and the window lives on)
                        self._engine_died(error)
                        self._first_llm.set()
                        self._applied.set()
                        await self._changed.wait()
        finally:
            self._applied.set()
            self._ended.set()

    async def _start_up(self) -> None:
        """Say when Parley is ready (every model loaded), then show the device problems that outlived the start."""
        await self.voice.models_loaded()
        await self._first_llm.wait()
        self.starting = False
        self.publish(StartedUp())
        await self.clock.sleep(SETTLE_S)
        self._settling = False
        held, self._held_problems = list(self._held_problems.values()), {}
        for problem in held:
            self.raise_problem(problem)
        if self._listen_again:
            self._listen_again = False
            self.set_hands_free(False)

    def _voice_problem(self, problem: Problem) -> None:
        """A device problem is not shown while Parley closes (for a restart, say) or starts: a model loading can
        starve the audio for a moment, and the device comes back by itself; if it has not once Parley has
        settled, it is shown then."""
        if problem.kind in DEVICE_PROBLEMS and (self._closing or self._settling):
            if not self._closing:
                self._held_problems[problem.kind] = problem
            return
        self.raise_problem(problem)

    def _voice_problem_cleared(self, kind: str) -> None:
        """A device came back: a held problem goes unshown, and hands-free listens again if it only stopped for
        a problem held while settling."""
        held = self._held_problems.pop(kind, None)
        self.clear_problem(kind)
        if held is not None and kind == "no_microphone" and self._listen_again and not self._closing:
            self._listen_again = False
            self.set_hands_free(True)

    def _engine_died(self, error: Exception) -> None:
        """The conversation could not go on (its journal could not be written, or a bug): no engine until the
        settings or the conversation change; typed input is refused with the reason, not swallowed."""
        self.conversation = None
        self._shown = None  # opened again, it shows what was saved, not what was on the screen
        if isinstance(error, JournalWriteFailed):
            self._closed_by = journal_failed(self.journal_path, error)
            why = "cannot save the conversation"
        else:
            log.error("the conversation failed", exc_info=error)
            self._closed_by = internal_error(error, self.journal_path)
            why = "something went wrong inside Parley"
        self.raise_problem(self._closed_by)
        self.publish(EngineClosed(why))

    @asynccontextmanager
    async def _engine(self, version: int) -> AsyncIterator[None]:
        """A conversation on the current settings for the block (none while they cannot give one)."""
        self._closed_by = None
        choice = None if version == self._broken else self._choose()
        await self._hand_back(choice)
        if choice is None:
            self._first_llm.set()
            self._show_conversation(None)
            self.publish(EngineClosed())
            yield
            return
        async with AsyncExitStack() as stack:
            try:
                self.conversation = await stack.enter_async_context(self._open(choice))
            except (OSError, JournalCorrupt, JournalBusy) as error:  # the journal cannot be had, written or read
                self._first_llm.set()
                self._not_opened(error)
                yield
                return
            self._closed_by = None
            self.clear_problem("journal")
            self.clear_problem("busy")
            self._running = self.config
            self._show_conversation(self.conversation.parts.journal.events)
            self._repaired(self.conversation.parts.journal)
            stack.callback(self.conversation.subscribe(self._on_engine))
            await stack.enter_async_context(self.voice.attached(self.conversation))
            tasks = await stack.enter_async_context(open_tasks(on_error=self._failed, cancel_on_exit=True))
            self.publish(EngineOpened(choice.adapter.provider, choice.adapter.model, choice.label))
            if choice.load is not None:
                tasks.start(self._load, choice, version, name="load-llm")
            else:
                self._first_llm.set()
            try:
                yield
            finally:
                if self.conversation.inbox.held:  # the settings changed between two turns: input waits for them
                    self._held[:0] = self.conversation.inbox.take()
                self.conversation = None
        self.publish(EngineClosed())

    def _not_opened(self, error: Exception) -> None:
        if isinstance(error, JournalBusy):
            self._closed_by = conversation_busy(self.journal_path, error.pid)
            self.publish(ConversationBusy(self.journal_path, error.pid))
        else:
            self._closed_by = journal_unwritable(self.journal_path, error)
        self.raise_problem(self._closed_by)
        self.publish(EngineClosed("this conversation is open elsewhere" if isinstance(error, JournalBusy) else ""))

    def _repaired(self, journal: Journal) -> None:
        """Lines of the journal that did not fit were moved aside on opening it: say which, once."""
        if journal.recovered.quarantined:
            self.raise_problem(journal_repaired(quarantine_note(journal.path, journal.recovered.quarantined)))

    async def _hand_back(self, choice: LlmChoice | None) -> None:
        """Release the last engine's language model when the next one runs another (its memory goes back first)."""
        last, self._last = self._last, choice
        if last is not None and not same_model(last, choice):
            await release_llm(last)

    def _show_conversation(self, events: list[dict[str, Any]] | None) -> None:
        """Tell the listeners which conversation this is, once per journal (not on every settings change)."""
        if self._shown == self.journal_path:
            return
        self._shown = self.journal_path
        if events is None:
            try:
                events = read_events(self.journal_path)
            except (OSError, JournalCorrupt):
                events = []
        self.publish(ConversationOpened(self.journal_path, tuple(events)))

    def _choose(self) -> LlmChoice | None:
        self._key = key = self.keys.load()
        if self._llm is not None:
            return LlmChoice(self._llm, f"{self._llm.model} ({self._llm.provider})")
        try:
            choice = llm_choice(self.config, key.secret if key else None)
        except BadInput as error:
            self.raise_problem(missing_model(str(error)))
            return None
        self.clear_problem("missing_model")
        return choice

    def _open(self, choice: LlmChoice) -> AbstractAsyncContextManager[Conversation]:
        return open_engine(
            choice,
            self.config,
            journal_path=self.journal_path,
            speech=self.voice.speech,
            clock=self.clock,
            tools=self._tools,
            key=self._key,
            voice="simulated" if self.voice.simulated else "live",
        )

    async def _load(self, choice: LlmChoice, version: int) -> None:
        assert choice.load is not None
        started = self.clock.now()
        self.publish(ModelLoading(choice.label, "loading"))
        try:
            await choice.load()
        except ModelError as error:
            self.publish(ModelLoading(choice.label, "failed", self.clock.now() - started))
            self.raise_problem(missing_model(str(error)))
            self._broken = version
            self._changed.set()  # the engine closes; it opens again when the settings change
            self._first_llm.set()
            return
        self.publish(ModelLoading(choice.label, "ready", self.clock.now() - started))
        self._first_llm.set()

    def _on_engine(self, event: Any) -> None:
        self.publish(event)
        if isinstance(event, TurnStarted):
            self.clear_problem(DIDNT_CATCH)  # heard this time
        if isinstance(event, TurnEnded):
            self._after_turn(event)

    def _after_turn(self, event: TurnEnded) -> None:
        self._say_cuts(event.turn)
        cause = self._causes.pop(event.turn, None)
        if event.outcome == "aborted" and cause is None and self.hands_free:
            self.publish(TurnStopped(event.turn, "voice"))  # the pipeline barged in on the person's voice
        if event.failure is None:
            for kind in TURN_PROBLEMS if event.outcome == "completed" else ():
                self.clear_problem(kind)
            return
        problem = problem_for_failure(event.failure, self.config.llm, key_set=self._key is not None)
        if problem is not None:
            self.raise_problem(problem)

    def _say_cuts(self, turn: int) -> None:
        """The turn's replies that stopped at the reply limit, as its journal says (the engine's events do not)."""
        if self.conversation is None:
            return
        cuts = []
        for event in reversed(self.conversation.parts.journal.events):  # the turn's own events are the last ones
            if event.get("turn") == turn and event.get("type") == "turn/start":
                break
            cut = reply_cut(event) if event.get("type") == "assistant/message" and event.get("turn") == turn else None
            cuts += [cut] if cut is not None else []
        for cut in reversed(cuts):
            self.publish(cut)

    # Commands

    def send_text(self, text: str) -> bool:
        """Queue typed input; False (and the reason as a banner) when nothing can answer it. Typed while a turn is
        under way, it is answered after it and shown at once as waiting (TextQueued)."""
        waits = self._switching > 0 if self.conversation is None else self.conversation.busy
        said = self._key.scrub(text.strip()) if self._key is not None else text.strip()
        if not said or not self.submit(UserInput(said, source="text")):
            return False
        self.publish(TextQueued(said)) if waits else None
        return True

    def submit(self, item: UserInput) -> bool:
        """Queue an input for its turn; the API key is redacted from it, as the journal would."""
        if self._key is not None:
            item = replace(item, text=self._key.scrub(item.text))
        if self.conversation is None and self._switching:
            self._held.append(item)  # the engine is being rebuilt for new settings: it answers this next
            return True
        if self.conversation is None:
            self.raise_problem(self._closed_by or self.problems.get("missing_model") or no_engine())
            return False
        self.conversation.submit(item)
        return True

    def press_to_talk(self) -> None:
        """Barge in on a reply that is being thought of or spoken, then start capturing."""
        if self.talking:
            return
        self.talking = True
        self._stopping("push_to_talk")
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
            self._spawn(self.conversation.cancel, User(), keep_inbox=True)

    def stop(self) -> None:
        """The Stop button: abort the live turn and drop queued input (typed messages that waited say so)."""
        if self.conversation is not None:
            self._stopping("you")
            dropped = tuple(item.text for item in self.conversation.inbox.take() if item.source == "text")
            self._spawn(self.conversation.cancel, User())
            self.publish(QueueDropped(dropped)) if dropped else None

    def new_conversation(self) -> None:
        """Start afresh: a new journal; the live turn is stopped first (the old conversation stays on disk)."""
        self.continue_conversation(new_journal_path(self.journal_dir))

    def continue_conversation(self, journal: Path) -> None:
        """Go on with a conversation (a past one's journal): the engine is rebuilt on it, its history with it. The
        one shown is opened again only when it stopped (its disk filled up, another Parley had it)."""
        if journal == self.journal_path and self.conversation is not None:
            return
        self._stopping("conversation")
        self.journal_path = journal
        self._spawn(self.reconfigure, self.config, at_next_turn=False)

    def reading(self, turn: int, step: int, attempt: int) -> str | None:
        """The words of a reply heard so far while its turn is live (None when it is not): the heard cursor
        mapped to words exactly as the journal will keep them (engine.heard)."""
        conversation = self.conversation
        live = conversation.live_turn if conversation is not None else None
        if live is None or live.id != turn or conversation is None or conversation.state is not State.SPEAKING:
            return None
        return heard_so_far(self.voice.speech, turn, step, attempt)

    def _stopping(self, cause: StopCause) -> None:
        """Note why the live turn is being stopped (the trace says it in words)."""
        live = self.conversation.live_turn if self.conversation is not None else None
        if live is not None and live.id not in self._causes:
            self._causes[live.id] = cause
            self.publish(TurnStopped(live.id, cause))

    def set_input_state(self, state: State) -> None:
        if self.conversation is not None:
            self.conversation.set_input_state(state)
        else:
            self.publish(StateChanged(None, state))

    def start_work(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run `fn(*args)` as a task the session owns (a download the Models dialog started)."""
        self._spawn(fn, *args)

    def _spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> None:
        """Work a plain command starts, owned by the session (nothing runs before `running()` or after it)."""
        if self._tasks is not None and not self._closing:
            self._tasks.start(functools.partial(fn, *args, **kwargs), name=getattr(fn, "__name__", "command"))

    def _task_failed(self, name: str, error: Exception) -> None:
        log.error("session task %s failed", name, exc_info=error)
        self.raise_problem(internal_error(error, self.journal_path))

    def _failed(self, name: str, error: Exception) -> None:
        self._task_failed(name, error)

    def _voice_events(self) -> VoiceCallbacks:
        def level(value: float) -> None:
            self.publish(MicLevel(min(1.0, max(0.0, value))))

        def utterance(item: UserInput) -> None:
            self.submit(item)

        def listening_stopped() -> None:
            if self.hands_free and self._settling and not self._closing:
                self._listen_again = True  # shown as off only if the microphone does not come back
            elif self.hands_free:
                self.set_hands_free(False)

        return VoiceCallbacks(
            level,
            self.set_input_state,
            self.barge_in,
            utterance,
            self._voice_problem,
            self._voice_problem_cleared,
            self.publish,
            listening_stopped,
        )


def _secret(text: str) -> Secret | None:
    try:
        return Secret(text) if text.strip() else None
    except ValueError:
        return None
