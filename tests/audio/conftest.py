"""Audio test set-up: a private PulseAudio (session-wide, started on first use) and the speech fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from audio.portaudio import refresh
from audio.wav import load_wav
from tests.audio import pulse as pulse_kit

DATA = Path(__file__).parent / "data"
ASSISTANT_WAV = DATA / "assistant.wav"  # espeak-ng, 16 kHz mono, ~5.7 s
USER_WAV = DATA / "user.wav"  # espeak-ng (another voice), 16 kHz mono, ~1.3 s


@pytest.fixture(scope="session")
def pulse() -> Iterator[pulse_kit.Pulse]:
    server = pulse_kit.start()
    refresh()  # PortAudio enumerates devices only at initialisation
    try:
        yield server
    finally:
        pulse_kit.stop(server)


@pytest.fixture(scope="session")
def assistant_speech() -> np.ndarray:
    return load_wav(ASSISTANT_WAV)


@pytest.fixture(scope="session")
def user_speech() -> np.ndarray:
    return load_wav(USER_WAV)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests.audio.signals import MEASUREMENTS

    if MEASUREMENTS:
        terminalreporter.section("audio measurements")
        for line in MEASUREMENTS:
            terminalreporter.write_line(line)
