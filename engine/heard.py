"""Turn a playback report into the exact words the listener heard (SPEC §6)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.speech import SpokenSegment

ROUNDING_MS = 1.0  # clock arithmetic may leave a fully played segment a hair short


@dataclass(frozen=True)
class Heard:
    text: str
    heard_ms: float
    complete: bool


def heard_of(segments: Iterable[SpokenSegment]) -> Heard:
    """Whole segments that played out, then the words of the first cut segment that were mostly played.

    A word counts as heard once more than half of its audio reached the listener.
    Playback is sequential, so nothing after the first cut segment was heard.
    """
    parts: list[str] = []
    heard_ms = 0.0
    for segment in sorted(segments, key=lambda s: s.index):
        heard_ms += segment.played_ms
        if segment.played_ms >= segment.duration_ms - ROUNDING_MS:
            parts.append(segment.text)
            continue
        parts.append(segment.text[: _heard_chars(segment)])
        return Heard("".join(parts).strip(), heard_ms, complete=False)
    return Heard("".join(parts).strip(), heard_ms, complete=True)


def _heard_chars(segment: SpokenSegment) -> int:
    end = 0
    for word in segment.words:
        if segment.played_ms * 2 <= word.start_ms + word.end_ms:
            break
        end = word.end
    return end
