"""The bundled SmolLM2 re-encoded once from Q4_1 to Q8_0, because a voice turn waits on prompt reading.

Q8_0 reads a prompt faster than Q4_1 (llama.cpp's Q8_0 dot products are its fastest on x86), while decoding slows
a little and stays far faster than speech (figures: docs/decisions/0002). Q8_0 holds the Q4_1 values to 8 bits,
so the answers stay those of the shipped model (greedy replies agree to their first words). The
copy is made with llama.cpp's own quantizer (nothing downloaded) into the user's cache, named by the source's size
and mtime, written whole or not at all; if it cannot be made, the shipped file is used as it is.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from pathlib import Path

import llama_cpp
import platformdirs

log = logging.getLogger(__name__)
SOURCE_SUFFIX = ".Q4_1.gguf"
_LOCK = threading.Lock()  # the LLM and the words model load in different workers: one copy is made, once


def cache_dir() -> Path:
    """Where the copy lives: PARLEY_MODEL_CACHE, or the user's cache folder."""
    override = os.environ.get("PARLEY_MODEL_CACHE")
    return Path(override) if override else Path(platformdirs.user_cache_dir("parley")) / "models"


def prompt_ready(source: Path, cache: Path | None = None) -> Path:
    """Blocking (about half a second, once): the Q8_0 copy of the Q4_1 `source`, or `source` when it is no Q4_1
    file or no copy can be made (a read-only or full disk: logged, the turn goes on with the slower file)."""
    if not source.name.endswith(SOURCE_SUFFIX):
        return source
    folder = cache if cache is not None else cache_dir()
    stat = source.stat()
    stem = source.name[: -len(SOURCE_SUFFIX)]
    target = folder / f"{stem}.Q8_0-{stat.st_size}-{stat.st_mtime_ns}.gguf"
    with _LOCK:
        if target.is_file():
            return target
        try:
            _convert(source, target)
        except (OSError, RuntimeError) as error:
            log.warning("using %s as shipped (prompt reading ~1.4x slower): %s", source.name, error)
            return source
        _forget_older(folder, stem, keep=target)
    return target


def _convert(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.partial")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True
    params.nthread = 1
    native_log = logging.getLogger("llama-cpp-python")  # its log callback prints a line per tensor below ERROR
    level = native_log.level
    native_log.setLevel(logging.ERROR)
    try:
        code = llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), ctypes.byref(params))
        if code != 0 or not partial.is_file():
            raise RuntimeError(f"llama.cpp could not re-encode {source.name} (code {code})")
        os.replace(partial, target)
    finally:
        native_log.setLevel(level)
        partial.unlink(missing_ok=True)


def forget_copy(copy: Path) -> None:
    """A copy llama.cpp would not load (a damaged disk): gone, to be made again on the next load."""
    log.warning("the re-encoded model %s did not load; using the shipped file", copy)
    copy.unlink(missing_ok=True)


def _forget_older(folder: Path, stem: str, *, keep: Path) -> None:
    """Copies made from an earlier install of the model are never read again."""
    for old in folder.glob(f"{stem}.Q8_0-*.gguf"):
        if old != keep:
            old.unlink(missing_ok=True)
