"""Issue 37, item 8: the device lists showed only "System default / pulse / default". The sound server's sinks and
sources are listed by the names the desktop gives them, and choosing one sends Parley's speaker and microphone
there; without pactl or a server the lists are PortAudio's, as before."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pytestqt.qtbot import QtBot

from audio import sound_server
from audio.capture import Microphone
from audio.events import AudioUnavailable
from audio.player import Player
from audio.ports import Frame
from audio.sound_server import ServerDevice, server_devices
from desktop.config import AudioConfig, Config
from desktop.doctor import devices_table
from desktop.model.device_lists import DeviceLists, device_lists, from_query, shown_device
from desktop.model.keyring_store import KeyStore
from desktop.model.live_voice import probe_devices
from desktop.qt.settings_dialog import SettingsDialog
from desktop.qt.settings_fields import device
from tests.audio import pulse as pulse_kit
from tests.desktop.helpers import MemoryKeyring

PORTAUDIO = [  # what PortAudio lists through PulseAudio (with an ALSA card PulseAudio does not hold)
    {"name": "pulse", "max_input_channels": 32, "max_output_channels": 32},
    {"name": "default", "max_input_channels": 32, "max_output_channels": 32},
    {"name": "HDA Intel PCH: ALC3246 Analog (hw:0,0)", "max_input_channels": 2, "max_output_channels": 2},
]
SINKS = [
    {"name": "alsa_output.pci-0000_00_1f.3.analog-stereo", "description": "Built-in Audio Analog Stereo",
     "properties": {"device.class": "sound"}},
    {"name": "bluez_sink.AA_BB.a2dp_sink", "description": "Jabra Evolve2 65", "properties": {}},
]  # fmt: skip
SOURCES = [
    {"name": "alsa_output.pci-0000_00_1f.3.analog-stereo.monitor", "description": "Monitor of Built-in Audio",
     "monitor_source": "alsa_output.pci-0000_00_1f.3.analog-stereo", "properties": {"device.class": "monitor"}},
    {"name": "alsa_input.usb-Blue_Yeti-00.analog-stereo", "description": "Yeti Stereo Microphone",
     "monitor_source": "", "properties": {"device.class": "sound"}},
]  # fmt: skip
TEXT_SOURCES = """Source #0
	State: SUSPENDED
	Name: alsa_output.pci-0000_00_1f.3.analog-stereo.monitor
	Description: Monitor of Built-in Audio
	Monitor of Sink: alsa_output.pci-0000_00_1f.3.analog-stereo
Source #1
	Name: alsa_input.usb-Blue_Yeti-00.analog-stereo
	Description: Yeti Stereo Microphone
	Monitor of Sink: n/a
"""
TEXT_SINKS = """Sink #0
	Name: alsa_output.pci-0000_00_1f.3.analog-stereo
	Description: Built-in Audio Analog Stereo
Sink #1
	Name: bluez_sink.AA_BB.a2dp_sink
	Description: Jabra Evolve2 65
"""
BUILT_IN = "pulse:alsa_output.pci-0000_00_1f.3.analog-stereo"
JABRA = "pulse:bluez_sink.AA_BB.a2dp_sink"
YETI = "pulse:alsa_input.usb-Blue_Yeti-00.analog-stereo"


def _json_pactl(args: list[str]) -> str | None:
    listing = {"sinks": SINKS, "sources": SOURCES}[args[-1]]
    return json.dumps(listing) if args[:2] == ["-f", "json"] else None


def _old_pactl(args: list[str]) -> str | None:
    """pactl before 16: no JSON."""
    if args[:2] == ["-f", "json"]:
        return None
    return {"sinks": TEXT_SINKS, "sources": TEXT_SOURCES}[args[-1]]


def test_the_servers_sinks_and_sources_are_read_as_json_or_as_text() -> None:
    from_json, from_text = server_devices(_json_pactl), server_devices(_old_pactl)
    assert from_json == from_text
    assert [(d.description, d.kind, d.monitor) for d in from_json] == [
        ("Built-in Audio Analog Stereo", "output", False),
        ("Jabra Evolve2 65", "output", False),
        ("Monitor of Built-in Audio", "input", True),
        ("Yeti Stereo Microphone", "input", False),
    ]
    assert server_devices(lambda args: None) == []  # no server
    assert server_devices(lambda args: "not json") == []  # a server that answers nonsense


def test_without_pactl_there_are_no_server_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sound_server.shutil, "which", lambda name: None)
    assert server_devices() == []


def test_the_lists_offer_the_servers_devices_by_name_and_no_monitor() -> None:
    devices = from_query(PORTAUDIO, server_devices(_json_pactl))
    assert devices.outputs == [BUILT_IN, JABRA, "HDA Intel PCH: ALC3246 Analog (hw:0,0)"]
    assert devices.inputs == [YETI, "HDA Intel PCH: ALC3246 Analog (hw:0,0)"]
    assert [devices.label(d) for d in devices.outputs[:2]] == ["Built-in Audio Analog Stereo", "Jabra Evolve2 65"]
    assert devices.label(YETI) == "Yeti Stereo Microphone"
    assert from_query(PORTAUDIO, []).outputs == [d["name"] for d in PORTAUDIO]  # no server: PortAudio's, as before
    twins = [ServerDevice("usb-1", "USB Headset", "output"), ServerDevice("usb-2", "USB Headset", "output")]
    assert [from_query(PORTAUDIO, twins).label(d) for d in ("pulse:usb-1", "pulse:usb-2")] == [
        "USB Headset (usb-1)",
        "USB Headset (usb-2)",
    ]


def test_the_window_names_a_server_device_as_the_desktop_does() -> None:
    named = lambda: server_devices(_json_pactl)  # noqa: E731
    assert shown_device(JABRA, named) == "Jabra Evolve2 65"
    assert shown_device("pulse:gone_sink", named) == "gone_sink"
    assert shown_device(None, named) == "system default"
    assert shown_device("hw:0,0", named) == "hw:0,0"


def test_the_dialog_shows_the_names_and_keeps_what_was_chosen(qtbot: QtBot, memory_keyring: MemoryKeyring) -> None:
    devices = from_query(PORTAUDIO, server_devices(_json_pactl))
    config = replace(Config(), audio=replace(AudioConfig(), input_device="pulse", output_device="pulse:gone_sink"))
    dialog = SettingsDialog(config, Path("/nonexistent/config.toml"), KeyStore(env={}), devices)
    qtbot.addWidget(dialog)
    outputs = [dialog.output_device.itemText(i) for i in range(dialog.output_device.count())]
    assert outputs == [
        "System default",
        "Built-in Audio Analog Stereo",
        "Jabra Evolve2 65",
        "HDA Intel PCH: ALC3246 Analog (hw:0,0)",
        "gone_sink (not found now)",
    ]
    assert dialog.input_device.currentText() == "pulse"  # there, though the same as the default
    dialog.output_device.setCurrentIndex(dialog.output_device.findText("Jabra Evolve2 65"))
    assert dialog.form_config().audio.output_device == JABRA


# On the sound server itself (tests/audio/pulse.py): a sink that is not the default, and a microphone made of
# its monitor (as a remapped source, which is not a monitor): what plays on the one is heard on the other.


@pytest.fixture
def desk(pulse: pulse_kit.Pulse) -> Iterator[tuple[str, str]]:
    sink, source = f"desk_{os.getpid()}", f"deskmic_{os.getpid()}"
    modules = [
        pulse_kit.pactl("load-module", "module-null-sink", f"sink_name={sink}",
                        "sink_properties=\"device.description='Desk speakers'\"").strip(),
        pulse_kit.pactl("load-module", "module-remap-source", f"master={sink}.monitor", f"source_name={source}",
                        "source_properties=\"device.description='Desk microphone'\"").strip(),
    ]  # fmt: skip
    try:
        yield sink, source
    finally:
        for module in reversed(modules):
            pulse_kit.pactl("unload-module", module, check=False)


@pytest.mark.slow
def test_the_servers_devices_are_listed_by_their_names(
    desk: tuple[str, str], qtbot: QtBot, memory_keyring: MemoryKeyring
) -> None:
    sink, source = desk
    devices = device_lists()
    assert f"pulse:{sink}" in devices.outputs
    assert f"pulse:{source}" in devices.inputs
    assert f"pulse:{sink}.monitor" not in devices.inputs
    assert {"pulse", "default"}.isdisjoint(devices.outputs)  # "System default" is the same
    assert f"output  pulse:{sink}  (Desk speakers)" in devices_table()  # `parley devices`
    dialog = SettingsDialog(Config(), Path("/nonexistent/config.toml"), KeyStore(env={}), devices)
    qtbot.addWidget(dialog)
    dialog.output_device.setCurrentIndex(dialog.output_device.findText("Desk speakers"))
    dialog.input_device.setCurrentIndex(dialog.input_device.findText("Desk microphone"))
    assert (device(dialog.output_device), device(dialog.input_device)) == (f"pulse:{sink}", f"pulse:{source}")


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_choosing_a_server_device_sends_the_audio_there(run: Any, desk: tuple[str, str]) -> None:
    """The speaker plays on the chosen sink, not the default one (the kit's PULSE_SINK); the microphone records
    the chosen source, not the default one (PULSE_SOURCE, where nothing plays)."""
    sink, source = desk
    default_sink = os.environ["PULSE_SINK"]

    async def scenario() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        chosen = pulse_kit.Recorder(f"{sink}.monitor", 22050)  # it also asks the sink for low latency
        default = pulse_kit.Recorder(f"{default_sink}.monitor", 22050)
        try:
            heard = await _play_and_record(sink, source, default_sink)
        finally:
            on_chosen, on_default = await asyncio.to_thread(chosen.finish), await asyncio.to_thread(default.finish)
        return on_chosen, on_default, heard

    on_chosen, on_default, recorded = run(scenario(), within=50)
    assert np.abs(on_chosen).max() > 0.3
    assert np.abs(on_default).max() < 0.01
    assert np.abs(recorded).max() > 0.3  # the chosen microphone, not PULSE_SOURCE (silent)


async def _play_and_record(sink: str, source: str, default_sink: str) -> np.ndarray:
    """A second's tone on the speaker opened on `sink`, and what the microphone opened on `source` heard."""
    await asyncio.to_thread(pulse_kit._poll, lambda: _lead_us(sink) < 100_000, 10, "a low-latency sink")
    speaker, microphone = Player(f"pulse:{sink}"), Microphone(f"pulse:{source}")
    await speaker.start()
    await microphone.start()
    assert os.environ["PULSE_SINK"] == default_sink  # set only while the streams opened
    assert (speaker.device_name, microphone.device_name) == (sink, source)
    heard: list[np.ndarray] = []

    async def listen() -> None:
        async for frame in microphone.frames():
            assert isinstance(frame, Frame), frame
            heard.append(frame.samples)

    listening = asyncio.ensure_future(listen())
    try:
        speaker.enqueue(1, "tone", (0.5 * np.sin(2 * np.pi * 440 * np.arange(22050) / 22050)).astype(np.float32))
        deadline = time.monotonic() + 10
        while (end := speaker.audible_at(1, "tone", 990.0)) is None or time.monotonic() < end + 0.2:
            assert time.monotonic() < deadline, "the tone was not played"
            await asyncio.sleep(0.05)
    finally:
        await speaker.close()
        await microphone.close()
    await asyncio.wait_for(listening, 5)  # the frames end with the microphone (a failure is raised here)
    return np.concatenate(heard) if heard else np.zeros(0, np.float32)


def _lead_us(sink: str) -> int:
    return pulse_kit.sink_latencies_us(sinks=(sink,))[sink]


@pytest.mark.slow
def test_a_server_device_that_is_gone_is_named(pulse: pulse_kit.Pulse) -> None:
    microphone, speaker = probe_devices(replace(AudioConfig(), output_device="pulse:unplugged_headset"))
    assert microphone is None
    assert speaker is not None
    assert speaker.kind == "no_speaker"
    assert speaker.message == (
        "The configured speaker cannot be used: output device 'unplugged_headset' not found on the sound server"
    )
    with pytest.raises(AudioUnavailable, match="not found on the sound server"):
        Player("pulse:unplugged_headset")._open()


def test_devices_without_a_server_are_what_portaudio_lists() -> None:
    assert from_query(PORTAUDIO) == DeviceLists([d["name"] for d in PORTAUDIO], [d["name"] for d in PORTAUDIO])
