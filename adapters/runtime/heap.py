"""Hand the heap pages glibc holds free back to the system after work that freed a lot of them.

glibc keeps freed memory for reuse, tens of MB after a long Piper phrase. malloc_trim itself is quick, but the
pages it returns are faulted in again by whatever allocates next, which slowed the next Whisper pass (figures:
docs/decisions/0002), so it is called only where the memory is large and the next use far off: after a long
phrase (it plays for seconds), and once an utterance is over (the next pass comes when the user speaks again,
audio/turns/ears.py). The fault cost moves to the next utterance's first pass, which usually runs while the
user is still speaking.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable


def give_back_free_heap() -> None:
    """Call from a worker thread, never the event loop (it walks the heap)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim (it returns free heap pages to the system); None elsewhere (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim  # type: ignore[no-any-return]
