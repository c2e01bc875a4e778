"""Two llama.cpp models loading at once (two contexts of the embedded LLM, in their worker threads) leave the
process's stdout and stderr where they were: llama-cpp-python silences a load by pointing both at /dev/null and
back, and two overlapping loads used to restore each other's /dev/null (every later log line lost)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

from adapters.llm import local

ROUNDS = 3


def _target(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


def test_loads_at_once_keep_stdout_and_stderr() -> None:
    path = local.bundled_model()
    before = (sys.stdout, sys.stderr, _target(1), _target(2))
    loads: list[Callable[[], object]] = [
        lambda: local._load(path, 256, local._Threads(1, 1)),
        lambda: local._load(path, 512, local._Threads(1, 1)),
    ]
    for _ in range(ROUNDS):
        start = threading.Barrier(len(loads))
        loaded: list[object] = []

        def run(load: Callable[[], object], start: threading.Barrier = start, loaded: list[object] = loaded) -> None:
            start.wait()
            loaded.append(load())

        threads = [threading.Thread(target=run, args=(load,)) for load in loads]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(loaded) == len(loads)
        assert (sys.stdout, sys.stderr, _target(1), _target(2)) == before
