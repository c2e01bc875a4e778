"""Audio devices for the settings dialog; PortAudio missing means an empty list and a note, never a crash."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Devices:
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    note: str = ""


def list_devices() -> Devices:
    try:
        import sounddevice
    except ImportError:
        return Devices(note="sounddevice is not installed, so devices cannot be listed (pip install sounddevice)")
    except OSError:
        return Devices(note="PortAudio is missing, so devices cannot be listed (sudo apt install libportaudio2)")
    try:
        found: Any = sounddevice.query_devices()
    except sounddevice.PortAudioError as error:
        return Devices(note=f"PortAudio could not list devices ({error})")
    return from_query(list(found))


def from_query(found: list[dict[str, Any]]) -> Devices:
    inputs = [str(d["name"]) for d in found if int(d.get("max_input_channels", 0)) > 0]
    outputs = [str(d["name"]) for d in found if int(d.get("max_output_channels", 0)) > 0]
    note = "" if inputs and outputs else "No input or output device was found; the system default will be tried"
    return Devices(inputs, outputs, note)
