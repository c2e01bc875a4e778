"""Another process that has a journal open (and writes to it) while a test tries to open it too."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_HOLD = """
import sys
from pathlib import Path
from engine.journal import Journal
with Journal(Path(sys.argv[1])) as journal:
    journal.append("turn/start", turn=1, source="text")
    journal.append("user/message", turn=1, text="mine")
    print("open", flush=True)
    sys.stdin.readline()
    journal.append("turn/end", turn=1, outcome="completed")
"""


@contextmanager
def held_elsewhere(journal: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A process holding `journal` open, a turn started in it, until the block ends; it then closes the turn."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(journal)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"open\n"
        yield holder
        assert holder.stdin is not None
        holder.stdin.write(b"go on\n")
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        for stream in (holder.stdin, holder.stdout):
            if stream is not None and not stream.closed:
                stream.close()
