"""What Parley prints goes to a terminal: no control character gets there (issue 38 item 9).

A reply (or a `--text`) holding OSC or CSI sequences once set the terminal's title, wrote its clipboard (OSC 52)
and cleared the screen through `parley run`'s report, and a carriage return forged report lines. Every C0 and C1
control but the newline and the tab, and the bidirectional overrides that reorder what is shown, are dropped
from everything the command line prints.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` without terminal controls (line breaks and tabs stay)."""
    return _UNPRINTABLE.sub("", text)


class _Printable:
    """A text stream that drops controls on their way to the real one; everything else is the real one's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def printable_output() -> Iterator[None]:
    """stdout and stderr without controls for the block (the originals back afterwards)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Printable(out), _Printable(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
