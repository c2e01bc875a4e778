"""PortAudio through sounddevice, loaded lazily so a missing library or device is one clear message."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType
from typing import Literal

from audio.events import AudioUnavailable
from audio.sound_server import FRONT, server_devices, server_name

NO_PORTAUDIO = "PortAudio not found: install libportaudio2 (apt-get install libportaudio2)"
NO_DEVICES = (
    "no audio devices found: start PulseAudio or PipeWire (with libasound2-plugins for ALSA's 'pulse' device)"
    " or connect a sound card"
)


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    host_api: str
    inputs: int
    outputs: int
    default_rate: float
    default_input: bool
    default_output: bool
    server_device: str = ""  # a sound server's sink or source this device opens on (audio.sound_server)


def sounddevice() -> ModuleType:
    """The sounddevice module, or AudioUnavailable naming what to install."""
    try:
        import sounddevice as sd  # lazily: importing it loads PortAudio
    except (OSError, ImportError) as error:
        raise AudioUnavailable(NO_PORTAUDIO) from error
    module: ModuleType = sd
    return module


def refresh() -> None:
    """Re-scan devices (PortAudio only enumerates at start-up); call only with no stream open."""
    sd = sounddevice()
    sd._terminate()
    sd._initialize()


def list_devices() -> list[DeviceInfo]:
    """Every device PortAudio sees; AudioUnavailable when there is none."""
    sd = sounddevice()
    devices = sd.query_devices()
    if len(devices) == 0:
        raise AudioUnavailable(NO_DEVICES)
    apis = sd.query_hostapis()
    default_in, default_out = sd.default.device
    return [
        DeviceInfo(
            index=int(d["index"]),
            name=str(d["name"]),
            host_api=str(apis[d["hostapi"]]["name"]),
            inputs=int(d["max_input_channels"]),
            outputs=int(d["max_output_channels"]),
            default_rate=float(d["default_samplerate"]),
            default_input=int(d["index"]) == default_in,
            default_output=int(d["index"]) == default_out,
        )
        for d in devices
    ]


def resolve_device(device: str | int | None, kind: Literal["input", "output"]) -> DeviceInfo:
    """Pick a device by index, exact name, or unique name fragment; None means the system default; "pulse:NAME"
    the sound server's device NAME, opened through ALSA's 'pulse' device."""
    devices = list_devices()
    usable = [d for d in devices if (d.inputs if kind == "input" else d.outputs) > 0]
    if not usable:
        raise AudioUnavailable(f"no {kind} device found: {NO_DEVICES.split(': ', 1)[1]}")
    named = server_name(device)
    if named is not None:
        return _on_the_server(named, kind, usable)
    if device is None:
        chosen = [d for d in usable if (d.default_input if kind == "input" else d.default_output)]
        return chosen[0] if chosen else usable[0]
    if isinstance(device, int) or (isinstance(device, str) and device.isdigit()):
        found = [d for d in usable if d.index == int(device)]
    else:
        found = [d for d in usable if d.name == device] or [d for d in usable if device.lower() in d.name.lower()]
    if len(found) != 1:
        names = ", ".join(f"{d.index}: {d.name}" for d in usable)
        problem = "matches several" if found else "not found"
        raise AudioUnavailable(f"{kind} device {device!r} {problem}; choose one of: {names} (see `parley devices`)")
    return found[0]


def _on_the_server(name: str, kind: Literal["input", "output"], usable: list[DeviceInfo]) -> DeviceInfo:
    """ALSA's 'pulse' device, to be opened on the server's device `name` (checked to exist when pactl answers)."""
    front = [d for d in usable if d.name == FRONT]
    if not front:
        raise AudioUnavailable(
            f"{kind} device {name!r} is on the sound server, which PortAudio cannot reach: ALSA has no 'pulse'"
            " device (apt-get install libasound2-plugins)"
        )
    listed = [d for d in server_devices() if d.kind == kind]
    if listed and name not in {d.name for d in listed}:
        names = ", ".join(d.description for d in listed if not d.monitor)
        raise AudioUnavailable(f"{kind} device {name!r} not found on the sound server; connected now: {names}")
    return replace(front[0], server_device=name)
