"""Write the configuration back to its TOML file (desktop.config reads it). Never holds the API key.

The file is flat (sections of strings, numbers and booleans), so a small writer suffices;
`load(save(config))` gives the same config back, which the tests check with awkward strings.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from adapters.runtime.private_files import private_dir, write_private_text
from desktop.config import Config, ConfigError, env_values, load


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


def save(config: Config, path: Path, env: Mapping[str, str] = os.environ) -> None:
    """Write atomically: a crash mid-save leaves the old file, never half a file. A symbolic link is followed (the
    file it points to is replaced, the link stays), and a setting the environment overrides (PARLEY_LLM_MODEL, ...)
    keeps the file's own value unless it was changed: the environment is never written into the file."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    text = to_toml(_file_values(config, target, env))
    temporary = target.with_name(target.name + ".tmp")
    try:
        private_dir(target.parent)
        write_private_text(temporary, text)  # 0600: a base URL may carry a user:password
        os.replace(temporary, target)
    except UnicodeEncodeError:
        raise SettingsError("a setting holds characters that cannot be saved as UTF-8; retype it") from None
    except OSError as error:
        raise SettingsError(f"{path}: cannot be written ({error.strerror}); check the folder's permissions") from None


def _file_values(config: Config, path: Path, env: Mapping[str, str]) -> Config:
    """`config` with each setting that still holds the environment's override put back to the file's value."""
    try:
        overrides = env_values(env)
        on_file = load(path, env={}) if path.exists() else Config()
    except ConfigError:
        return config  # a broken file or variable: what the person saw and saved is what is written
    for (section, key), value in overrides.items():
        values = getattr(config, section)
        if getattr(values, key) == value:
            kept = replace(values, **{key: getattr(getattr(on_file, section), key)})
            config = replace(config, **{section: kept})
    return config
