"""Issue 38 item 11: `parley doctor` checks the configured devices, not only that some exist (on the private
PulseAudio, so there are devices to find)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from audio.portaudio import list_devices
from desktop.config import AudioConfig, Config
from desktop.doctor import doctor
from tests.audio import pulse as pulse_kit

pytestmark = pytest.mark.slow


def _devices_check(audio: AudioConfig) -> tuple[bool, str]:
    (check,) = [c for c in doctor(replace(Config(), audio=audio)) if c.name == "audio devices"]
    return check.ok, check.detail


def test_a_configured_device_that_does_not_exist_fails_the_check(pulse: pulse_kit.Pulse) -> None:
    ok, detail = _devices_check(AudioConfig(input_device="no-such-microphone-38"))
    assert not ok
    assert "input device 'no-such-microphone-38' not found" in detail
    ok, detail = _devices_check(AudioConfig(output_device="99"))
    assert not ok
    assert "output device '99' not found" in detail


def test_configured_devices_that_exist_pass_and_are_named(pulse: pulse_kit.Pulse) -> None:
    microphone = next(d for d in list_devices() if d.inputs > 0)
    ok, detail = _devices_check(AudioConfig(input_device=str(microphone.index)))
    assert ok, detail
    assert f"configured: input {microphone.name!r}" in detail
    assert _devices_check(AudioConfig())[0], "the system defaults need no configuration"
