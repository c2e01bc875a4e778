"""The desktop app: a PySide6 window on a qasync loop over a Qt-free `Session` model.

Importing this package does not import Qt (`desktop.model.session` and the other models stay
Qt-free, napari-style); `run_app` does.
"""

from __future__ import annotations


def run_app(argv: list[str] | None = None) -> int:
    """Show the window and run until it is closed; the conversation is quiescent before this returns."""
    from desktop.qt.main import run_app as run

    return run(argv)


__all__ = ["run_app"]
