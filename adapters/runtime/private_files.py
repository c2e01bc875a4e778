"""Conversation text is private: the files that hold it are 0600, the folders Parley makes for them 0700.

Shared by every layer that writes such a file (the journal, notes, output WAVs, reports). A folder that
already exists is left as it is unless the caller owns it (`tighten=True`): `--out /tmp` must not turn
/tmp private. A file we write to is always made 0600, even when an older version created it 0644.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dir(path: Path, *, tighten: bool = False) -> Path:
    """Create `path` and any missing parents as 0700; `tighten` also makes an existing `path` 0700."""
    missing: list[Path] = []
    walk = path
    while not walk.exists():
        missing.append(walk)
        if walk.parent == walk:
            break
        walk = walk.parent
    for folder in reversed(missing):
        folder.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        os.chmod(folder, PRIVATE_DIR)  # mkdir's mode is masked by the umask
    if tighten and not missing:
        os.chmod(path, PRIVATE_DIR)
    return path


def open_private(path: Path, mode: str = "ab") -> IO[bytes]:
    """Open a binary file for writing ("ab" or "wb"), created 0600 and made 0600 if it was not."""
    if mode not in ("ab", "wb"):
        raise ValueError(f"open_private writes only: mode 'ab' or 'wb', not {mode!r}")
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "ab" else os.O_TRUNC)
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE)
    try:
        if hasattr(os, "fchmod"):  # POSIX; Windows keeps files private through the user profile's ACLs
            os.fchmod(fd, PRIVATE_FILE)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def write_private_text(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8), readable by its owner only: all of it or, if anything fails (a full disk),
    the file as it was."""
    data = text.encode("utf-8")  # before the file exists: text that cannot be encoded leaves nothing behind
    with replacing(path) as handle:
        handle.write(data)


@contextmanager
def replacing(path: Path) -> Iterator[IO[bytes]]:
    """A private file written under a temporary name and renamed onto `path` once whole; on any failure the
    temporary file is removed and `path` is left as it was (never half a file)."""
    temporary = path.with_name(f".{path.name}.partial")
    try:
        with open_private(temporary, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from error  # named as the file the caller wrote
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def append_private_text(path: Path, text: str) -> None:
    """Append `text` (UTF-8) to `path`, creating it (and its folders) private."""
    data = text.encode("utf-8")
    private_dir(path.parent)
    with open_private(path, "ab") as handle:
        handle.write(data)
