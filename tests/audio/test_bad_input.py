"""Bad input gets one clear line, never a traceback or a crash (SPEC §8)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from audio.capture import Microphone
from audio.events import AudioUnavailable, CaptureFailed, VadUnavailable, WavError
from audio.portaudio import list_devices, resolve_device
from audio.ports import Frame
from audio.vad import SileroModel
from audio.wav import load_wav
from tests.audio import pulse as pulse_kit
from tests.audio.conftest import USER_WAV

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip


LIST = (
    "from audio.portaudio import list_devices\n"
    "from audio.events import AudioUnavailable\n"
    "try:\n    list_devices()\nexcept AudioUnavailable as e:\n    print(e)\n"
)


def test_without_portaudio_the_message_names_the_package() -> None:
    hide = "import ctypes.util\nctypes.util.find_library = lambda name: None\n"
    done = _run(hide + LIST)
    assert done.stdout.strip() == "PortAudio not found: install libportaudio2 (apt-get install libportaudio2)"


def test_without_any_device_the_message_says_what_to_start(tmp_path: Path) -> None:
    done = _run(LIST, XDG_RUNTIME_DIR=str(tmp_path), PULSE_SERVER=f"unix:{tmp_path}/none")
    assert done.stdout.strip().startswith("no audio devices found: start PulseAudio or PipeWire")


@pytest.mark.slow
def test_an_unknown_device_name_lists_the_choices(pulse: pulse_kit.Pulse) -> None:
    with pytest.raises(AudioUnavailable, match=r"input device 'no such mic' not found; choose one of: .*pulse"):
        resolve_device("no such mic", "input")
    assert any(d.name == "pulse" and d.inputs > 0 and d.outputs > 0 for d in list_devices())


async def _capture_until_failure(mic: Microphone, break_it: object) -> tuple[list[Frame], CaptureFailed]:
    frames: list[Frame] = []
    broken = False
    async for item in mic.frames():
        if isinstance(item, CaptureFailed):
            return frames, item
        frames.append(item)
        if len(frames) == 10 and not broken:
            broken = True
            await asyncio.to_thread(break_it)  # type: ignore[arg-type]
    raise AssertionError("the capture ended without a CaptureFailed")


def _our_source_output() -> str:
    """The capture stream of this process on the PulseAudio server (the newest one)."""
    lines = pulse_kit.pactl("list", "short", "source-outputs").splitlines()
    return lines[-1].split()[0]


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_device_that_vanishes_mid_stream_is_a_capture_failed_event(pulse: pulse_kit.Pulse) -> None:
    """PulseAudio moves a stream whose sink is unloaded to another one, so the vanishing is made the way a yanked
    USB device looks to ALSA: the server kills our stream."""
    mic = Microphone("pulse")
    await mic.start()
    try:
        frames, failed = await _capture_until_failure(
            mic, lambda: subprocess.run(["pacmd", "kill-source-output", _our_source_output()], check=True,
                                        capture_output=True, timeout=10))  # fmt: skip
    finally:
        await mic.close()
    assert len(frames) >= 10
    assert "input device stopped" in failed.message


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_device_that_goes_quiet_is_a_capture_failed_event(pulse: pulse_kit.Pulse) -> None:
    sink = f"quiet_{os.getpid()}"
    module = pulse.load("module-null-sink", f"sink_name={sink}")
    os.environ["PULSE_SOURCE"] = f"{sink}.monitor"
    mic = Microphone("pulse", stall_s=0.5)
    try:
        await mic.start()
        started = time.monotonic()
        _, failed = await _capture_until_failure(mic, lambda: pulse_kit.pactl("suspend-source", f"{sink}.monitor", "1"))
        assert time.monotonic() - started < 10
    finally:
        os.environ["PULSE_SOURCE"] = f"{pulse.micwire}.monitor"
        await mic.close()
        pulse.unload(module)
    assert failed.message == "microphone failed: no audio from the input device for 0.5 s"


def test_a_wav_of_another_rate_and_channel_count_is_converted(tmp_path: Path, user_speech: np.ndarray) -> None:
    path = tmp_path / "stereo44k.wav"
    sf.write(str(path), load_wav(USER_WAV, rate=44100)[:, None].repeat(2, axis=1), 44100)
    assert sf.info(str(path)).channels == 2
    converted = load_wav(path)
    assert abs(len(converted) - len(user_speech)) <= 2
    n = min(len(converted), len(user_speech))
    assert np.corrcoef(converted[:n], user_speech[:n])[0, 1] > 0.99


def _loop(tmp_path: Path) -> Path:
    (tmp_path / "a.wav").symlink_to(tmp_path / "b.wav")
    (tmp_path / "b.wav").symlink_to(tmp_path / "a.wav")
    return tmp_path / "a.wav"


def _nan(tmp_path: Path) -> Path:
    sf.write(str(tmp_path / "nan.wav"), np.array([0.1, np.nan, 0.2], dtype=np.float32), 16000, subtype="FLOAT")
    return tmp_path / "nan.wav"


def _file(name: str, content: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        (tmp_path / name).write_bytes(content)
        return tmp_path / name

    return make


def _directory(tmp_path: Path) -> Path:
    (tmp_path / "x.wav").mkdir()
    return tmp_path / "x.wav"


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda tmp_path: tmp_path / "missing.wav", r"WAV file not found: .*missing\.wav; check the path"),
        (_file("broken.wav", b"RIFF\x10\x00\x00\x00WAVEfmt garbage"), r"cannot read WAV file .*broken\.wav: .*16-bit"),
        (_directory, r"WAV path .*x\.wav is a directory, not a file"),
        (_loop, r"WAV path .*a\.wav is a symbolic link loop"),
        (_nan, r"WAV file .*nan\.wav holds NaN or infinite samples"),
    ],
    ids=["missing", "corrupt", "directory", "symlink-loop", "nan-samples"],
)
def test_an_unusable_wav_is_one_line_naming_the_file_and_the_fix(tmp_path: Path, make: Any, pattern: str) -> None:
    with pytest.raises(WavError, match=pattern) as caught:
        load_wav(make(tmp_path))
    assert "\n" not in str(caught.value)


def test_an_empty_wav_says_it_holds_no_audio(tmp_path: Path) -> None:
    sf.write(str(tmp_path / "empty.wav"), np.zeros(0, dtype=np.float32), 16000)
    with pytest.raises(WavError, match="holds no audio"):
        load_wav(tmp_path / "empty.wav")


def test_a_vad_model_that_cannot_load_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "vad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(VadUnavailable, match=r"cannot load the Silero VAD model .*vad\.onnx"):
        SileroModel(bad)
