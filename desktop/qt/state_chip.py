"""The state chip: what Parley is doing now, with a live countdown while it waits to retry."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QWidget

from adapters.contract.clock import Clock
from desktop.model.facts import EngineClosed, EngineOpened, HandsFreeChanged, ModelLoading, ProblemCleared, StartedUp
from desktop.model.session import TURN_PROBLEMS
from desktop.model.wording import LOADING, failure_reason, state_label
from desktop.qt.style import CHIP_COLOURS
from engine.events import BackoffInfo, State, StateChanged, TurnEnded, TurnStarted

TICK_MS = 100
PILL = "border-radius: 11px; padding: 4px 16px; font-weight: 600;"  # radius above half the height: square


class StateChip(QLabel):
    """Shows the engine state; a failed turn stays shown (in plain words) until the next turn starts or the settings
    change what it was about (another model, or the address or key its banner asked to fix); while Parley starts
    (`starting`) or a model loads, idle is "Loading models…", not "Ready"."""

    shown = Signal(str)  # every text the chip displays, in order (tests and accessibility)

    def __init__(self, clock: Clock, parent: QWidget | None = None, *, starting: bool = False) -> None:
        super().__init__(parent)
        self.setObjectName("chip")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._clock = clock
        self.state = State.IDLE
        self._backoff: BackoffInfo | None = None
        self._failed: str | None = None
        self._stopped: str | None = None  # why no conversation runs (it cannot be saved, say)
        self._model: tuple[str, str] | None = None  # the language model running (provider, model)
        self._hands_free = False
        self._starting = starting
        self._loading: set[str] = set()  # models loading now (a settings change loads them too)
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._render)
        self._render()

    def handle(self, event: Any) -> None:
        if isinstance(event, StateChanged):
            self._state(event.state, event.backoff)
        elif isinstance(event, TurnStarted):
            self._failed = None
            self._render()
        elif isinstance(event, TurnEnded) and event.failure is not None:
            self._failed = failure_reason(event.failure)
            self._render()
        elif isinstance(event, HandsFreeChanged):
            self._hands_free = event.on
            self._render()
        elif isinstance(event, StartedUp):
            self._starting = False
            self._render()
        elif isinstance(event, ModelLoading):
            self._model_loading(event)
        elif isinstance(event, EngineClosed | EngineOpened):
            self._stopped = event.why if isinstance(event, EngineClosed) and event.why else None
            if isinstance(event, EngineOpened):
                self._engine_opened(event)
            self._render()
        elif isinstance(event, ProblemCleared) and event.kind in TURN_PROBLEMS:
            self._failed = None  # the settings changed what the failure was about: the next turn will tell
            self._render()

    def _engine_opened(self, event: EngineOpened) -> None:
        """A failure of another language model (the provider was switched) is not this one's."""
        if self._model is not None and (event.provider, event.model) != self._model:
            self._failed = None
        self._model = (event.provider, event.model)

    def _model_loading(self, progress: ModelLoading) -> None:
        if progress.phase == "loading":
            self._loading.add(progress.label)
        else:
            self._loading.discard(progress.label)
        self._render()

    def stop(self) -> None:
        self._timer.stop()

    def _state(self, state: State, backoff: BackoffInfo | None) -> None:
        self.state, self._backoff = state, backoff
        if state is not State.IDLE:
            self._failed = None
        if state is State.BACKING_OFF and backoff is not None:
            self._timer.start()
        else:
            self._timer.stop()
        self._render()

    def _render(self) -> None:
        if self._stopped is not None:
            text, key = f"Stopped: {self._stopped}", "Failed"  # nothing can answer: never "Ready"
        elif self._failed is not None:
            text, key = f"Failed: {self._failed}", "Failed"
        else:
            text = state_label(self.state, self._backoff, self._clock.now())
            if self.state is State.IDLE and (self._starting or self._loading):
                text = LOADING
            elif self.state is State.IDLE and self._hands_free:
                text = "Listening"  # hands-free waits for the person to speak
            key = "Retrying" if self.state is State.BACKING_OFF else text
        background, ink = CHIP_COLOURS.get(key, CHIP_COLOURS["Ready"])
        self.setStyleSheet(f"QLabel {{ background: {background}; color: {ink}; {PILL} }}")
        if text != self.text():
            self.setText(text)
            self.setToolTip(text)
            self.shown.emit(text)
