"""The API key: read from PARLEY_LLM_API_KEY or the OS keyring, stored only in the keyring, shown only masked."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import keyring
from keyring.backends import fail
from keyring.errors import KeyringError, PasswordDeleteError

from adapters.llm.secret import ENV_VAR, KEYRING_SERVICE, KEYRING_USERNAME, Secret
from engine.redact import Redactor


class KeyringUnavailable(Exception):
    """There is no usable OS keyring; the key must come from the environment instead."""


@dataclass(frozen=True)
class StoredKey:
    secret: Secret
    source: Literal["env", "keyring"]

    def scrub(self, text: str) -> str:
        """`text` with this key taken out, as the journal writes it."""
        return Redactor([self.secret.reveal()]).text(text)


class KeyStore:
    def __init__(self, env: Mapping[str, str] = os.environ) -> None:
        self._env = env

    def available(self) -> bool:
        return not isinstance(keyring.get_keyring(), fail.Keyring)

    def load(self) -> StoredKey | None:
        """The environment wins over the keyring; a broken keyring or malformed key means none."""
        from_env = self._env.get(ENV_VAR, "").strip()
        if from_env:
            return _stored(from_env, "env")
        try:
            value = keyring.get_password(KEYRING_SERVICE, KEYRING_USERNAME)
        except KeyringError:
            return None
        return _stored(value, "keyring") if value else None

    def save(self, value: str) -> None:
        """Validate and store; raises ValueError for a malformed key, KeyringUnavailable without a keyring."""
        secret = Secret(value)
        if not self.available():
            raise KeyringUnavailable(f"no OS keyring is available; set {ENV_VAR} in the environment instead")
        try:
            keyring.set_password(KEYRING_SERVICE, KEYRING_USERNAME, secret.reveal())
        except KeyringError as error:
            raise KeyringUnavailable(f"the OS keyring refused the key ({type(error).__name__})") from None

    def forget(self) -> None:
        try:
            keyring.delete_password(KEYRING_SERVICE, KEYRING_USERNAME)
        except PasswordDeleteError:
            pass  # nothing was stored
        except KeyringError as error:
            raise KeyringUnavailable(f"the OS keyring refused to forget the key ({type(error).__name__})") from None


def _stored(value: str, source: Literal["env", "keyring"]) -> StoredKey | None:
    try:
        return StoredKey(Secret(value), source)
    except ValueError:
        return None


def masked(secret: Secret) -> str:
    """At most the first three and last four characters, and only of a long key."""
    value = secret.reveal()
    if len(value) < 16:
        return "••••"
    return f"{value[:3]}…{value[-4:]}"


def describe(stored: StoredKey | None) -> str:
    if stored is None:
        return "No API key set"
    where = "stored in keyring" if stored.source == "keyring" else f"from {ENV_VAR}"
    return f"{masked(stored.secret)} ({where})"
