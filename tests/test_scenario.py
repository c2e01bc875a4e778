"""Scenario files: what testers write, and the one-line errors for what they get wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.scenario import ScenarioError, load_scenario


def _scenario(tmp_path: Path, text: str) -> Path:
    (tmp_path / "hello.wav").write_bytes(b"RIFF")
    (tmp_path / "folder.wav").mkdir()
    (tmp_path / "loop.wav").symlink_to(tmp_path / "loop2.wav")
    (tmp_path / "loop2.wav").symlink_to(tmp_path / "loop.wav")
    path = tmp_path / "s.toml"
    path.write_text(text)
    return path


def test_a_full_scenario_parses(tmp_path: Path) -> None:
    path = _scenario(
        tmp_path,
        '[[say]]\nwav = "hello.wav"\nat = 0.5\n\n[[say]]\ntext = "typed"\nafter_reply_starts = 1.2\n'
        "push_to_talk = true\n\n[echo]\ngain = 0.4\ndelay_ms = 40\n",
    )
    scenario = load_scenario(path)
    first, second = scenario.says
    assert first.wav == tmp_path / "hello.wav"
    assert (first.timing, first.seconds) == ("at", 0.5)
    assert (second.text, second.timing, second.push_to_talk) == ("typed", "after_reply_starts", True)
    assert scenario.echo is not None
    assert scenario.echo.delay_ms == 40


def test_echo_realism_keys_reach_the_fixture_devices(tmp_path: Path) -> None:
    from audio.fixtures import EchoMixer
    from desktop.pipeline.audio_io import fixture_devices
    from engine.testing.clock import VirtualClock

    path = _scenario(
        tmp_path,
        '[[say]]\nwav = "hello.wav"\nat = 0.5\n\n[echo]\ngain = 1.0\ndelay_ms = 120\njitter_ms = 5\n'
        "drift_ppm = -300\nnonlinearity = 0\nnoise_db = -60\n",
    )
    echo = load_scenario(path).echo
    assert echo is not None
    clock = VirtualClock()
    devices = fixture_devices(clock, 22050, echo=echo)
    mixer, sink = devices.source, devices.recording
    assert isinstance(mixer, EchoMixer)
    assert sink is not None
    assert (mixer.gain, mixer.delay_s, mixer.jitter_s, mixer.drift_ppm) == (1.0, 0.12, 0.005, -300.0)
    assert (mixer.nonlinearity, mixer.noise_db) == (0.0, -60.0)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[[say]]\nwav = "hello.wav"\nat = 0.5\nloud = true\n', "unknown key 'loud'"),
        ('[[say]]\nwav = "missing.wav"\nat = 0.5\n', "does not exist"),
        ('[[say]]\nwav = "hello.wav"\nat = -1\n', "a time in the past"),
        ('[[say]]\nwav = "hello.wav"\nat = 2\n[[say]]\nwav = "hello.wav"\nat = 1\n', "earlier than"),
        ('[[say]]\nwav = "hello.wav"\n', "exactly one of at"),
        ('[[say]]\nwav = "hello.wav"\nafter_reply_ends = 1\n', "no reply before it"),
        ("[mic]\nx = 1\n", "unknown table 'mic'"),
        ("[[say]\n", "not valid TOML"),
        ('[[say]]\nwav = "hello.wav"\nat = nan\n', "at = nan is not a time"),
        ('[[say]]\nwav = "hello.wav"\nat = inf\n', "at = inf is not a time"),
        ('[[say]]\nwav = "hello.wav"\nat = 1e9\n', "from 0 to 600"),
        ('[[say]]\nwav = "hello.wav"\nat = true\n', "at = True is not a time"),
        ('[[say]]\nwav = "hello.wav"\nat = 0\n[[say]]\ntext = "x"\nafter_reply_ends = -inf\n', "not a time"),
        ('[[say]]\nwav = "hello.wav"\nat = 0\n[echo]\ngain = nan\n', "gain = nan; give a number from 0 to 2"),
        (
            '[[say]]\nwav = "hello.wav"\nat = 0\n[echo]\ndelay_ms = inf\n',
            "delay_ms = inf; give a number",
        ),
        ('[[say]]\nwav = "hello.wav"\nat = 0\n[echo]\ndelay_ms = -1\n', "delay_ms = -1"),
        ('[[say]]\nwav = "hello.wav"\nat = 0\necho = 5\n', "unknown key 'echo'"),
        ('echo = 5\n[[say]]\nwav = "hello.wav"\nat = 0\n', "echo must be a table"),
        ("say = 5\n", "say must be an array of tables"),
        ("[[say]]\nwav = 5\nat = 0\n", "wav must be the path of a WAV file"),
        ('[[say]]\ntext = ""\nat = 0\n', "text must be the words typed"),
        ('[[say]]\nwav = "hello.wav"\nat = 0\npush_to_talk = "yes"\n', "write true or false"),
        ('[[say]]\nwav = "folder.wav"\nat = 0\n', "folder.wav is a directory, not a file"),
        ('[[say]]\nwav = "loop.wav"\nat = 0\n', "loop.wav is a symbolic link loop"),
        ('[[say]]\nwav = "hello.wav"\nat = 0\n[echo]\nreverb = 1\n', r"\[echo\] takes only gain, delay_ms"),
        ('[[say]]\nwav = "hello.wav"\nat = 0\n[echo]\njitter_ms = -1\n', "jitter_ms = -1; give a number from 0 to 50"),
    ],
)
def test_bad_scenarios_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=needle):
        load_scenario(_scenario(tmp_path, text))


@pytest.mark.parametrize("kind", ["missing", "directory", "loop"])
def test_an_unusable_scenario_path_says_what_it_is(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "s.toml"
    if kind == "directory":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    wording = {"missing": "does not exist", "directory": "is a directory", "loop": "is a symbolic link loop"}[kind]
    assert f"{path}: the scenario file {wording}" in str(caught.value)
