"""The private PulseAudio's lifetime: a test session stops the server it started, and only that one.

Each test runs a session (tests/audio/pulse.py start() ... stop()) in a subprocess with a runtime dir of its own
(PARLEY_PULSE_RUNTIME), so the shared server other sessions use right now is never touched.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SESSION = (
    "import subprocess, sys\n"
    "from tests.audio import pulse\n"
    "p = pulse.start()\n"
    "for name in sys.argv[1:]:\n"  # sinks of other sessions, by the pid in their name
    "    pulse.pactl('load-module', 'module-null-sink', f'sink_name={name}')\n"
    "pulse.stop(p)\n"
    "print(p.started)\n"
)


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A runtime dir of this test's own (short: a unix socket path has a length limit); any server in it is
    stopped afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="parley-pulse-t", dir="/tmp"))
    try:
        yield folder
    finally:
        pid = _server_pid(folder)
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGTERM)
            _until(lambda: not _alive(pid))
        shutil.rmtree(folder, ignore_errors=True)


def _env(runtime: Path) -> dict[str, str]:
    return {**os.environ, "PARLEY_PULSE_RUNTIME": str(runtime), "XDG_RUNTIME_DIR": str(runtime)}


def _session(runtime: Path, *others: str) -> int | None:
    """Run one test session's start() and stop(); the pid of the server it started, if it started one."""
    done = subprocess.run([sys.executable, "-c", SESSION, *others], cwd=ROOT, env=_env(runtime),
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    return None if last == "None" else int(last)


def _answers(runtime: Path) -> bool:
    return subprocess.run(["pactl", "info"], env=_env(runtime), capture_output=True, timeout=10).returncode == 0


def _server_pid(runtime: Path) -> int | None:
    try:
        return int((runtime / "pulse" / "pid").read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _until(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_session_stops_the_server_it_started(runtime: Path) -> None:
    started = _session(runtime)
    assert started is not None
    assert not _alive(started)
    assert not _answers(runtime)


def test_a_server_the_session_did_not_start_keeps_running(runtime: Path) -> None:
    subprocess.run(["pulseaudio", "--daemonize=yes", "--exit-idle-time=-1", "-n",
                    "--load=module-native-protocol-unix"], env=_env(runtime), check=True, timeout=20)  # fmt: skip
    assert _until(lambda: _answers(runtime))
    assert _session(runtime) is None
    assert _answers(runtime)


def test_the_starter_leaves_the_server_to_a_session_still_using_it(runtime: Path) -> None:
    started = _session(runtime, f"speaker_{os.getpid()}")  # this test process stands for the other session
    assert started is not None
    assert _alive(started)
    assert _answers(runtime)


def test_sinks_of_a_session_that_died_do_not_keep_the_server(runtime: Path) -> None:
    started = _session(runtime, f"speaker_{_a_dead_pid()}")
    assert started is not None
    assert not _answers(runtime)


def _a_dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid
