"""Many barge-in cycles; threads, open files, sockets and RSS before and after (read from /proc/self)."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from desktop.bench.sessions import SPOKEN_EVERY, Cycle, Models, barge_in_cycle

WARMUP_CYCLES = 2  # one spoken, one push-to-talk: every lazily created pool exists before the baseline
# anyio's idle worker threads are ended by the first job started once they have been idle 10 s: the first and last
# counts wait that long and start one, so the pool's size (how many jobs ran at once lately) is not counted as a
# leak; the per-cycle deltas still see it
POOL_IDLE_S = 11.0
POOL_WORKER = "AnyIO worker thread"
PRUNED_WITHIN_S = 2.0
PROC = Path("/proc/self")


@dataclass(frozen=True)
class Counts:
    threads: int
    fds: int
    sockets: int
    rss_mb: float

    def minus(self, other: Counts) -> Counts:
        return Counts(
            self.threads - other.threads,
            self.fds - other.fds,
            self.sockets - other.sockets,
            round(self.rss_mb - other.rss_mb, 1),
        )


@dataclass
class Soak:
    before: Counts
    after: Counts
    deltas: list[Counts] = field(default_factory=list)  # after each cycle, against `before`
    cycles: list[Cycle] = field(default_factory=list)

    @property
    def final(self) -> Counts:
        return self.after.minus(self.before)


def counts() -> Counts:
    """OS threads of the process, its open file descriptors, the sockets among them, and its resident set."""
    links = []
    for fd in os.listdir(PROC / "fd"):
        try:
            links.append(os.readlink(PROC / "fd" / fd))
        except OSError:
            continue  # the descriptor listdir itself used, closed meanwhile
    threads = len(os.listdir(PROC / "task"))
    return Counts(threads, len(links), sum(link.startswith("socket:") for link in links), round(resident_mb(), 1))


def resident_mb(field: str = "VmRSS") -> float:
    """`VmRSS`, or `RssAnon` (the heap and anonymous maps only: no model file pages that come and go)."""
    status = (PROC / "status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:")) / 1024


def settled_counts() -> Counts:
    gc.collect()  # an abandoned executor's idle threads end only once it is collected
    return counts()


async def pruned_counts() -> Counts:
    """The counts once anyio's pool is down to the one worker a job started after POOL_IDLE_S leaves idle."""
    await asyncio.sleep(POOL_IDLE_S)
    await anyio.to_thread.run_sync(_others_ended)  # starting it ends the workers idle 10 s or longer
    return settled_counts()


def _others_ended() -> None:
    """On a pool worker: wait for the other workers, stopped as this job started, to end."""
    me = threading.current_thread()
    for other in threading.enumerate():
        if other is not me and other.name == POOL_WORKER:
            other.join(PRUNED_WITHIN_S)


async def soak(models: Models, root: Path, cycles: int, progress: Callable[[str], None]) -> Soak:
    for n in range(WARMUP_CYCLES):
        await barge_in_cycle(models, root / f"warmup{n}", spoken=n == 0)
    result = Soak(await pruned_counts(), Counts(0, 0, 0, 0.0))
    for n in range(1, cycles + 1):
        cycle = await barge_in_cycle(models, root / f"cycle{n}", spoken=n % SPOKEN_EVERY == 0)
        result.cycles.append(cycle)
        result.deltas.append(settled_counts().minus(result.before))
        if n % 25 == 0 or n == cycles:
            progress(f"soak {n}/{cycles}")
    result.after = await pruned_counts()
    return result
