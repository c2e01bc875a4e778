"""SPEC §1's import directions, declared as import-linter contracts in pyproject.toml, hold - and can fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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
