"""The real window under Xvfb (xcb platform) on the real models, saved as docs/screenshot.png: the bundled
barge-in scenario played into it (Whisper, SmolLM2, Piper), the story interrupted and the interruption answered.
Checked by what the journal kept and what the picture holds, never by the exact words."""

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

from engine.journal import read_events

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
@pytest.mark.timeout(320)
def test_the_window_renders_a_real_conversation_with_an_interrupted_reply(display: str, tmp_path: Path) -> None:
    SCREENSHOT.unlink(missing_ok=True)
    env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.desktop.screenshot_scene", str(SCREENSHOT), str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (journal,) = tmp_path.glob("*/journal.jsonl")
    events = read_events(journal)
    assert [e["source"] for e in events if e["type"] == "turn/start"] == ["voice", "voice"]
    decided = ("barge_in/detected", "barge_in/confirmed")  # (an onset pause may come first: it only pauses)
    assert [e["type"] for e in events if e["type"] in decided][:2] == [
        "barge_in/detected",
        "barge_in/confirmed",
    ]
    replies = [e for e in events if e["type"] == "assistant/message"]
    assert replies[0]["turn"] == 1
    assert replies[0]["interrupted"] is True
    assert 0 < len(replies[0]["text"]) < replies[0]["generated_chars"]  # cut where the user stopped listening
    assert [e["outcome"] for e in events if e["type"] == "turn/end"] == ["aborted", "completed"]
    image = QImage(str(SCREENSHOT)).convertToFormat(QImage.Format.Format_Grayscale8)
    assert image.width() >= 800
    assert image.height() >= 500
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    pixels = rows[:, : image.width()]
    assert pixels.std() > 10  # not blank
    assert len(np.unique(pixels)) > 50  # text, bubbles and widgets, not a flat fill
