"""`parley self-test`: the bundled barge-in scenario on the fast clock, then the journal's invariants."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from desktop.assets import fixture
from desktop.config import Config
from desktop.pipeline.run import run_session
from desktop.scenario import load_scenario
from engine.invariants import violations
from engine.journal import read_events

SCENARIO = "barge_in.toml"


def self_test(config: Config | None = None) -> list[str]:
    """Problems found; empty means the build works end to end (models, pipeline, barge-in, journal)."""
    with tempfile.TemporaryDirectory(prefix="parley-self-test-") as folder:
        out = Path(folder)
        asyncio.run(run_session(load_scenario(fixture(SCENARIO)), [], config or Config(), out, fast=True))
        events = read_events(out / "journal.jsonl")
        return violations(events) + _barge_in_worked(events)


def _barge_in_worked(events: list[dict[str, object]]) -> list[str]:
    ends = [e for e in events if e["type"] == "turn/end"]
    problems = []
    if len(ends) < 2:
        problems.append(f"expected the interrupted turn and the answer to the interruption, got {len(ends)} turns")
    elif ends[0]["outcome"] != "aborted" or ends[-1]["outcome"] != "completed":
        problems.append(f"turn outcomes were {[e['outcome'] for e in ends]}, expected aborted then completed")
    heard = [e for e in events if e["type"] == "assistant/message" and e.get("interrupted")]
    if not heard:
        problems.append("the interrupted reply left no heard-only assistant/message")
    return problems
