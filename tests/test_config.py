"""Configuration: file, environment and flags; every bad value is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.config import Config, ConfigError, load, with_llm


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_defaults_when_there_is_no_file(tmp_path: Path) -> None:
    assert load(tmp_path / "absent.toml", env={}) == Config()


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    path = _write(tmp_path, '[llm]\nprovider = "openai"\nmodel = "from-file"\nretries = 5\n')
    config = load(path, env={"PARLEY_LLM_MODEL": "from-env"})
    assert (config.llm.provider, config.llm.model, config.llm.retries) == ("openai", "from-env", 5)
    assert with_llm(config, model="from-flag", retries=None).llm.model == "from-flag"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[llm\nprovider=", "not valid TOML"),
        ("[lmm]\nprovider='local'\n", "unknown section [lmm]"),
        ("[llm]\nprovidr='local'\n", "unknown key 'providr'"),
        ("[llm]\nretries='many'\n", "expected int"),
        ("[llm]\nprovider='gpt'\n", "use 'local' or 'openai'"),
        ("[llm]\nprovider='openai'\nbase_url='ftp://x'\n", "must start with http"),
        ("[audio]\nvad_threshold=3\n", "between 0 and 1"),
        ("[llm]\nmax_tokens=0\n", "max_tokens must be >= 1"),
        ("[llm]\nmax_reply_s=-5\n", "max_reply_s > 0"),
    ],
)
def test_a_malformed_config_is_one_line_naming_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(path, env={})
    message = str(caught.value)
    assert needle in message
    assert "\n" not in message
    assert str(path) in message


def test_the_summary_holds_no_secret(tmp_path: Path) -> None:
    summary = load(tmp_path / "none.toml", env={"PARLEY_LLM_API_KEY": "sk-secret"}).summary()
    assert "sk-secret" not in repr(summary)


def test_reply_limits_are_configurable(tmp_path: Path) -> None:
    path = _write(tmp_path, "[llm]\nmax_tokens = 120\nmax_reply_s = 45\n")
    assert (load(path, env={}).llm.max_tokens, load(path, env={}).llm.max_reply_s) == (120, 45.0)
    assert (Config().llm.max_tokens, Config().llm.max_reply_s) == (300, 90.0)


def test_the_summary_redacts_credentials_in_the_base_url(tmp_path: Path) -> None:
    path = _write(tmp_path, '[llm]\nprovider = "openai"\nbase_url = "https://me:pw@h/v1?api-key=k1&x=1"\n')
    assert load(path, env={}).summary()["llm_base_url"] == "https://[redacted]@h/v1?api-key=[redacted]&x=1"
