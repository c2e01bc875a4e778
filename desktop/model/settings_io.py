"""Write the configuration back to its TOML file (desktop.config reads it). Never holds the API key.

The file is flat (sections of strings, numbers and booleans), so a small writer suffices;
`load(save(config))` gives the same config back, which the tests check with awkward strings.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from adapters.contract.private_files import private_dir, write_private_text
from desktop.config import Config


class SettingsError(Exception):
    """The settings could not be written; the message names the file and the fix."""


def to_toml(config: Config) -> str:
    lines = ["# Parley settings (the API key is never stored here: it lives in the OS keyring)"]
    for section in fields(config):
        lines.append(f"\n[{section.name}]")
        values = getattr(config, section.name)
        lines += [f"{f.name} = {_value(getattr(values, f.name))}" for f in fields(values)]
    return "\n".join(lines) + "\n"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SettingsError(f"cannot save the number {value!r}; use a finite value")
        return repr(value)
    if isinstance(value, str):
        # JSON escapes quotes, backslashes and C0 controls the way TOML basic strings do; DEL it leaves alone
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    raise SettingsError(f"cannot save a {type(value).__name__} setting")


def save(config: Config, path: Path) -> None:
    """Write atomically: a crash mid-save leaves the old file, never half a file."""
    text = to_toml(config)
    temporary = path.with_name(path.name + ".tmp")
    try:
        private_dir(path.parent)
        write_private_text(temporary, text)  # 0600: a base URL may carry a user:password
        os.replace(temporary, path)
    except UnicodeEncodeError:
        raise SettingsError("a setting holds characters that cannot be saved as UTF-8; retype it") from None
    except OSError as error:
        raise SettingsError(f"{path}: cannot be written ({error.strerror}); check the folder's permissions") from None
