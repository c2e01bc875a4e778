"""`parley models list|get|use|remove`: the catalogue on the command line. Bad input, a full disk, a corrupt file
or no network is one line and exit status 2; Ctrl-C during a download keeps nothing."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop.catalog.choice import in_use, using
from desktop.catalog.entries import KIND_NAMES, KINDS, SPEED_UNITS, Catalogue, Entry, load_catalogue
from desktop.catalog.probe import probe, summary
from desktop.catalog.store import Store, models_dir
from desktop.config import Config, default_path, load
from desktop.errors import BadInput

if TYPE_CHECKING:
    from desktop.catalog.download import Progress

EXIT_OK, EXIT_BAD_INPUT, EXIT_CANCELLED = 0, 2, 130


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    models = commands.add_parser("models", help="list, download, use and remove models (Hugging Face)")
    models.add_argument("--catalogue", type=Path, metavar="FILE", help="a catalogue TOML instead of the built-in one")
    models.add_argument("--config", type=Path, metavar="FILE", help="a config TOML instead of the user config")
    verbs = models.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", help="the recommended models, what they cost and which are here")
    listing.add_argument("--kind", choices=KINDS)
    get = verbs.add_parser("get", help="download a model (nothing downloads unless you ask)")
    get.add_argument("id")
    get.add_argument("--use", action="store_true", help="and use it from the next turn on")
    get.add_argument("--no-probe", action="store_true", help="skip measuring its speed afterwards")
    verbs.add_parser("use", help="use a downloaded (or bundled) model").add_argument("id")
    verbs.add_parser("remove", help="delete a downloaded model").add_argument("id")


def run_models(args: argparse.Namespace) -> int:
    catalogue = load_catalogue(args.catalogue)
    store = Store(models_dir())
    if args.verb == "list":
        print(table(catalogue, store, load(args.config), args.kind))
        return EXIT_OK
    entry = catalogue.find(args.id)
    if args.verb == "get":
        return _get(entry, catalogue, store, args)
    if args.verb == "use":
        _use(entry, store, args.config)
        return EXIT_OK
    if in_use(entry, load(args.config), store):
        bundled = catalogue.bundled(entry.kind).id
        raise BadInput(f"{entry.id} is in use; switch first (`parley models use {bundled}`), then remove it")
    store.remove(entry)
    print(f"removed {entry.id}")
    return EXIT_OK


def table(catalogue: Catalogue, store: Store, config: Config, kind: str | None = None) -> str:
    lines = []
    for each in [k for k in KINDS if kind in (None, k)]:
        lines.append(f"{KIND_NAMES[each]}:")
        for entry in catalogue.of_kind(each):
            mark = "*" if in_use(entry, config, store) else " "
            cost = f"{_size(entry.size_mb):>7} download, {_size(entry.ram_mb):>7} RAM"
            lines.append(f" {mark} {entry.id:<22} {cost}  {speed(catalogue, store, entry):<34} "
                         f"{_state(entry, store):<11} {entry.licence}")  # fmt: skip
    return "\n".join([*lines, "(* = in use; speeds are estimated for 2 cores until measured here)"])


def speed(catalogue: Catalogue, store: Store, entry: Entry) -> str:
    receipt = store.receipt(entry)
    if receipt is not None and receipt.probe:
        return f"measured: {summary(entry, receipt.probe)}"[:34]
    expected = catalogue.expected_speed(entry)
    if expected is None:
        return "speed unknown"
    shown = f"{expected:.0f}" if entry.kind == "llm" else f"{expected:.2f}"
    return f"{'' if entry.bundled else '~'}{shown} {SPEED_UNITS[entry.kind]}"


def _state(entry: Entry, store: Store) -> str:
    return "bundled" if entry.bundled else "downloaded" if store.installed(entry) else ""


def _size(mb: float) -> str:
    return f"{mb / 1000:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB"


def _get(entry: Entry, catalogue: Catalogue, store: Store, args: argparse.Namespace) -> int:
    from desktop.catalog.download import discard, download  # huggingface_hub: only when downloading

    print(f"{entry.id}: {entry.name}, about {_size(entry.size_mb)}, licence: {entry.licence}")
    shown = _Shown(sys.stderr.isatty())
    try:
        folder = download(entry, store, threading.Event(), shown.progress)
    except KeyboardInterrupt:
        discard(entry, store)
        shown.end()
        print(f"parley: the download of {entry.id} was cancelled; nothing was kept", file=sys.stderr)
        return EXIT_CANCELLED
    shown.end()
    print(f"downloaded {entry.id} to {folder} (checksums verified)")
    if not args.no_probe:
        measured = asyncio.run(probe(entry, store.model_path(entry)))
        store.record_probe(entry, measured)
        print(f"measured here: {summary(entry, measured)}")
    if args.use:
        _use(entry, store, args.config)
    else:
        print(f"use it with `parley models use {entry.id}` (or Settings -> Models)")
    return EXIT_OK


def _use(entry: Entry, store: Store, config_file: Path | None) -> None:
    from desktop.model.settings_io import SettingsError, save

    fresh = config_file is not None and not config_file.exists()  # `use` may write the first settings file
    config = using(entry, Config() if fresh else load(config_file), store)
    path = config_file or (Path(os.environ["PARLEY_CONFIG"]) if os.environ.get("PARLEY_CONFIG") else default_path())
    try:
        save(config, path)
    except SettingsError as error:
        raise BadInput(str(error)) from None
    print(f"the {KIND_NAMES[entry.kind]} is now {entry.id} (saved to {path}; a running window: Settings -> Models)")


class _Shown:
    """Download progress on stderr: one line redrawn on a terminal, a line per tenth otherwise."""

    def __init__(self, tty: bool) -> None:
        self._tty, self._last, self._tenth = tty, 0.0, -1

    def progress(self, p: Progress) -> None:
        if p.phase != "downloading" or not p.total:
            return
        tenth = 10 * p.done // p.total
        now = time.monotonic()
        if self._tty and now - self._last > 0.2:
            self._last = now
            print(f"\r{p.model}: {p.done / 1e6:.0f} of {p.total / 1e6:.0f} MB ({100 * p.done // p.total}%)",
                  end="", file=sys.stderr)  # fmt: skip
        elif not self._tty and tenth > self._tenth:
            self._tenth = tenth
            print(f"{p.model}: {10 * tenth}% of {p.total / 1e6:.0f} MB", file=sys.stderr)

    def end(self) -> None:
        if self._tty:
            print(file=sys.stderr)
