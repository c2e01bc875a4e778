"""Scenario files: what testers write, and the one-line errors for what they get wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.scenario import ScenarioError, load_scenario


def _scenario(tmp_path: Path, text: str) -> Path:
    (tmp_path / "hello.wav").write_bytes(b"RIFF")
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
    ],
)
def test_bad_scenarios_name_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ScenarioError, match=needle):
        load_scenario(_scenario(tmp_path, text))
