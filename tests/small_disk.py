"""A really full disk for tests: a tmpfs of a few kilobytes mounted by the test itself (as root), unmounted after.

No skip: a machine where it cannot be mounted fails the test with the reason, so a missing capability is seen.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def small_disk(where: Path, size_kb: int) -> Iterator[Path]:
    """`where` (created) with a tmpfs of `size_kb` KiB mounted on it for the block."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        raise AssertionError(f"cannot mount a tmpfs on {where} (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill `disk` until fewer than `leave` bytes are free; returns the filler file (delete it to free space)."""
    filler = disk / "filler"
    with filler.open("wb") as handle:
        while True:
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            if free <= leave:
                break
            try:
                handle.write(b"\0" * min(4096, max(1, free - leave)))
                handle.flush()
            except OSError:
                break
    return filler
