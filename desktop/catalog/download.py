"""Get a catalogue model: ask the Hub for its files, check the disk has room before the first byte, fetch each file
(continuing a `.part` an earlier attempt left), verify its checksum, and move the model into place in one rename.

Only the person starts a download. A stop (`stop` set) or a wrong checksum leaves nothing behind; any other failure
keeps the `.part` files so the next attempt continues them. Blocking: the app runs it in a worker thread.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from desktop.catalog.entries import Entry
from desktop.catalog.hub import Cancelled, HubError, Remote, describe, fetch, verify
from desktop.catalog.store import PARTIAL, Receipt, Store
from desktop.errors import BadInput

MARGIN = 64 * 1024 * 1024  # room left over once the download is in: a full disk breaks everything else
Phase = Literal["asking", "downloading", "verifying", "installed"]
FreeBytes = Callable[[Path], int]


class NoSpace(BadInput):
    """The disk cannot hold the download; refused before it starts."""


class ChecksumMismatch(HubError):
    """A downloaded file is not what the Hub (or the catalogue) says it is; it was deleted."""


@dataclass(frozen=True)
class Progress:
    """How far a download is: bytes `done` of `total` (None while unknown)."""

    model: str
    phase: Phase
    done: int = 0
    total: int | None = None
    file: str = ""


@dataclass(frozen=True)
class Plan:
    entry: Entry
    remotes: tuple[Remote, ...]
    have: int  # bytes already fetched by an earlier attempt

    @property
    def total(self) -> int | None:
        sizes = [r.size for r in self.remotes]
        return None if None in sizes else sum(s for s in sizes if s is not None)


def free_space(path: Path) -> int:
    """Free bytes on the disk that holds `path` (or would hold it: its nearest existing folder)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def plan(entry: Entry, store: Store) -> Plan:
    """Ask the Hub about every file (blocking); a HubError in one line when it cannot answer."""
    if entry.bundled:
        raise BadInput(f"{entry.id} is bundled with Parley: there is nothing to download")
    remotes = tuple(describe(entry.repo, path, entry.revision) for path in entry.files)
    staged = store.partial(entry)
    have = sum(_part(staged, name, r).stat().st_size for name, r in zip(entry.names, remotes, strict=True)
               if _part(staged, name, r).exists())  # fmt: skip
    have += sum(r.size or 0 for name, r in zip(entry.names, remotes, strict=True) if (staged / name).exists())
    return Plan(entry, remotes, have)


def check_space(planned: Plan, store: Store, free: FreeBytes = free_space) -> None:
    """Refuse, before the first byte, a download the disk cannot hold with MARGIN to spare."""
    total = planned.total
    if total is None:
        return
    needed = total - planned.have + MARGIN
    available = free(store.root)
    if available < needed:
        raise NoSpace(
            f"not enough disk space for {planned.entry.id}: it needs {_mb(needed)} and {store.root} has "
            f"{_mb(available)} free; free some space or set PARLEY_MODELS_DIR to a folder on a larger disk"
        )


def _mb(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB"


def download(
    entry: Entry,
    store: Store,
    stop: threading.Event,
    on_progress: Callable[[Progress], None],
    *,
    free: FreeBytes = free_space,
) -> Path:
    """Download `entry` into the store and return its folder; see the module docstring for what failures leave."""
    on_progress(Progress(entry.id, "asking"))
    planned = plan(entry, store)
    check_space(planned, store, free)
    staged = store.partial(entry)
    staged.mkdir(parents=True, exist_ok=True)
    counter = _Counter(entry.id, planned, on_progress)
    try:
        for name, remote in zip(entry.names, planned.remotes, strict=True):
            counter.file = name
            _get_file(entry, name, remote, staged, stop, counter)
    except (Cancelled, ChecksumMismatch):
        discard(entry, store)
        raise
    receipt = Receipt(entry.id, entry.repo, entry.revision, planned.remotes[0].commit, _files(entry, planned))
    folder = store.install(entry, staged, receipt)
    _tidy(store)
    on_progress(Progress(entry.id, "installed", planned.total or 0, planned.total))
    return folder


def _get_file(entry: Entry, name: str, remote: Remote, staged: Path, stop: threading.Event, counter: _Counter) -> None:
    done = staged / name
    if done.exists():
        return  # fetched and verified by an earlier attempt
    for stale in staged.glob(f"{name}.*.part"):
        if stale != _part(staged, name, remote):
            stale.unlink()  # an older version of the file
    part = _part(staged, name, remote)
    fetch(remote, part, stop, counter.add)
    checksum = remote.checksum(entry.sha256.get(name, ""))
    counter.verifying()
    if checksum and not verify(part, checksum, stop):
        part.unlink()
        raise ChecksumMismatch(
            f"{name} of {entry.id} did not match its checksum ({checksum[:20]}…) and was deleted; "
            "the download or the mirror is corrupt: try again, or another HF_ENDPOINT"
        )
    os.replace(part, done)


def _part(staged: Path, name: str, remote: Remote) -> Path:
    """A partial file is for one version of the file (its ETag): a changed file is not continued."""
    return staged / f"{name}.{remote.etag[:16]}.part"


def _files(entry: Entry, planned: Plan) -> dict[str, dict[str, object]]:
    return {
        name: {"size": r.size, "checksum": r.checksum(entry.sha256.get(name, "")) or "unverified (no checksum)"}
        for name, r in zip(entry.names, planned.remotes, strict=True)
    }


def discard(entry: Entry, store: Store) -> None:
    """Delete what a download of `entry` left (a stop, a bad file): nothing of it stays."""
    shutil.rmtree(store.partial(entry), ignore_errors=True)
    _tidy(store)


def _tidy(store: Store) -> None:
    try:
        (store.root / PARTIAL).rmdir()  # only when empty: other downloads' parts stay
    except OSError:
        pass


class _Counter:
    """Bytes done across the model's files, reported as Progress."""

    def __init__(self, model: str, planned: Plan, report: Callable[[Progress], None]) -> None:
        self._model, self._total, self._report = model, planned.total, report
        self.done = planned.have
        self.file = ""

    def add(self, count: int) -> None:
        self.done += count
        self._report(Progress(self._model, "downloading", self.done, self._total, self.file))

    def verifying(self) -> None:
        self._report(Progress(self._model, "verifying", self.done, self._total, self.file))
