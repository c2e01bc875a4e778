"""The real window under Xvfb (xcb platform) with a scripted conversation, saved as docs/screenshot.png."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "screenshot.png"


@pytest.fixture
def display() -> Iterator[str]:
    """$DISPLAY if there is one, else a private Xvfb (it picks a free display number itself)."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    if shutil.which("Xvfb") is None:
        pytest.fail("Xvfb is not installed and DISPLAY is unset; install it with `apt-get install xvfb`")
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x900x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as handle:
            number = handle.readline().strip()  # written once the server accepts connections
        assert number, "Xvfb did not start"
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.slow
def test_the_window_renders_a_conversation_with_an_interrupted_reply(display: str) -> None:
    SCREENSHOT.unlink(missing_ok=True)
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.desktop.screenshot_scene", str(SCREENSHOT)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    image = QImage(str(SCREENSHOT)).convertToFormat(QImage.Format.Format_Grayscale8)
    assert image.width() >= 800
    assert image.height() >= 500
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    pixels = rows[:, : image.width()]
    assert pixels.std() > 10  # not blank
    assert len(np.unique(pixels)) > 50  # text, bubbles and widgets, not a flat fill
