"""The installed PySide6 keeps its references (pyproject excludes the release that does not), and the loop
collects garbage on its own thread only."""

from __future__ import annotations

import gc

import PySide6
import pytest
import qasync

from desktop.qt import qt_guards


def test_the_installed_pyside6_loses_no_references() -> None:
    assert not qt_guards.pyside_drops_references(), (
        f"PySide6 {PySide6.__version__} loses references to None/True on this Python and will abort a long "
        "session: exclude it in pyproject.toml (pyside6>=6.7,!=6.12.0 and that release too)"
    )


def test_the_probe_notices_lost_references(monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a stand-in that loses a reference to None on every void call, as PySide6 6.12.0 does."""
    import ctypes

    class Leaky(qt_guards._Probe):
        def setObjectName(self, name: str) -> None:
            super().setObjectName(name)
            ctypes.pythonapi.Py_DecRef(ctypes.py_object(None))

    monkeypatch.setattr(qt_guards, "_Probe", Leaky)
    try:
        assert qt_guards.pyside_drops_references()
    finally:
        for _ in range(qt_guards.PROBE_CALLS):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(None))


def test_automatic_collection_is_off_while_a_loop_runs_and_back_after(qloop: qasync.QEventLoop) -> None:
    assert not gc.isenabled()  # qt_loop.new_loop started the guard
    guard = qt_guards.MainThreadGc(qloop)
    guard.start()
    guard.stop()
    assert not gc.isenabled()  # the outer guard still holds
