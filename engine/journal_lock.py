"""One writer per journal: an OS lock held for as long as a process has the journal (or its run folder) open.

Two `parley run --out DIR`, or two windows on one conversation, once both appended: the same `seq` twice, a turn
closed twice, one window's turn missing from the rebuilt history. The lock is `flock` on a file beside the journal
(`journal.jsonl.lock`; on Windows, `msvcrt.locking` on its first byte), so the kernel drops it when the holder dies,
however it dies: a crash never leaves a stale lock behind. The file holds the holder's process id, for the message.

Within one process the lock is counted: `parley run` holds it for the whole run (the journal, then output.wav and
report.json) and the journal it opens inside takes the same lock again.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_SUFFIX = ".lock"
_held: dict[Path, tuple[int, int]] = {}  # lock file -> (fd, holds) in this process
_guard = threading.Lock()


class JournalBusy(Exception):
    """Another process has the journal open; the message is one line naming it and the way out."""

    def __init__(self, journal: Path, pid: int | None) -> None:
        who = f"another Parley (process {pid})" if pid else "another Parley"
        super().__init__(f"{journal} is open in {who}; close that one first, or use another folder")
        self.journal = journal
        self.pid = pid


def lock_path(journal: Path) -> Path:
    return journal.with_name(journal.name + LOCK_SUFFIX)


@contextmanager
def writer_lock(journal: Path) -> Iterator[None]:
    """Hold the journal's lock for the block, or raise JournalBusy at once (never waits)."""
    path = acquire(journal)
    try:
        yield
    finally:
        release(path)


def acquire(journal: Path) -> Path:
    """Take (or count once more) the lock of `journal`; returns the key to `release` it with."""
    path = _key(journal)
    with _guard:
        if path in _held:
            fd, holds = _held[path]
            _held[path] = (fd, holds + 1)
            return path
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        if not _try_lock(fd):
            pid = _holder(fd)
            os.close(fd)
            raise JournalBusy(journal, pid)
        _note_holder(fd)
        _held[path] = (fd, 1)
        return path


def release(path: Path) -> None:
    with _guard:
        fd, holds = _held[path]
        if holds > 1:
            _held[path] = (fd, holds - 1)
            return
        del _held[path]
        os.close(fd)  # closing the descriptor drops the lock


def held(journal: Path) -> bool:
    """Whether this process holds the lock of `journal`."""
    return _key(journal) in _held


def _key(journal: Path) -> Path:
    return lock_path(Path(os.path.abspath(journal)))


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _note_holder(fd: int) -> None:
    """Write our process id into the lock file (best effort: the lock itself is what counts)."""
    try:
        os.ftruncate(fd, 0)
        if hasattr(os, "pwrite"):
            os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError:
        pass  # a full disk: the lock holds all the same, the message just names no process


def _holder(fd: int) -> int | None:
    try:
        raw = os.pread(fd, 32, 0) if hasattr(os, "pread") else b""
    except OSError:
        return None
    text = raw.decode(errors="replace").strip()
    return int(text) if text.isdigit() else None
