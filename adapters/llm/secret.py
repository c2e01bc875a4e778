"""The LLM API key: wrapped so that no repr, log line or message can show it by accident."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import unquote_plus, urlsplit, urlunsplit

ENV_VAR = "PARLEY_LLM_API_KEY"
KEYRING_SERVICE = "parley"
KEYRING_USERNAME = "llm-api-key"
_MASK = "Secret('***')"
REDACTED = "[redacted]"  # what the journal's redactor writes in place of the key


class Secret:
    """Holds a credential; only `reveal()` gives it out, and only for the Authorization header."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        value = value.strip()
        if not value:
            raise ValueError("an API key must not be empty")
        if not value.isascii() or not value.isprintable() or any(ch.isspace() for ch in value):
            # Never echo the value: an HTTP library would otherwise quote it in its own error.
            raise ValueError("an API key must be printable ASCII without spaces")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return _MASK

    def __str__(self) -> str:
        return _MASK

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("a Secret is not picklable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))


class MalformedKey(ValueError):
    """The key found cannot be a key (a space or newline inside, say); the message names where it came from."""


def load_api_key(env: Mapping[str, str] = os.environ) -> Secret | None:
    """The key from PARLEY_LLM_API_KEY, else the OS keyring; None when neither has one. A malformed key raises
    MalformedKey, which never quotes the value."""
    from_env = env.get(ENV_VAR, "").strip()
    if from_env:
        return _checked(from_env, f"{ENV_VAR} in the environment", f"set {ENV_VAR} to the key alone, on one line")
    stored = _from_keyring()
    if not stored or not stored.strip():
        return None
    return _checked(stored, "the key in the OS keyring", "store it again in Settings")


def _checked(value: str, where: str, fix: str) -> Secret:
    try:
        return Secret(value)
    except ValueError as error:
        raise MalformedKey(f"{where} is not a usable API key ({error}); {fix}") from None


def _from_keyring() -> str | None:
    """A missing or broken keyring backend means "no key", never a crash at start-up."""
    import keyring
    from keyring.errors import KeyringError, NoKeyringError

    try:
        return keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
    except (NoKeyringError, KeyringError):
        return None


_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session|code", re.IGNORECASE)


def redact_url(url: str) -> str:
    """`url` fit for a journal, a log line or a label: user info and secret-looking query values redacted.

    `https://me:pw@host/v1?api-key=abc&api-version=2024-06-01` becomes
    `https://[redacted]@host/v1?api-key=[redacted]&api-version=2024-06-01`.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed IPv6 bracket: keep only what cannot hold a credential
        return url.split("?")[0].split("#")[0].rpartition("@")[2] or REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query, fragment = _redact_pairs(parts.query), _redact_pairs(parts.fragment)
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=fragment))


def _redact_pairs(query: str) -> str:
    """`name=value` pairs with a secret-looking name keep the name and lose the value; the rest stays as given."""
    if not query:
        return query
    pairs = []
    for pair in query.split("&"):
        name, sep, value = pair.partition("=")
        secret = sep and value and _SECRET_PARAM.search(unquote_plus(name))
        pairs.append(f"{name}={REDACTED}" if secret else pair)
    return "&".join(pairs)
