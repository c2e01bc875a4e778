"""Helpers for desktop tests: bounded waiting, an in-memory keyring, a window around a session."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from keyring.backend import KeyringBackend
from PySide6.QtWidgets import QAbstractButton, QComboBox, QGroupBox, QLabel, QLineEdit, QTreeWidget, QWidget

from adapters.contract import CancelSignal, GenerateOptions, StreamChunk
from adapters.runtime.clock import SystemClock
from desktop.model.device_lists import DeviceLists
from desktop.model.model_shelf import Shelf
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice, VoiceEvents
from desktop.model.wording import microphone_failed
from desktop.qt.window import MainWindow
from engine.testing import FakeLlm, reply
from engine.testing.fake_llm import Script

DEVICES = DeviceLists(["Test microphone"], ["Test speaker"])
QUIET = microphone_failed("no audio from the input device for 1 s")
STOPPED = microphone_failed("the input device stopped (unplugged, taken away or the sound server quit)")


async def until(condition: Callable[[], object], within: float = 10.0, what: str = "") -> None:
    """Bounded polling while the loop keeps running Qt and asyncio work."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"not true within {within} s: {what or condition}")
        await asyncio.sleep(0.01)


class AnswersByContent(FakeLlm):
    """Replies by what was asked (the first script whose keyword the last message holds), not by the order of
    calls: a reply the embedded model begins ahead at a mid-sentence pause, dropped when the user goes on, must
    not take the next turn's script."""

    def __init__(self, answers: Sequence[tuple[str, Script]], otherwise: str = "OK.") -> None:
        super().__init__()
        self._answers, self._otherwise = list(answers), otherwise

    async def stream(self, options: GenerateOptions, signal: CancelSignal) -> AsyncGenerator[StreamChunk, None]:
        asked = str(options.messages[-1].content).lower()
        script = next((s for word, s in self._answers if word in asked), reply(self._otherwise))
        self._scripts = [script]
        async for chunk in super().stream(options, signal):
            yield chunk


class MemoryKeyring(KeyringBackend):
    """An in-memory keyring so tests never touch the real OS keyring."""

    priority = 1  # type: ignore[assignment]  # keyring declares it as a class property

    def __init__(self) -> None:
        super().__init__()
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


@asynccontextmanager
async def running_window(session: Session, config_path: Path, shelf: Shelf | None = None) -> AsyncIterator[MainWindow]:
    """A shown window over a started session; on exit the conversation is disposed and the window deleted."""
    window = MainWindow(session, config_path=config_path, devices=lambda: DEVICES, shelf=shelf)
    window.show()
    try:
        async with session.running():
            try:
                yield window
            finally:
                await window.shutdown()
                window.close()
    finally:
        window.deleteLater()


def texts(root: QWidget) -> Iterator[tuple[str, str]]:
    """Every piece of text a person could see (or hover) in `root` and its children."""
    for widget in [root, *root.findChildren(QWidget)]:
        name = type(widget).__name__
        yield name, widget.windowTitle()
        yield name, widget.toolTip()
        yield name, widget.statusTip()
        yield name, widget.whatsThis()
        yield from _own_texts(widget, name)


def _own_texts(widget: QWidget, name: str) -> Iterator[tuple[str, str]]:
    if isinstance(widget, QLabel):
        yield name, widget.text()
    elif isinstance(widget, QLineEdit):
        yield name, widget.text()
        yield name, widget.placeholderText()
        yield name, widget.displayText()
    elif isinstance(widget, QAbstractButton):
        yield name, widget.text()
    elif isinstance(widget, QComboBox):
        yield from ((name, widget.itemText(i)) for i in range(widget.count()))
    elif isinstance(widget, QGroupBox):
        yield name, widget.title()
    elif isinstance(widget, QTreeWidget):
        items = [widget.topLevelItem(i) for i in range(widget.topLevelItemCount())]
        for item in items:
            yield name, item.text(0)
            yield from ((name, item.child(j).text(0)) for j in range(item.childCount()))


class LoadingVoice(SimulatedVoice):
    """A microphone whose models load when the test says; it goes quiet as it closes, like a stream torn down."""

    simulated = False

    def __init__(self) -> None:
        super().__init__(SystemClock())
        self.loaded = anyio.Event()
        self.events: VoiceEvents | None = None
        self.listening = False

    @asynccontextmanager
    async def running(self, events: VoiceEvents) -> AsyncIterator[None]:
        self.events = events
        try:
            yield
        finally:
            events.problem(STOPPED)  # the capture ends under the listener as the pipeline closes
            self.events = None

    async def models_loaded(self) -> None:
        await self.loaded.wait()

    def start_listening(self) -> None:
        self.listening = True

    def stop_listening(self) -> None:
        self.listening = False

    def quiet(self) -> None:
        """The audio stops for a moment (a model loading starves it), then flows again."""
        assert self.events is not None
        self.events.problem(QUIET)
        self.events.listening_stopped()
        self.events.problem_cleared(QUIET.kind)
