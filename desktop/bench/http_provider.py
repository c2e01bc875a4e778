"""The barge-in scenario against an OpenAI-compatible server whose stream stalls mid-reply (tests' fault server).

The cancel then has to tear down a live HTTP stream, so its quiesce time includes closing the connection.
The fault server lives with the tests; without them (an installed build) this row is "not measured".
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from desktop.bench.scenarios import aborted_metric, run_scenario
from desktop.config import Config, with_llm

STORY = ("Once upon a time, a lighthouse keeper lived on a rocky island with his cat. "
         "Every night he climbed the stairs and lit the great lamp. ")  # fmt: skip
ANSWER = "It is about noon."


class Unavailable(Exception):
    """The fault-injecting server cannot be used here; the message says why."""


@dataclass(frozen=True)
class HttpRuns:
    quiesce_ms: list[float]
    closed_by_client: int  # stalled connections the server saw closed by Parley
    stalled: int


async def stalled_barge_ins(config: Config, root: Path, reps: int, progress: Callable[[str], None]) -> HttpRuns:
    source_tree_on_path()
    try:
        from tests.fault_behaviours import stall_mid_stream, text_stream
        from tests.fault_server import running
    except ImportError as error:
        raise Unavailable(f"the fault server (tests/fault_server.py) is not importable: {error}") from None
    quiesce: list[float] = []
    closed = stalled = 0
    for n in range(reps):
        with running() as server:  # a fresh server each run: no scripted answer is left over for the next
            remote = with_llm(
                config, provider="openai", base_url=server.base_url, model="fault-1", retries=0, idle_timeout=60.0
            )
            server.push(stall_mid_stream(STORY), text_stream(ANSWER))
            run = await run_scenario("barge_in.toml", root / f"http{n}", remote)
            quiesce += aborted_metric([run], "quiesce_ms")
            stalled += sum(c.stalled_at is not None for c in server.connections)
            closed += sum(c.stalled_at is not None and c.closed_by == "client" for c in server.connections)
        progress(f"stalled provider {n + 1}/{reps}")
    return HttpRuns(quiesce, closed, stalled)


def source_tree_on_path() -> None:
    """`parley` run from a source checkout: its tests/ (with the fault server) sits next to desktop/."""
    root = Path(__file__).resolve().parents[2]
    if (root / "tests" / "fault_server.py").is_file() and str(root) not in sys.path:
        sys.path.append(str(root))
