"""Desktop tests: offscreen Qt, a qasync loop per test, and a check that nothing Qt outlives a test.

How asyncio runs here: `qloop` makes a qasync QEventLoop bound to pytest-qt's `qapp`; `run(coro)`
drives it with `run_until_complete` under a bound (asyncio.wait_for). While it runs, Qt events and
asyncio callbacks are processed by the same loop, so a test body is one coroutine that acts on
widgets and awaits `until(condition)` (bounded polling) — never a hopeful sleep.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # before anything imports Qt

import asyncio
import threading
import tracemalloc
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import keyring
import pytest
import qasync
from PySide6.QtWidgets import QApplication

from audio.portaudio import refresh
from desktop.qt import qt_loop
from desktop.qt.style import SHEET
from tests.audio import pulse as pulse_kit
from tests.desktop import leaks
from tests.desktop.helpers import MemoryKeyring

T = TypeVar("T")
Run = Callable[..., Any]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


@pytest.fixture(autouse=True)
def no_key_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARLEY_LLM_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def nothing_outlives_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a Qt test that leaves a top-level widget, an active QTimer, a running QThread or a thread behind."""
    if "qapp" not in request.fixturenames:
        yield  # not a Qt test (and tracemalloc would only slow it down)
        return
    qapp: QApplication = request.getfixturevalue("qapp")
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start(8)
    widgets, threads = list(qapp.topLevelWidgets()), list(threading.enumerate())
    qapp.setQuitOnLastWindowClosed(False)
    qapp.setStyleSheet(SHEET)
    try:
        yield
        leaks.flush_deletions(qapp)
        found = (
            leaks.live_widgets(qapp, widgets),
            leaks.active_timers(),
            leaks.running_qthreads(),
            leaks.new_threads(threads),
        )
        if any(found):
            pytest.fail("left behind by the test:\n" + leaks.report(*found), pytrace=False)
    finally:
        if started:
            tracemalloc.stop()


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    loop = qt_loop.new_loop(qapp)
    try:
        yield loop
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        assert not pending, f"tasks still pending after the test: {pending}"
    finally:
        qt_loop.close(loop)


@pytest.fixture
def run(qloop: qasync.QEventLoop) -> Callable[..., Any]:
    """`run(coro, within=20)`: drive the Qt+asyncio loop until `coro` is done, failing after `within` s."""

    def run(coro: Coroutine[Any, Any, T], within: float = 20.0) -> T:
        return qt_loop.run(qloop, asyncio.wait_for(coro, within))

    return run


@pytest.fixture(scope="module")
def pulse() -> Iterator[pulse_kit.Pulse]:
    """The audio tests' private PulseAudio with its null sinks (tests/audio/pulse.py): reused when their session
    fixture has already loaded the sinks, else loaded here and unloaded after the module (so theirs can load)."""
    if pulse_kit.SPEAKER in pulse_kit.pactl("list", "short", "sinks", check=False):
        yield pulse_kit.Pulse()
        return
    server = pulse_kit.start()
    refresh()  # PortAudio enumerates devices only at initialisation
    try:
        yield server
    finally:
        pulse_kit.stop(server)
        refresh()
