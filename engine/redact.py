"""Keep credentials out of the record: inside string values only, and only for values long enough to be secrets.

A plain replace over a whole JSON line once turned `"text"` into `"te[redacted]t"` (key `x`) and `"seq":1` into
`"seq":[redacted]` (key `1`): the line stopped being the event, or stopped being JSON. Placeholder keys that local
servers take (`x`, `1`, `ollama`, `lm-studio`) protect nothing, and censoring them out of the person's own words
would only show where the key appears. So field names, numbers and booleans are never touched, and a value
shorter than MIN_SECRET_CHARS is not treated as a secret at all (every provider's real keys are far longer).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 12


def is_secret(value: str) -> bool:
    """Whether `value` is long enough to be a credential worth hiding (shorter ones are placeholders)."""
    return len(value.strip()) >= MIN_SECRET_CHARS


class Redactor:
    """Replaces each secret inside the string values of an event (nested dicts and lists too)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = tuple(sorted({s.strip() for s in secrets if is_secret(s)}, key=len, reverse=True))

    def text(self, value: str) -> str:
        for secret in self._secrets:
            value = value.replace(secret, REDACTED)
        return value

    def value(self, value: Any) -> Any:
        """`value` with every secret in its strings redacted; its shape (keys, numbers, nesting) unchanged."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value
