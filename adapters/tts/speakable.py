"""What of a reply is read aloud: markdown markup and emoji are not spoken, the words are.

The mapping is deletion-only: every source character is kept, dropped, or (emoji) replaced by
one space. So the spoken text is the source with some characters removed, `origin[i]` is the
source index of spoken character `i`, and a spoken word `[s, e)` maps back to the source slice
`[origin[s], origin[e - 1] + 1)` — which is how word timings refer to the source text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

_KEEP, _DROP, _SPACE = 0, 1, 2
_WORD = re.compile(r"\S+")

# (pattern, the groups whose characters are not spoken); everything else in a match is kept.
_MARKUP: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...] = (
    (re.compile(r"^([ \t]*```[^\n]*)$", re.M), (1,)),  # code fence lines (with their language tag)
    (re.compile(r"^([ \t]*([-*_])(?:[ \t]*\2){2,}[ \t]*)$", re.M), (1,)),  # horizontal rules
    (re.compile(r"^[ \t]{0,3}(#{1,6}[ \t]+)", re.M), (1,)),  # heading markers
    (re.compile(r"^[ \t]*((?:>[ \t]?)+)", re.M), (1,)),  # block quotes
    (re.compile(r"^[ \t]*([-*+][ \t]+)", re.M), (1,)),  # list bullets (numbered lists are read: "1." is "one")
    (re.compile(r"(!?\[)[^\]\n]*(\]\([^)\s]*(?:[ \t]+\"[^\"\n]*\")?\))"), (1, 2)),  # [text](url) -> text
    (re.compile(r"(\*\*|__|~~|`+)"), (1,)),  # bold, strike-through, inline code
    (re.compile(r"(?<![\w*])(\*)(?=[^\s*])|(?<=[^\s*])(\*)(?![\w*])"), (1, 2)),  # *emphasis*, not 2 * 3
    (re.compile(r"(?<![\w_])(_)(?=[^\s_])|(?<=[^\s_])(_)(?![\w_])"), (1, 2)),  # _emphasis_, not snake_case
)
_EMOJI_GLUE = {0x200D, 0xFE0E, 0xFE0F, 0x20E3}  # zero-width joiner, variation selectors, keycap


@dataclass(frozen=True)
class Speakable:
    """A source text and the text that is actually read aloud, with the spoken-to-source index map."""

    source: str
    spoken: str
    origin: tuple[int, ...]

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The source slice of spoken characters `[start, end)` (end > start)."""
        return self.origin[start], self.origin[end - 1] + 1

    def words(self) -> Iterator[tuple[int, int]]:
        """Whitespace-separated words of the spoken text, as spoken-text spans."""
        for match in _WORD.finditer(self.spoken):
            yield match.start(), match.end()

    def first_word_at(self) -> int:
        """Source index of the first spoken letter or digit (the length of the source when there is none)."""
        for index, char in enumerate(self.spoken):
            if char.isalnum():
                return self.origin[index]
        return len(self.source)

    @property
    def has_words(self) -> bool:
        return any(char.isalnum() for char in self.spoken)


def to_speakable(source: str) -> Speakable:
    """Strip markdown markup and emoji from `source`, remembering where each kept character came from."""
    actions = bytearray(len(source))
    for pattern, groups in _MARKUP:
        for match in pattern.finditer(source):
            for group in groups:
                start, end = match.span(group)
                actions[start:end] = bytes([_DROP]) * (end - start)
    for index, char in enumerate(source):
        if actions[index] == _KEEP and _is_emoji(char):
            actions[index] = _DROP if ord(char) in _EMOJI_GLUE or _is_modifier(char) else _SPACE
    return _apply(source, actions)


def _apply(source: str, actions: bytearray) -> Speakable:
    spoken: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(source):
        if actions[index] == _DROP:
            continue
        spoken.append(" " if actions[index] == _SPACE else char)
        origin.append(index)
    return Speakable(source, "".join(spoken), tuple(origin))


def _is_emoji(char: str) -> bool:
    code = ord(char)
    if code in _EMOJI_GLUE or _is_modifier(char):
        return True
    return code >= 0x2190 and unicodedata.category(char) == "So"  # keeps (c), (R), TM and the degree sign


def _is_modifier(char: str) -> bool:
    code = ord(char)
    return 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F  # skin tones, flag tags
