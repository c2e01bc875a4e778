"""Find Qt objects a test left behind (napari-style) and say where each was created (tracemalloc)."""

from __future__ import annotations

import gc
import threading
import tracemalloc
from collections.abc import Iterable

import shiboken6
from PySide6.QtCore import QEvent, QThread, QTimer
from PySide6.QtWidgets import QApplication, QWidget


def created_at(obj: object) -> str:
    trace = tracemalloc.get_object_traceback(obj)
    if trace is None:
        return "  (creation site unknown: tracemalloc was not tracing)"
    return "\n".join(trace.format(limit=6, most_recent_first=True))


def flush_deletions(app: QApplication) -> None:
    """Run pending deleteLater() calls (what the event loop would do next), and collect the test's cyclic
    garbage here on the main thread: left to the collector, a Qt object in it could be freed later on some
    model's worker thread, with its timers still registered (a segfault in a later test's event processing)."""
    for _ in range(3):
        gc.collect()
        app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        app.processEvents()


def live_widgets(app: QApplication, before: Iterable[QWidget]) -> list[QWidget]:
    known = set(map(id, before))
    return [w for w in app.topLevelWidgets() if id(w) not in known and shiboken6.isValid(w)]


def active_timers() -> list[QTimer]:
    return [o for o in gc.get_objects() if isinstance(o, QTimer) and shiboken6.isValid(o) and o.isActive()]


def running_qthreads() -> list[QThread]:
    return [o for o in gc.get_objects() if isinstance(o, QThread) and shiboken6.isValid(o) and o.isRunning()]


PROCESS_WIDE = ("parley-asr", "parley-tts", "tqdm_monitor")  # model workers and tqdm: one per process


def new_threads(before: Iterable[threading.Thread]) -> list[threading.Thread]:
    known = set(before)
    return [t for t in threading.enumerate() if t not in known and t.is_alive() and not t.name.startswith(PROCESS_WIDE)]


def report(
    widgets: list[QWidget], timers: list[QTimer], qthreads: list[QThread], threads: list[threading.Thread]
) -> str:
    lines: list[str] = []
    for widget in widgets:
        lines.append(f"widget {type(widget).__name__} {widget.objectName()!r} still exists, created at:")
        lines.append(created_at(widget))
    for timer in timers:
        lines.append(f"QTimer (interval {timer.interval()} ms) still active, created at:")
        lines.append(created_at(timer))
    for qthread in qthreads:
        lines.append(f"QThread {type(qthread).__name__} still running, created at:")
        lines.append(created_at(qthread))
    lines += [f"thread {t.name!r} still running" for t in threads]
    return "\n".join(lines)
