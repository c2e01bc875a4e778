"""Where downloaded models live and what is there: `<models>/<id>/` holds a model's files and its receipt
(parley-model.json: where it came from, each file's size and checksum, the speed measured here). A folder without
a receipt is not a model. Downloads in progress are under `<models>/.partial/<id>/` (see desktop.catalog.download).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from desktop.catalog.entries import Entry
from desktop.errors import BadInput

RECEIPT = "parley-model.json"
PARTIAL = ".partial"


@dataclass(frozen=True)
class Receipt:
    """What was downloaded, checked and measured, kept beside the files."""

    id: str
    repo: str
    revision: str
    commit: str
    files: dict[str, dict[str, Any]]  # base name -> {"size": int, "checksum": "sha256:..." or "git-sha1:..."}
    probe: dict[str, float] = field(default_factory=dict)  # the speed measured here (desktop.catalog.probe)

    def to_json(self) -> str:
        return json.dumps(vars(self), indent=2, sort_keys=True)


def models_dir(env: dict[str, str] | None = None) -> Path:
    """$PARLEY_MODELS_DIR, else `models` in Parley's user data folder."""
    from desktop.config import data_dir

    chosen = (os.environ if env is None else env).get("PARLEY_MODELS_DIR")
    return Path(chosen) if chosen else data_dir() / "models"


@dataclass(frozen=True)
class Store:
    root: Path

    def folder(self, entry: Entry) -> Path:
        return self.root / entry.id

    def partial(self, entry: Entry) -> Path:
        return self.root / PARTIAL / entry.id

    def receipt(self, entry: Entry) -> Receipt | None:
        """The installed model's receipt (None: not installed, or its receipt is unreadable)."""
        try:
            raw = json.loads((self.folder(entry) / RECEIPT).read_text(encoding="utf-8"))
            return Receipt(**raw)
        except (OSError, ValueError, TypeError):
            return None

    def installed(self, entry: Entry) -> bool:
        return bool(entry.bundled) or self.receipt(entry) is not None

    def model_path(self, entry: Entry) -> Path:
        """What the config names: the GGUF file, the Whisper folder, or the voice's .onnx."""
        if entry.bundled:
            raise ValueError(f"{entry.id} is bundled: the config names it by leaving the path empty")
        folder = self.folder(entry)
        if entry.kind == "asr":
            return folder
        suffix = ".gguf" if entry.kind == "llm" else ".onnx"
        return folder / next(name for name in entry.names if name.endswith(suffix))

    def record_probe(self, entry: Entry, probe: dict[str, float]) -> None:
        receipt = self.receipt(entry)
        if receipt is not None:
            _write(self.folder(entry) / RECEIPT, replace(receipt, probe=probe).to_json())

    def install(self, entry: Entry, staged: Path, receipt: Receipt) -> Path:
        """Move a staged, verified download into place in one rename (an older copy goes first)."""
        _write(staged / RECEIPT, receipt.to_json())
        target = self.folder(entry)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staged, target)
        return target

    def remove(self, entry: Entry) -> None:
        if entry.bundled:
            raise BadInput(f"{entry.id} is bundled with Parley and cannot be removed")
        if not self.folder(entry).exists():
            raise BadInput(f"{entry.id} is not downloaded; see `parley models list`")
        shutil.rmtree(self.folder(entry))


def _write(path: Path, text: str) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
