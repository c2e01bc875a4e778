"""SPEC §1's import directions, declared as import-linter contracts in pyproject.toml, hold - and can fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).parent / "lint-imports"


def _lint(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--config", str(config), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_every_import_contract_is_kept() -> None:
    done = _lint(ROOT, ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


def test_a_forbidden_import_breaks_its_contract(tmp_path: Path) -> None:
    """The same contracts over a copy of the tree in which the engine imports the audio layer."""
    for package in ("engine", "adapters", "audio", "desktop"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "engine" / "leak.py").write_text("import audio.player\n")
    done = _lint(tmp_path, tmp_path / "pyproject.toml")
    assert done.returncode != 0
    assert "The engine imports no Qt, no devices" in done.stdout
    assert "engine.leak -> audio.player" in done.stdout


def test_turn_taking_reads_only_the_engines_value_types_and_sits_above_the_devices(tmp_path: Path) -> None:
    """audio.turns may import engine.events and engine.inbox, not the conversation's machinery; no other audio
    module may import audio.turns."""
    for package in ("engine", "adapters", "audio", "desktop"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "audio" / "turns" / "leak.py").write_text("import engine.conversation\n")
    (tmp_path / "audio" / "leak.py").write_text("import audio.turns.ears\n")
    done = _lint(tmp_path, tmp_path / "pyproject.toml")
    assert done.returncode != 0
    assert "audio.turns.leak -> engine.conversation" in done.stdout
    assert "audio.leak -> audio.turns.ears" in done.stdout
    assert "2 broken" in done.stdout


def test_no_product_code_sleeps_forever() -> None:
    """qasync turns a sleep into a Qt timer: `sleep_forever` (a sleep of infinity) raises OverflowError in the
    window, so waiting without end is `Event().wait()`."""
    offenders = [
        str(path.relative_to(ROOT))
        for package in ("adapters", "audio", "desktop", "engine")
        for path in (ROOT / package).rglob("*.py")
        if "sleep_forever" in path.read_text(encoding="utf-8") or "sleep(math.inf)" in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


BLAS_THREADS = """
import ctypes, {first}, numpy
path = next(line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line)
blas = ctypes.CDLL(path)
names = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")
print(next(getattr(blas, name) for name in names if hasattr(blas, name))())
"""


@pytest.mark.parametrize("first", ["desktop.cli", "desktop.bench.runner", "numpy"])
def test_the_app_runs_numpys_blas_without_a_spinning_pool(first: str) -> None:
    """OpenBLAS's workers busy-wait after each call, taking a core from the models at the end of a turn: the app
    sets one BLAS thread before numpy loads, whichever of its entry points is imported first (numpy alone has a
    thread per core: the probe can tell)."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    probe = BLAS_THREADS.format(first=first)
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    expected = (os.cpu_count() or 1) if first == "numpy" else 1
    assert int(out.stdout.split()[-1]) == expected
