"""Configuration: file, environment and flags; every bad value is one clear line."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.config import Config, ConfigError, load, with_llm


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user config dir: the default config file is absent."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "parley" / "config.toml"


def test_defaults_when_there_is_no_file(no_user_config: Path) -> None:
    assert not no_user_config.exists()
    assert load(env={}) == Config()
    assert load(env={"PARLEY_CONFIG": ""}) == Config()


def test_the_default_file_is_read_when_present(no_user_config: Path) -> None:
    no_user_config.parent.mkdir(parents=True)
    no_user_config.write_text("[llm]\nretries = 7\n")
    assert load(env={}).llm.retries == 7


@pytest.mark.parametrize("kind", ["missing", "directory", "loop", "not utf-8"])
@pytest.mark.parametrize("named_by", ["--config", "PARLEY_CONFIG"])
def test_a_named_config_that_cannot_be_read_is_an_error(
    no_user_config: Path, tmp_path: Path, kind: str, named_by: str
) -> None:
    path = tmp_path / "named.toml"
    if kind == "directory":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path)
    elif kind == "not utf-8":
        path.write_bytes(b"[llm]\nmodel = '\xff'\n")
    with pytest.raises(ConfigError) as caught:
        load(path, env={}) if named_by == "--config" else load(env={"PARLEY_CONFIG": str(path)})
    message = str(caught.value)
    wording = {"missing": "does not exist", "directory": "is a directory", "loop": "is a symbolic link loop"}
    if kind == "not utf-8":
        assert "not UTF-8 text (byte 15); save the file as UTF-8" in message
    else:
        assert f"the config file {wording[kind]}" in message
        assert ("check the --config path" if named_by == "--config" else "fix or unset PARLEY_CONFIG") in message
    assert str(path) in message
    assert "\n" not in message


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
        ("[llm]\nprovider='gpt'\n", "use one of 'local', 'openai'"),
        ("[llm]\nprovider='openai'\nbase_url='ftp://x'\n", "must start with http"),
        ("[audio]\nvad_threshold=3\n", "vad_threshold = 3 is out of range; give a number > 0 and < 1"),
        ("[audio]\nvad_threshold=nan\n", "vad_threshold = nan is out of range"),
        ("[audio]\nmin_speech_ms=-5\n", "min_speech_ms = -5 is out of range; give a whole number of milliseconds"),
        ("[audio]\nmin_silence_ms=0\n", "min_silence_ms = 0 is out of range"),
        ("[audio]\nfalse_interruption_window_ms=-1\n", "false_interruption_window_ms = -1 is out of range"),
        ("[llm]\nidle_timeout=nan\n", "idle_timeout = nan is out of range; give a number of seconds > 0"),
        ("[llm]\nidle_timeout=inf\n", "idle_timeout = inf is out of range"),
        ("[llm]\nconnect_timeout=-inf\n", "connect_timeout = -inf is out of range"),
        ("[llm]\nconnect_timeout=0\n", "connect_timeout = 0 is out of range"),
        ("[llm]\nretries=-1\n", "retries = -1 is out of range; give a whole number >= 0"),
        ("[llm]\nretries=99999999999\n", "retries = 99999999999 is out of range"),
        ("llm = 5\n", "llm = 5 must be a table: write [llm]"),
        ("[llm]\nprovider='openai'\nbase_url='http://[::1/v1'\n", "is not a valid address"),
        ("[llm]\nprovider='openai'\nbase_url='https://'\n", "names no host"),
        ("audio = 'loud'\n", "audio = 'loud' must be a table"),
        ("[llm]\nmax_tokens=0\n", "max_tokens = 0 is out of range; give a whole number of tokens"),
        ("[llm]\nmax_reply_s=-5\n", "max_reply_s = -5 is out of range"),
        ("[audio]\nstatement_wait_ms=-1\n", "statement_wait_ms = -1 is out of range; give a whole number of millis"),
        ("[audio]\nmax_turn_wait_ms=100\n", "max_turn_wait_ms = 100 is out of range; give a whole number of millis"),
        ("[audio]\nturn_model='perhaps'\n", "turn_model: expected bool"),
        ("[llm]\nspeculative_requests=2\n", "speculative_requests: expected bool"),
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


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ({"idle_timeout": float("nan")}, "--idle-timeout nan is out of range; give a number of seconds > 0"),
        ({"idle_timeout": float("inf")}, "--idle-timeout inf is out of range"),
        ({"idle_timeout": 0.0}, "--idle-timeout 0 is out of range"),
        ({"retries": -1}, "--retries -1 is out of range; give a whole number >= 0 and <= 100, e.g. --retries 3"),
    ],
)
def test_a_bad_flag_is_named_as_the_flag(flags: dict[str, float], needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        with_llm(Config(), **flags)
    assert needle in str(caught.value)


def test_the_summary_holds_no_secret(no_user_config: Path) -> None:
    summary = load(env={"PARLEY_LLM_API_KEY": "sk-secret"}).summary()
    assert "sk-secret" not in repr(summary)


def test_reply_limits_are_configurable(tmp_path: Path) -> None:
    path = _write(tmp_path, "[llm]\nmax_tokens = 120\nmax_reply_s = 45\n")
    assert (load(path, env={}).llm.max_tokens, load(path, env={}).llm.max_reply_s) == (120, 45.0)
    assert (Config().llm.max_tokens, Config().llm.max_reply_s) == (300, 90.0)


def test_the_summary_redacts_credentials_in_the_base_url(tmp_path: Path) -> None:
    path = _write(tmp_path, '[llm]\nprovider = "openai"\nbase_url = "https://me:pw@h/v1?api-key=k1&x=1"\n')
    assert load(path, env={}).summary()["llm_base_url"] == "https://[redacted]@h/v1?api-key=[redacted]&x=1"


def test_the_end_of_turn_keys_and_the_speculative_opt_in_are_read_and_recorded(tmp_path: Path) -> None:
    text = "[audio]\nstatement_wait_ms = 0\nmax_turn_wait_ms = 3000\nturn_model = false\nmin_silence_ms = 600\n"
    config = load(_write(tmp_path, text + "[llm]\nspeculative_requests = true\n"), env={})
    assert (config.audio.statement_wait_ms, config.audio.max_turn_wait_ms) == (0, 3000)
    assert config.audio.turn_model is False
    assert config.audio.min_silence_ms == 600
    assert config.summary()["speculative_requests"] is True  # what may be sent to a provider is on the record
    assert load(env={"PARLEY_CONFIG": str(_write(tmp_path, ""))}).llm.speculative_requests is False


def test_a_device_may_be_given_by_its_index(tmp_path: Path) -> None:
    """Issue 38 item 10: `input_device = 3` (the README says an index is accepted) is read, not refused."""
    config = load(_write(tmp_path, "[audio]\ninput_device = 3\noutput_device = 0\n"), env={})
    assert (config.audio.input_device, config.audio.output_device) == ("3", "0")
    with pytest.raises(ConfigError, match="input_device"):
        load(_write(tmp_path, "[audio]\ninput_device = -1\n"), env={})
    with pytest.raises(ConfigError, match="input_device"):
        load(_write(tmp_path, "[audio]\ninput_device = true\n"), env={})


def test_the_summary_names_the_model_that_runs(tmp_path: Path) -> None:
    """The embedded provider's session/start named the remote default, gpt-4o-mini (issue 39)."""
    assert (Config().summary()["llm_model"], Config().summary()["llm_base_url"]) == ("SmolLM2-135M-Instruct", None)
    mine = _write(tmp_path, '[llm]\nlocal_model_path = "/models/qwen2.5-0.5b.gguf"\n')
    assert load(mine, env={}).summary()["llm_model"] == "qwen2.5-0.5b"
    remote = _write(tmp_path, '[llm]\nprovider = "openai"\nmodel = "gpt-4.1-mini"\n')
    assert load(remote, env={}).summary()["llm_model"] == "gpt-4.1-mini"
