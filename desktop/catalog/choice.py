"""Which catalogue model the configuration uses, and the configuration that uses another: a model is named by its
path in [llm] local_model_path, [speech] asr_model_path or [speech] voice_path; an empty path is the bundled one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from desktop.catalog.entries import Catalogue, Entry
from desktop.catalog.store import Store
from desktop.config import Config
from desktop.errors import BadInput


def configured_path(config: Config, kind: str) -> str:
    if kind == "llm":
        return config.llm.local_model_path
    return config.speech.asr_model_path if kind == "asr" else config.speech.voice_path


def in_use(entry: Entry, config: Config, store: Store) -> bool:
    """Whether `config` speaks, listens or thinks with `entry` (an LLM only while the embedded provider is chosen)."""
    if entry.kind == "llm" and config.llm.provider != "local":
        return False
    path = configured_path(config, entry.kind)
    if entry.bundled:
        return not path
    return bool(path) and Path(path).expanduser().resolve() == store.model_path(entry).resolve()


def current(catalogue: Catalogue, config: Config, store: Store, kind: str) -> Entry | None:
    """The catalogue model of `kind` the configuration uses (None: a file of the person's own, or another provider)."""
    return next((e for e in catalogue.of_kind(kind) if in_use(e, config, store)), None)


def using(entry: Entry, config: Config, store: Store) -> Config:
    """`config` with `entry` as its model of that kind (the embedded provider for an LLM); BadInput if it is not
    downloaded."""
    if not store.installed(entry):
        raise BadInput(f"{entry.id} is not downloaded; get it first with `parley models get {entry.id}`")
    path = "" if entry.bundled else str(store.model_path(entry))
    if entry.kind == "llm":
        return replace(config, llm=replace(config.llm, provider="local", local_model_path=path))
    if entry.kind == "asr":
        return replace(config, speech=replace(config.speech, asr_model_path=path))
    return replace(config, speech=replace(config.speech, voice_path=path))
