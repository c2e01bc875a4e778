"""Fixture scenarios (TOML): who says what, when, into the simulated microphone.

Each problem is a `ScenarioError` naming the file, the entry and the fix.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop.errors import BadInput
from desktop.paths import file_problem

SAY_KEYS = {"wav", "at", "after_reply_starts", "after_reply_ends", "push_to_talk", "text"}
TIMING_KEYS = ("at", "after_reply_starts", "after_reply_ends")
MAX_SECONDS = 600.0  # a fixture scenario lasts minutes; a larger time is a typo (and would record hours of silence)
MAX_ECHO_DELAY_MS = 1000.0  # a room's echo path is tens of milliseconds


class ScenarioError(BadInput):
    """The scenario file cannot be played as written."""


@dataclass(frozen=True)
class Say:
    """One user utterance: a WAV (or typed text) delivered at a time on the session clock or after a reply."""

    wav: Path | None
    text: str | None
    timing: str  # one of TIMING_KEYS
    seconds: float
    push_to_talk: bool = False


@dataclass(frozen=True)
class Echo:
    """[echo]: the loudspeaker heard by the microphone. Beyond gain and delay, what a real path does (defaults:
    audio.fixtures.EchoMixer's, a realistic one): the delay wanders (jitter_ms) and creeps (drift_ppm), the
    speaker clips softly (nonlinearity) and the room hums (noise_db)."""

    gain: float
    delay_ms: float
    jitter_ms: float = 2.0
    drift_ppm: float = 200.0
    nonlinearity: float = 0.3
    noise_db: float | None = -70.0


@dataclass(frozen=True)
class Scenario:
    path: Path
    says: tuple[Say, ...]
    echo: Echo | None


def load_scenario(path: Path) -> Scenario:
    problem = file_problem(path)
    if problem is not None:
        raise ScenarioError(f"{path}: the scenario file {problem}; see assets/fixtures/ for examples")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: not valid TOML ({error})") from None
    except OSError as error:
        raise ScenarioError(f"{path}: cannot be read ({error.strerror}); check its permissions") from None
    unknown = set(raw) - {"say", "echo"}
    if unknown:
        raise ScenarioError(f"{path}: unknown table {sorted(unknown)[0]!r}; use [[say]] and [echo]")
    entries = raw.get("say", [])
    if not isinstance(entries, list):
        raise ScenarioError(f"{path}: say must be an array of tables: write [[say]] above each utterance")
    says = tuple(_say(path, n, entry) for n, entry in enumerate(entries, start=1))
    if not says:
        raise ScenarioError(f"{path}: no [[say]] entries; add at least one utterance")
    _check_order(path, says)
    return Scenario(path, says, _echo(path, raw.get("echo")))


def _say(path: Path, n: int, entry: Any) -> Say:
    where = f"{path}: [[say]] #{n}"
    if not isinstance(entry, dict):
        raise ScenarioError(f"{where}: must be a table")
    unknown = set(entry) - SAY_KEYS
    if unknown:
        raise ScenarioError(f"{where}: unknown key {sorted(unknown)[0]!r}; known: {', '.join(sorted(SAY_KEYS))}")
    timings = [key for key in TIMING_KEYS if key in entry]
    if len(timings) != 1:
        raise ScenarioError(f"{where}: give exactly one of at, after_reply_starts, after_reply_ends")
    seconds = _number(entry[timings[0]], 0.0, MAX_SECONDS)
    if seconds is None:
        raise ScenarioError(
            f"{where}: {timings[0]} = {entry[timings[0]]!r} is not a time; give a number of seconds from 0 to"
            f" {MAX_SECONDS:g} (a time in the past, or a typo?)"
        )
    push_to_talk = entry.get("push_to_talk", False)
    if not isinstance(push_to_talk, bool):
        raise ScenarioError(f"{where}: push_to_talk = {push_to_talk!r}; write true or false")
    wav, text = _source(path, where, entry)
    return Say(wav, text, timings[0], seconds, push_to_talk)


def _number(value: Any, low: float, high: float) -> float | None:
    """`value` as a float if it is a finite number in [low, high] (not a bool, NaN or infinity); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and low <= value <= high else None


def _source(path: Path, where: str, entry: dict[str, Any]) -> tuple[Path | None, str | None]:
    if ("wav" in entry) == ("text" in entry):
        raise ScenarioError(f"{where}: give exactly one of wav (spoken) or text (typed)")
    if "text" in entry:
        if not isinstance(entry["text"], str) or not entry["text"].strip():
            raise ScenarioError(f'{where}: text must be the words typed, e.g. text = "what time is it"')
        return None, entry["text"]
    if not isinstance(entry["wav"], str) or not entry["wav"]:
        raise ScenarioError(f'{where}: wav must be the path of a WAV file, e.g. wav = "question.wav"')
    wav = Path(os.path.abspath(path.parent / entry["wav"]))
    problem = file_problem(wav)
    if problem is not None:
        raise ScenarioError(f"{where}: WAV file {wav} {problem}; paths are relative to the scenario file")
    return wav.resolve(), None


def _check_order(path: Path, says: tuple[Say, ...]) -> None:
    latest = -1.0
    for n, say in enumerate(says, start=1):
        if say.timing == "at":
            if say.seconds < latest:
                raise ScenarioError(f"{path}: [[say]] #{n} at={say.seconds} is earlier than an utterance before it")
            latest = say.seconds
        elif n == 1:
            raise ScenarioError(f"{path}: [[say]] #1 has no reply before it; give it an 'at' time")


ECHO_KEYS = {  # key: (lowest, highest) allowed
    "gain": (0.0, 2.0),
    "delay_ms": (0.0, 1000.0),
    "jitter_ms": (0.0, 50.0),
    "drift_ppm": (-1000.0, 1000.0),
    "nonlinearity": (0.0, 3.0),
    "noise_db": (-120.0, -20.0),
}


def _echo(path: Path, raw: Any) -> Echo | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: echo must be a table: write [echo] with gain and delay_ms below it")
    if set(raw) - set(ECHO_KEYS):
        raise ScenarioError(f"{path}: [echo] takes only {', '.join(ECHO_KEYS)}")
    values: dict[str, float] = {}
    for key, value in raw.items():
        low, high = ECHO_KEYS[key]
        number = _number(value, low, high)
        if number is None:
            raise ScenarioError(f"{path}: [echo] {key} = {value!r}; give a number from {low:g} to {high:g}")
        values[key] = number
    return Echo(values.pop("gain", 0.4), values.pop("delay_ms", 40.0), **values)


def scenario_path(path: Path) -> Path:
    """A scenario given on the command line: as written, or else one of the bundled ones by that name."""
    from desktop.assets import fixture

    bundled = fixture(path.name)
    return bundled if not path.exists() and path.parent == Path() and bundled.exists() else path
