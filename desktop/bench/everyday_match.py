"""Lenient answer matching for the everyday questions: a spoken reply says "fifty-six", "56" or "the twenty-first";
each reads as the same digits, so one accepted form covers them all.

Reply and accepted forms are both lowered into words, number words into digits ("a hundred and twenty" → 120,
"twenty twenty-five" → 20 25, "third" and "3rd" → 3, "1,000" → 1000), and a form is found when its words stand in
a row in the reply's (so "56" is not found in "156", nor "rome" in "romeo").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
          "nineteen")  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINAL_UNITS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
_ORDINAL_TEENS = ("tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
                  "seventeenth", "eighteenth", "nineteenth")  # fmt: skip
_ORDINAL_TENS = ("twentieth", "thirtieth", "fortieth", "fiftieth", "sixtieth", "seventieth", "eightieth",
                 "ninetieth")  # fmt: skip
# word → (value, kind, ordinal): an ordinal ends its number ("twenty-first" is 21, then a new number may start)
_NUMBER_WORDS: dict[str, tuple[int, str, bool]] = {
    **{w: (n, "unit", False) for n, w in enumerate(_UNITS)},
    **{w: (n + 10, "teen", False) for n, w in enumerate(_TEENS)},
    **{w: (10 * n + 20, "tens", False) for n, w in enumerate(_TENS)},
    **{w: (n, "unit", True) for n, w in enumerate(_ORDINAL_UNITS)},
    **{w: (n + 10, "teen", True) for n, w in enumerate(_ORDINAL_TEENS)},
    **{w: (10 * n + 20, "tens", True) for n, w in enumerate(_ORDINAL_TENS)},
    "hundred": (100, "scale", False),
    "thousand": (1000, "scale", False),
}
_TOKEN = re.compile(r"\d+(?::\d+)?|[a-z]+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_DIGIT_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")


def words(text: str) -> list[str]:
    """The text as lower-case words with every number in digits."""
    low = _DIGIT_ORDINAL.sub(r"\1", _THOUSANDS.sub("", text.lower().replace("\u2019", "'")))
    return list(_numbers(_TOKEN.findall(low.replace("'", ""))))


def holds(reply: str, accepted: Iterable[str]) -> bool:
    """The reply holds one of the accepted forms, read as `words` both."""
    said = words(reply)
    return any(_in_a_row(words(form), said) for form in accepted)


def _in_a_row(form: Sequence[str], said: Sequence[str]) -> bool:
    size = len(form)
    return size > 0 and any(list(said[i : i + size]) == list(form) for i in range(len(said) - size + 1))


class _Number:
    """A number being read word by word: `total` (thousands) + `small` (below a thousand)."""

    def __init__(self) -> None:
        self.total = self.small = 0
        self.started = self.last_tens = False

    def continues(self, value: int, kind: str) -> bool:
        """Whether the word goes on this number ("fifty six") rather than start the next ("twenty twenty")."""
        if not self.started or kind == "scale":
            return True
        if kind == "unit":
            return self.small % 100 == 0 or (self.last_tens and self.small % 10 == 0)
        return self.small % 100 == 0

    def add(self, value: int, kind: str) -> None:
        if kind == "scale" and value == 1000:
            self.total, self.small = self.total + max(self.small, 1) * 1000, 0
        elif kind == "scale":
            self.small = max(self.small, 1) * value
        else:
            self.small += value
        self.started, self.last_tens = True, kind == "tens"

    def digits(self) -> str:
        return str(self.total + self.small)


def _numbers(tokens: Sequence[str]) -> Iterable[str]:
    """Runs of number words become digits; "and" inside a number and "a" before a hundred or a thousand go."""
    number: _Number | None = None
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token == "a" and following in ("hundred", "thousand") and number is None:
            continue
        if token == "and" and number is not None and following in _NUMBER_WORDS:
            continue
        found = _NUMBER_WORDS.get(token)
        if found is None:
            if number is not None:
                yield number.digits()
                number = None
            yield token
            continue
        value, kind, ordinal = found
        if number is not None and not number.continues(value, kind):
            yield number.digits()
            number = None
        number = number or _Number()
        number.add(value, kind)
        if ordinal:
            yield number.digits()
            number = None
    if number is not None:
        yield number.digits()
