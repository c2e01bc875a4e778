"""A private PulseAudio for the real-device tests, in its own runtime dir (never the desktop's sound server),
with two null sinks per test session: `speaker_<pid>` (what the player plays) and `micwire_<pid>` (whose monitor
is the microphone). Safe for concurrent sessions: the server is started if none answers; each session loads, and
at the end unloads, only its own sinks and modules. The session that started the server stops it at its end,
unless another session is still using it then (its sinks are loaded or its clients connected); a server this
session did not start is always left running. A lock file orders these decisions between sessions.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TOOLS = ("pulseaudio", "pactl", "pacmd", "paplay", "parec")
APT = "apt-get install -y pulseaudio pulseaudio-utils libasound2-plugins libportaudio2"
SPEAKER = f"speaker_{os.getpid()}"
MICWIRE = f"micwire_{os.getpid()}"
SINKS = (SPEAKER, MICWIRE)
RUNTIME = Path(os.environ.get("PARLEY_PULSE_RUNTIME") or f"/tmp/parley-pulse-{os.getuid()}")
SESSION_SINK = re.compile(r"(?:speaker|micwire)_(\d+)")
STARTED: list[Pulse] = []  # the kits this process started (and has not stopped): they own the keepers


def pactl(*args: str, check: bool = True) -> str:
    done = subprocess.run(["pactl", *args], capture_output=True, text=True, timeout=10, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"pactl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _running() -> bool:
    return subprocess.run(["pactl", "info"], capture_output=True, timeout=10, check=False).returncode == 0


def _poll(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise RuntimeError(f"PulseAudio fixture: timed out waiting for {what}")


@dataclass
class Pulse:
    speaker: str = SPEAKER
    micwire: str = MICWIRE
    modules: list[str] = field(default_factory=list)
    keepers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)  # per sink: asks for low latency
    started: int | None = None  # the server's pid when this session started it

    def load(self, *args: str) -> str:
        module = pactl("load-module", *args).strip()
        self.modules.append(module)
        return module

    def unload(self, module: str) -> None:
        pactl("unload-module", module, check=False)
        if module in self.modules:
            self.modules.remove(module)


def start() -> Pulse:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"real-device tests need {', '.join(missing)}: {APT}")
    RUNTIME.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(RUNTIME)
    os.environ.pop("PULSE_SERVER", None)
    pulse = Pulse()
    with _decisions():  # another session's stop() must not find the server unused between start and our sinks
        if not _running():
            subprocess.run(
                ["pulseaudio", "--daemonize=yes", "--exit-idle-time=-1", "--disallow-exit", "-n",
                 "--load=module-native-protocol-unix"],
                capture_output=True, timeout=20, check=True,
            )  # fmt: skip
            _poll(_running, 10, "the server to answer")
            pulse.started = server_pid()
        for sink in SINKS:
            pulse.load("module-null-sink", f"sink_name={sink}")
    # a null sink renders in 2 s blocks unless a client asks for low latency: keep one asking on each monitor
    pulse.keepers.update((sink, _keeper(sink)) for sink in SINKS)
    STARTED.append(pulse)
    _poll(lambda: all(lat < 100_000 for lat in sink_latencies_us().values()), 10, "low-latency null sinks")
    os.environ["PULSE_SINK"] = SPEAKER
    os.environ["PULSE_SOURCE"] = f"{MICWIRE}.monitor"
    return pulse


def _keeper(sink: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["parec", f"--device={sink}.monitor", "--latency-msec=5", "--raw", "--format=s16le", "--channels=1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


@contextlib.contextmanager
def headset(pulse: Pulse) -> Iterator[None]:
    """The speaker as a headset's sink on a desktop: no client but the player asks it for low latency (nothing
    records its monitor, no loopback), so an idle sink renders 2 s ahead, as the sound server's default is."""
    owners = [started for started in STARTED if pulse.speaker in started.keepers]
    for owner in owners:
        owner.keepers[pulse.speaker].terminate()
        owner.keepers[pulse.speaker].wait(timeout=10)
    try:
        _poll(lambda: sink_latencies_us(configured=True)[pulse.speaker] >= 1_000_000, 10, "the speaker's sink to idle")
        yield
    finally:
        for owner in owners:
            owner.keepers[pulse.speaker] = _keeper(pulse.speaker)
        _poll(lambda: sink_latencies_us()[pulse.speaker] < 100_000, 10, "the speaker's sink at low latency again")


def sink_latencies_us(*, configured: bool = False, sinks: tuple[str, ...] = SINKS) -> dict[str, int]:
    """Per sink of ours (or of `sinks`): how far ahead of the clock it has rendered (new audio waits that long), or
    `configured`: the render block it runs at (2 s when no client asks for less)."""
    latencies: dict[str, int] = {}
    name = ""
    for line in pactl("list", "sinks").splitlines():
        line = line.strip()
        if line.startswith("Name:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("Latency:") and name in sinks:  # "Latency: 2773 usec, configured 9977 usec"
            latencies[name] = int(line.split()[4 if configured else 1])
    return latencies


def stop(pulse: Pulse) -> None:
    """Stop our keepers, unload our modules, and stop the server if we started it and nobody else uses it."""
    if pulse in STARTED:
        STARTED.remove(pulse)
    for keeper in pulse.keepers.values():
        keeper.terminate()
        keeper.wait(timeout=10)
    for module in reversed(pulse.modules):
        pulse.unload(module)
    if pulse.started is None:
        return  # another session's server: never ours to stop
    with _decisions():
        if server_pid() == pulse.started and not _used_by_others():
            _stop_server(pulse.started)


def server_pid() -> int | None:
    """The pid of the server answering in RUNTIME, from its pid file (None if there is none)."""
    try:
        return int((RUNTIME / "pulse" / "pid").read_text().strip())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def _decisions() -> Iterator[None]:
    """One session at a time decides to start, join or stop the server."""
    with (RUNTIME / "parley-tests.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _used_by_others() -> bool:
    """Another live session's sinks are loaded, or a client that is not this process or its child is connected."""
    modules = pactl("list", "short", "modules", check=False)
    owners = {int(pid) for pid in SESSION_SINK.findall(modules)} - {os.getpid()}
    if any(_alive(pid) for pid in owners):
        return True
    clients = re.findall(r'application\.process\.id = "(\d+)"', pactl("list", "clients", check=False))
    return any(not _ours(int(pid)) for pid in clients)


def _ours(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # gone already: it uses nothing
    return int(stat.rpartition(")")[2].split()[1]) == os.getpid()


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def _stop_server(pid: int) -> None:
    """SIGTERM to the server we started (checked to be pulseaudio still), then wait until it has gone."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return
    if b"pulseaudio" not in command:
        return  # the pid was reused: not our server
    os.kill(pid, signal.SIGTERM)
    _poll(lambda: not _alive(pid) or _zombie(pid), 10, "the server we started to exit")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


class Recorder:
    """`parec` of a monitor source as float32 mono at `rate`, read continuously by a thread (parec drops its
    buffered tail when terminated, so the test waits for the samples it needs before finishing)."""

    def __init__(self, source: str, rate: int) -> None:
        self.rate = rate
        self._process = subprocess.Popen(
            ["parec", f"--device={source}", "--latency-msec=5", "--raw", "--format=float32le", "--channels=1",
             f"--rate={rate}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self._chunks: list[bytes] = []
        self._bytes = 0
        self.arrivals: list[tuple[float, int]] = []  # (monotonic time, samples received by then) per read
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        while chunk := os.read(fd, 4096):
            self._chunks.append(chunk)
            self._bytes += len(chunk)
            self.arrivals.append((time.monotonic(), self._bytes // 4))

    def arrived_at(self, sample: int) -> float | None:
        """When `sample` reached us: at most the recorder's 5 ms latency after the speaker played it."""
        return next((at for at, count in self.arrivals if count > sample), None)

    @property
    def seconds(self) -> float:
        return self._bytes / 4 / self.rate

    def finish(self) -> np.ndarray:
        self._process.terminate()
        self._process.wait(timeout=10)
        self._reader.join(timeout=10)
        assert self._process.stdout is not None
        self._process.stdout.close()
        data = b"".join(self._chunks)
        return np.frombuffer(data[: len(data) // 4 * 4], dtype=np.float32).copy()


def play_into(sink: str, wav: Path, latency_ms: int = 10) -> subprocess.Popen[bytes]:
    """A short buffer keeps onsets exact; a long one keeps a loaded machine from starving paplay (a gap of silence)."""
    return subprocess.Popen(["paplay", f"--device={sink}", f"--latency-msec={latency_ms}", str(wav)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
