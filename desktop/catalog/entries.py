"""The catalogue of recommended models (catalog.toml in this package): what each is, where it comes from, what it
costs in disk and memory, and how fast it should be here.

A model is an LLM (one GGUF file), a Whisper model (a CTranslate2 folder) or a Piper voice (an .onnx and its
.onnx.json); the bundled ones name the package that ships them and are never downloaded.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from desktop.errors import BadInput

Kind = Literal["llm", "asr", "voice"]
KINDS: tuple[Kind, ...] = ("llm", "asr", "voice")
KIND_NAMES = {"llm": "language model", "asr": "speech recognition", "voice": "voice"}
SPEED_UNITS = {"llm": "tokens/s", "asr": "x real time", "voice": "x real time"}


class CatalogueError(BadInput):
    """The catalogue file is malformed, or a model id is not in it; one line naming which and the fix."""


@dataclass(frozen=True)
class Entry:
    """One model the catalogue offers."""

    id: str
    kind: Kind
    name: str
    size_mb: float
    ram_mb: float
    licence: str
    language: str
    repo: str = ""
    revision: str = "main"
    files: tuple[str, ...] = ()  # paths in the repo; stored side by side under their base names
    sha256: dict[str, str] = field(default_factory=dict)  # a pinned checksum by base name (else the Hub's)
    bundled: str = ""  # the package that ships it
    speed: float | None = None  # measured for the bundled model: tokens/s (llm) or real-time factor

    @property
    def names(self) -> tuple[str, ...]:
        """The files' base names, as they are stored."""
        return tuple(PurePosixPath(path).name for path in self.files)

    @property
    def multilingual(self) -> bool:
        return self.language == "multi"


@dataclass(frozen=True)
class Catalogue:
    entries: tuple[Entry, ...]

    def find(self, model_id: str) -> Entry:
        found = next((e for e in self.entries if e.id == model_id), None)
        if found is None:
            stem = re.match(r"[a-z]*", model_id.lower())
            close = [e.id for e in self.entries if stem and stem[0] and e.id.lower().startswith(stem[0])][:4]
            like = f" (did you mean {', '.join(close)}?)" if close else ""
            raise CatalogueError(f"no model {model_id!r} in the catalogue{like}; see `parley models list`")
        return found

    def of_kind(self, kind: str) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries if e.kind == kind)

    def bundled(self, kind: str) -> Entry:
        return next(e for e in self.entries if e.kind == kind and e.bundled)

    def expected_speed(self, entry: Entry) -> float | None:
        """Tokens/s or the real-time factor to expect on a 2-core computer: the bundled model's measured speed,
        scaled by size (decoding and inference read every weight once per token or frame)."""
        if entry.speed is not None:
            return entry.speed
        reference = self.bundled(entry.kind)
        if reference.speed is None:
            return None
        ratio = entry.size_mb / reference.size_mb
        return round(reference.speed / ratio, 1) if entry.kind == "llm" else round(reference.speed * ratio, 2)


def load_catalogue(path: Path | None = None) -> Catalogue:
    """The catalogue shipped in this package, or the one at `path` (a test's)."""
    where = str(path) if path is not None else "the built-in catalogue"
    try:
        source = path or resources.files(__package__).joinpath("catalog.toml")
        raw = tomllib.loads(source.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CatalogueError(f"{where} cannot be read ({error}); reinstall Parley") from None
    entries = tuple(_entry(item, where) for item in raw.get("model", []))
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise CatalogueError(f"{where}: a model id appears twice; ids must be unique")
    missing = [k for k in KINDS if not any(e.kind == k and e.bundled for e in entries)]
    if missing:
        raise CatalogueError(f"{where}: no bundled model of kind {', '.join(missing)}; every kind needs its default")
    return Catalogue(entries)


def _entry(item: dict[str, Any], where: str) -> Entry:
    try:
        entry = Entry(**{**item, "files": tuple(item.get("files", ())), "sha256": dict(item.get("sha256", {}))})
    except TypeError as error:
        raise CatalogueError(f"{where}: model {item.get('id', '?')!r} is malformed ({error})") from None
    if entry.kind not in KINDS:
        raise CatalogueError(f"{where}: model {entry.id!r} has kind {entry.kind!r}; use one of {', '.join(KINDS)}")
    if not entry.bundled and not (entry.repo and entry.files):
        raise CatalogueError(f"{where}: model {entry.id!r} names neither a bundled package nor a repo and files")
    if len(set(entry.names)) != len(entry.names):
        raise CatalogueError(f"{where}: model {entry.id!r} has two files of the same name")
    return entry
