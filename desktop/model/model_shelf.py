"""Settings → Models without Qt: the catalogue as rows the window shows (size, RAM, speed, licence, whether it is
here and in use), and one download at a time in a worker thread with its progress and a cancel. Nothing downloads
unless the person asks; a failure (offline, a full disk, a bad checksum) is one line, and a cancel keeps nothing.
After a download a short probe measures the model's speed here, and the receipt keeps it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from adapters.contract import CancelSignal, User
from adapters.runtime.listeners import Listeners
from adapters.runtime.model_files import ModelError
from adapters.runtime.workers import run_job
from desktop.catalog.choice import in_use, using
from desktop.catalog.command import speed
from desktop.catalog.entries import KIND_NAMES, KINDS, Catalogue, Entry
from desktop.catalog.probe import probe, summary
from desktop.catalog.store import Store
from desktop.config import Config
from desktop.errors import BadInput

REDRAW_S = 0.1  # progress reaches the window at most this often (a fast disk reports thousands of blocks)
Start = Callable[..., None]  # runs `fn(*args)` as a task the session owns
FreeBytes = Callable[[Any], int]


@dataclass(frozen=True)
class ShelfRow:
    """One model as the Models dialog lists it."""

    id: str
    kind: str
    name: str
    size: str
    ram: str
    speed: str
    licence: str
    state: str  # "bundled", "downloaded" or "" (not here)
    in_use: bool


@dataclass(frozen=True)
class Fetching:
    """The download under way: bytes `done` of `total` (None while unknown), in `phase`."""

    id: str
    phase: str
    done: int = 0
    total: int | None = None

    @property
    def percent(self) -> int:
        return 100 * self.done // self.total if self.total else 0


class Shelf:
    """The model manager behind the dialog; `changed()` is called (on the loop thread) whenever it shows anew."""

    def __init__(self, catalogue: Catalogue, store: Store, start: Start, *, free: FreeBytes | None = None) -> None:
        self.catalogue, self.store = catalogue, store
        self._start, self._free = start, free
        self.fetching: Fetching | None = None
        self.message = ""  # the last download's outcome in one line
        self.failed = False
        self._signal: CancelSignal | None = None
        self._listeners: Listeners[None] = Listeners()

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        return self._listeners.subscribe(lambda _nothing: listener())

    def rows(self, config: Config) -> list[ShelfRow]:
        return [self._row(entry, config) for kind in KINDS for entry in self.catalogue.of_kind(kind)]

    def _row(self, entry: Entry, config: Config) -> ShelfRow:
        here = self.store.installed(entry)
        state = "bundled" if entry.bundled else "downloaded" if here else ""
        return ShelfRow(entry.id, KIND_NAMES[entry.kind], entry.name, _size(entry.size_mb), _size(entry.ram_mb),
                        speed(self.catalogue, self.store, entry), entry.licence, state,
                        in_use(entry, config, self.store))  # fmt: skip

    def get(self, model_id: str) -> bool:
        """Start downloading `model_id` (False, with a message, when one is under way or it cannot be got)."""
        if self.fetching is not None:
            self._say(f"{self.fetching.id} is still downloading; cancel it or wait", failed=True)
            return False
        try:
            entry = self.catalogue.find(model_id)
        except BadInput as error:
            self._say(str(error), failed=True)
            return False
        if entry.bundled or self.store.installed(entry):
            self._say(f"{entry.id} is already here", failed=True)
            return False
        self.fetching = Fetching(entry.id, "asking")
        self._signal = CancelSignal()
        self._say(f"getting {entry.id}…", failed=False)
        self._start(self._download, entry, self._signal)
        return True

    def cancel(self) -> None:
        """Stop the download under way; what it fetched is deleted."""
        if self._signal is not None:
            self._signal.set(User())

    def use(self, model_id: str, config: Config) -> Config:
        """`config` with `model_id` as its model of that kind; BadInput if it is not here."""
        return using(self.catalogue.find(model_id), config, self.store)

    async def _download(self, entry: Entry, signal: CancelSignal) -> None:
        from desktop.catalog.download import Progress, download  # huggingface_hub: only when downloading
        from desktop.catalog.hub import Cancelled

        loop, last = asyncio.get_running_loop(), [0.0]

        def progressed(p: Progress) -> None:  # in the worker thread
            now = time.monotonic()
            if p.phase == "downloading" and now - last[0] < REDRAW_S:
                return
            last[0] = now
            loop.call_soon_threadsafe(self._progressed, Fetching(p.model, p.phase, p.done, p.total))

        extra = {} if self._free is None else {"free": self._free}
        try:
            await run_job(lambda stop: download(entry, self.store, stop, progressed, **extra), signal)
        except Cancelled:
            self._finish(f"the download of {entry.id} was cancelled; nothing was kept", failed=True)
            return
        except BadInput as error:  # offline, no space, a bad checksum, the Hub's refusal: one line each
            self._finish(str(error), failed=True)
            return
        self._progressed(Fetching(entry.id, "measuring", 1, 1))
        await self._measure(entry)

    async def _measure(self, entry: Entry) -> None:
        try:
            measured = await probe(entry, self.store.model_path(entry))
        except ModelError as error:
            self._finish(f"downloaded {entry.id}, but it will not load here: {error}", failed=True)
            return
        self.store.record_probe(entry, measured)
        self._finish(f"downloaded {entry.id} (checksums verified); measured here: {summary(entry, measured)}")

    def _progressed(self, fetching: Fetching) -> None:
        if self.fetching is not None:
            self.fetching = fetching
            self._changed()

    def _finish(self, message: str, *, failed: bool = False) -> None:
        self.fetching, self._signal = None, None
        self._say(message, failed=failed)

    def _say(self, message: str, *, failed: bool) -> None:
        self.message, self.failed = message.splitlines()[0] if message else "", failed
        self._changed()

    def _changed(self) -> None:
        self._listeners.publish(None)


def _size(mb: float) -> str:
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB"
