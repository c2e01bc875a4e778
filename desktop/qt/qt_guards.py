"""The guard the qasync loop runs under, and the probe for a PySide6 that loses references.

Qt objects must be destroyed on the thread they live on. Python's garbage collector runs in whichever
thread happens to allocate when a threshold is crossed, which in Parley is often a model worker (Whisper,
Piper) or PortAudio's callback thread; a QObject freed there keeps its timers registered, and Qt later
delivers a timer event to freed memory (a segfault). `MainThreadGc` turns automatic collection off while
a loop runs and collects from the loop instead, as pyqtgraph's GarbageCollector does.

PySide6 6.12.0 on Python 3.11 (where None and True are not yet immortal) drops a reference to None on
every call of a void method and to True on every signal `emit`; a live microphone uses them up within
minutes and the interpreter aborts ("none_dealloc"/"bool_dealloc"). pyproject excludes that release
(6.7 to 6.11.3 do not lose any); `pyside_drops_references` is the probe a test runs on the installed one.
"""

from __future__ import annotations

import asyncio
import gc
import sys

from PySide6.QtCore import QObject, Signal

GC_EVERY_S = 0.1
PROBE_CALLS = 1000


class MainThreadGc:
    """Collect on the loop's thread only: each generation once its own threshold is crossed, as gc would."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._handle: asyncio.TimerHandle | None = None
        self._was_enabled = gc.isenabled()

    def start(self) -> None:
        gc.disable()
        self._tick()

    def _tick(self) -> None:
        collect()
        self._handle = self._loop.call_later(GC_EVERY_S, self._tick)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        collect()
        if self._was_enabled:
            gc.enable()


def collect() -> None:
    thresholds, counts = gc.get_threshold(), gc.get_count()
    for generation in (2, 1, 0):
        if counts[generation] > thresholds[generation]:
            gc.collect(generation)
            return


class _Probe(QObject):
    ping = Signal()


def pyside_drops_references() -> bool:
    """True when this PySide6 loses references to None (void calls) or True (emit) on this Python."""
    if sys.version_info >= (3, 12):
        return False  # immortal singletons: a lost reference is harmless
    probe = _Probe()
    none, true = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(PROBE_CALLS):  # a few thousand references: far from the ones None and True hold
        probe.setObjectName("probe")
        probe.ping.emit()
    return sys.getrefcount(None) < none - PROBE_CALLS // 2 or sys.getrefcount(True) < true - PROBE_CALLS // 2
