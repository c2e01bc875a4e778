"""Audio devices for the settings dialog; PortAudio missing means an empty list and a note, never a crash.

With a sound server (PulseAudio, or PipeWire's), PortAudio sees only its 'pulse' and 'default' devices: the
server's own sinks and sources are offered instead, by the names the desktop gives them (audio.sound_server).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from audio.sound_server import FRONT, ServerDevice, server_devices, server_name

SAME_AS_DEFAULT = frozenset({FRONT, "default"})  # through a sound server: its default device, as "System default"


@dataclass(frozen=True)
class DeviceLists:
    """`inputs`/`outputs`: the settings that name the devices offered, in order; `labels`: the words shown for a
    setting that is not itself a name a person reads (a server device's -> its description), and for the devices
    there are but not offered (the same as another)."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    note: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, setting: str) -> str:
        return self.labels.get(setting) or server_name(setting) or setting

    def present(self, setting: str) -> bool:
        """The device a setting names is there now (offered or not)."""
        return setting in self.labels or setting in self.inputs or setting in self.outputs


def shown_device(setting: str | None, server: Callable[[], list[ServerDevice]] = server_devices) -> str:
    """A device setting in the words a person reads: a sound server's device by its description."""
    if not setting:
        return "system default"
    name = server_name(setting)
    if name is None:
        return setting
    return next((d.description for d in server() if d.name == name), name)


def device_lists(server: Callable[[], list[ServerDevice]] = server_devices) -> DeviceLists:
    try:
        import sounddevice
    except ImportError:
        return DeviceLists(note="sounddevice is not installed, so devices cannot be listed (pip install sounddevice)")
    except OSError:
        return DeviceLists(note="PortAudio is missing, so devices cannot be listed (sudo apt install libportaudio2)")
    try:
        found: Any = sounddevice.query_devices()
    except sounddevice.PortAudioError as error:
        return DeviceLists(note=f"PortAudio could not list devices ({error})")
    found = list(found)
    reaches_server = any(str(d["name"]) == FRONT for d in found)
    return from_query(found, server() if reaches_server else [])


def from_query(found: list[dict[str, Any]], named: list[ServerDevice] | None = None) -> DeviceLists:
    """PortAudio's devices; with the sound server's `named` ones, those first and its 'pulse'/'default' left out
    (the same as "System default"). A source that only repeats what a sink plays (its monitor) is not offered."""
    inputs = [str(d["name"]) for d in found if int(d.get("max_input_channels", 0)) > 0]
    outputs = [str(d["name"]) for d in found if int(d.get("max_output_channels", 0)) > 0]
    note = "" if inputs and outputs else "No input or output device was found; the system default will be tried"
    named = [d for d in named or [] if not d.monitor]
    if not named:
        return DeviceLists(inputs, outputs, note)
    descriptions = [d.description for d in named]
    labels = {n: n for n in SAME_AS_DEFAULT if n in inputs or n in outputs}
    labels |= {d.setting: d.description if descriptions.count(d.description) == 1 else f"{d.description} ({d.name})"
               for d in named}  # fmt: skip
    server_in = [d.setting for d in named if d.kind == "input"]
    server_out = [d.setting for d in named if d.kind == "output"]
    return DeviceLists(
        server_in + [n for n in inputs if n not in SAME_AS_DEFAULT],
        server_out + [n for n in outputs if n not in SAME_AS_DEFAULT],
        "",
        labels,
    )
