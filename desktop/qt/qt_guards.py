"""Two guards the qasync loop runs under, for faults below the app that would otherwise crash it.

Qt objects must be destroyed on the thread they live on. Python's garbage collector runs in whichever
thread happens to allocate when a threshold is crossed, which in Parley is often a model worker (Whisper,
Piper) or PortAudio's callback thread; a QObject freed there keeps its timers registered, and Qt later
delivers a timer event to freed memory (a segfault). `MainThreadGc` turns automatic collection off while
a loop runs and collects from the loop instead, as pyqtgraph's GarbageCollector does.

PySide6 6.12.0 on Python 3.11 (where None and True are not yet immortal) drops a reference to None on
every call of a void method (setText, startTimer, killTimer...) and to True on every signal `emit`;
qasync makes several such calls per asyncio callback, so a live microphone (50 blocks a second) uses
them up within minutes and the interpreter aborts ("none_dealloc"/"bool_dealloc"). `RefFloor` notices
and gives the lost references back. The real fix is PySide6 6.11.x (or Python 3.12+); there it is idle.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import sys
import threading

from PySide6.QtCore import QObject, Signal

log = logging.getLogger(__name__)
FLOOR = 100_000  # far above what None, True and False naturally hold (tens of thousands)
REF_EVERY_S = 0.25
GC_EVERY_S = 0.1


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
    probe.setObjectName("probe")
    probe.ping.emit()
    dropped = sys.getrefcount(None) < none or sys.getrefcount(True) < true
    top_up()  # including what the probe itself lost
    return dropped


def top_up() -> None:
    """Keep None, True and False at least FLOOR references strong; the extra ones are never released."""
    for singleton in (None, True, False):
        for _ in range(max(0, FLOOR - sys.getrefcount(singleton))):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(singleton))


class RefFloor:
    """A thread that tops the singletons up every REF_EVERY_S while a loop runs (thousands drop a second).

    A thread rather than a loop timer, so it keeps up while the loop's thread is busy.
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="parley-ref-floor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(REF_EVERY_S):
            top_up()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        top_up()


_drops: bool | None = None


def refs_need_a_floor() -> bool:
    global _drops
    if _drops is None:
        _drops = pyside_drops_references()
        if _drops:
            import PySide6

            log.warning("PySide6 %s loses references on Python %s; compensating (PySide6 6.11 does not)",
                        PySide6.__version__, sys.version.split()[0])  # fmt: skip
    return _drops


class LoopGuards:
    """Both guards for one loop: started when it is made, stopped when it closes."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._gc = MainThreadGc(loop)
        self._refs = RefFloor() if refs_need_a_floor() else None

    def start(self) -> None:
        self._gc.start()
        if self._refs is not None:
            self._refs.start()

    def stop(self) -> None:
        if self._refs is not None:
            self._refs.stop()
        self._gc.stop()
