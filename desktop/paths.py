"""Why a path the user gave cannot be used, in words: checked at the boundary, before anything starts.

Each function returns None when the path is fine, or a short phrase ("is a directory, not a file") that
the caller puts into its own one-line message with the fix.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from adapters.runtime.private_files import private_dir


def file_problem(path: Path) -> str | None:
    """None if `path` is a readable regular file; otherwise what is wrong with it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:
        return _os_problem(error)
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def out_dir_problem(path: Path) -> str | None:
    """Create the output directory `path` if needed and prove a file can be written there; None if so."""
    try:
        if not stat.S_ISDIR(os.stat(path).st_mode):
            return "is an existing file, not a directory"
    except FileNotFoundError:
        if path.is_symlink():
            return "is a broken symbolic link"
    except OSError as error:
        return _os_problem(error)
    try:
        private_dir(path)  # 0700 when Parley creates it: the run's files hold the conversation
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        return f"cannot be written ({_os_problem(error)})"
    return None


def _os_problem(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "is a symbolic link loop"
    if error.errno == errno.ENOTDIR:
        return "lies under something that is not a directory"
    return (error.strerror or type(error).__name__).lower()
