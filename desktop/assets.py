"""Where the bundled assets live: beside the sources, or inside a frozen (PyInstaller) build."""

from __future__ import annotations

import sys
from pathlib import Path


def assets_dir() -> Path:
    frozen = getattr(sys, "_MEIPASS", None)
    return Path(frozen) / "assets" if frozen else Path(__file__).resolve().parent.parent / "assets"


def fixture(name: str) -> Path:
    return assets_dir() / "fixtures" / name
