"""The desktop app: a PySide6 window on a qasync loop over a Qt-free `Session` model.

Importing this package does not import Qt (`desktop.model.session` and the other models stay
Qt-free, napari-style); `run_app` does.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_window_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """The window's options, each with its line of help: the window parses them, and `parley --help` lists them."""
    parser.add_argument("--config", type=Path, metavar="FILE", help="settings file (default: the user config dir)")
    saved = "where conversations are saved (sessions/<time>/journal.jsonl)"
    parser.add_argument("--journal-dir", type=Path, metavar="DIR", help=saved)
    parser.add_argument("--fixture", type=Path, metavar="SCENARIO.toml", help="play a scenario file into the window")
    parser.add_argument(
        "--hands-free", action="store_true", help="listen without a click from the start ([audio] hands_free)"
    )
    parser.add_argument(
        "--quit-when-ready", action="store_true", help="close as soon as the window is usable (a start-up check)"
    )


def run_app(argv: list[str] | None = None) -> int:
    """Show the window and run until it is closed; the conversation is quiescent before this returns."""
    from desktop.qt.main import run_app as run

    return run(argv)


__all__ = ["add_window_options", "run_app"]
