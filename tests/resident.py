"""The process's resident memory, read from /proc (Linux), for the tests that check memory goes back."""

from __future__ import annotations

from pathlib import Path


def resident_mb(field: str = "VmRSS") -> float:
    """`VmRSS`, or `RssAnon` (the heap and anonymous maps only: no model file pages that come and go)."""
    status = Path("/proc/self/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:")) / 1024
