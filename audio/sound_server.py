"""The sound server's own devices (PulseAudio, or PipeWire's PulseAudio server), as the desktop names them.

Through PulseAudio, PortAudio sees only ALSA's 'pulse' and 'default' devices (issue 37: the Settings lists said
"System default / pulse / default"). The server's sinks and sources come from `pactl`; one is used by opening
ALSA's 'pulse' device with PULSE_SINK / PULSE_SOURCE naming it, which libpulse reads when the stream's connection
to the server is made. Without pactl or a server there are none, never an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["input", "output"]
PREFIX = "pulse:"  # a setting naming a server device: "pulse:" and the server's name for it
FRONT = "pulse"  # the ALSA device (PortAudio name) that opens a stream on the server
ENV = {"output": "PULSE_SINK", "input": "PULSE_SOURCE"}
TIMEOUT_S = 3.0
Runner = Callable[[list[str]], str | None]  # pactl's arguments -> its output, None when it failed
_ENV_LOCK = threading.Lock()


@dataclass(frozen=True)
class ServerDevice:
    name: str  # the server's own name, e.g. alsa_output.pci-0000_00_1f.3.analog-stereo
    description: str  # what the desktop's sound settings show, e.g. "Built-in Audio Analog Stereo"
    kind: Kind
    monitor: bool = False  # a sink's monitor: what plays on it, not a microphone

    @property
    def setting(self) -> str:
        return PREFIX + self.name


def server_name(device: str | int | None) -> str | None:
    """The server's device name a setting names (None: a PortAudio device, an index or the default)."""
    if isinstance(device, str) and device.startswith(PREFIX) and len(device) > len(PREFIX):
        return device[len(PREFIX) :]
    return None


def pactl(args: list[str]) -> str | None:
    """pactl's output in the C locale (its text is translated otherwise); None without pactl or a server."""
    if shutil.which("pactl") is None:
        return None
    try:
        done = subprocess.run(
            ["pactl", *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def server_devices(run: Runner = pactl) -> list[ServerDevice]:
    """The server's sinks (outputs) and sources (inputs, monitors marked), in its order; [] when there is none."""
    found: list[ServerDevice] = []
    kinds: tuple[tuple[Kind, str], ...] = (("output", "sinks"), ("input", "sources"))
    for kind, listing in kinds:
        text = run(["-f", "json", "list", listing])
        try:
            entries = _from_json(text) if text is not None else None
        except (ValueError, TypeError, KeyError, AttributeError):
            entries = None
        if entries is None:  # pactl before 16 has no JSON
            text = run(["list", listing])
            entries = _from_text(text) if text is not None else []
        found += [ServerDevice(name, description or name, kind, monitor) for name, description, monitor in entries]
    return found


def _from_json(text: str) -> list[tuple[str, str, bool]]:
    entries: list[dict[str, Any]] = json.loads(text)
    return [
        (
            str(e["name"]),
            str(e.get("description") or ""),
            e.get("properties", {}).get("device.class") == "monitor" or bool(e.get("monitor_of_sink")),
        )
        for e in entries
    ]


def _from_text(text: str) -> list[tuple[str, str, bool]]:
    """`pactl list sinks|sources` in the C locale: a "Name:", "Description:" and, for sources, "Monitor of Sink:"
    line per device."""
    entries: list[list[Any]] = []
    for line in text.splitlines():
        key, _, value = line.strip().partition(": ")
        if key == "Name":
            entries.append([value.strip(), "", False])
        elif key == "Description" and entries:
            entries[-1][1] = value.strip()
        elif key == "Monitor of Sink" and entries:
            entries[-1][2] = value.strip() not in ("", "n/a")
    return [(str(name), str(description), bool(monitor)) for name, description, monitor in entries]


@contextlib.contextmanager
def routed(name: str | None, kind: Kind) -> Iterator[None]:
    """While a stream on ALSA's 'pulse' device opens: the server connects it to `name` (None: to its default).
    The variable goes back to what it was afterwards; a stream keeps the device it connected to."""
    if name is None:
        yield
        return
    variable = ENV[kind]
    with _ENV_LOCK:
        before = os.environ.get(variable)
        os.environ[variable] = name
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = before
