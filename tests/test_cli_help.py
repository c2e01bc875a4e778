"""`parley --help` lists the window's options (issue 37), each with its line of help."""

from __future__ import annotations

import re

import pytest

from desktop.cli import WINDOW_OPTIONS, main


def test_help_lists_every_window_option_with_a_description(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert "the window:" in shown
    window = " ".join(shown.split("the window:")[1].split())  # however the terminal's width wraps it
    assert sorted(set(re.findall(r"--[a-z-]+", window))) == sorted(WINDOW_OPTIONS)
    assert "--hands-free listen without a click from the start" in window
    for flag in WINDOW_OPTIONS:
        described = re.search(rf"{flag}(?: [A-Z][A-Za-z.]*)? ([a-z][^-]+)", window)
        assert described is not None, f"{flag} has no description"
        assert len(described[1].split()) >= 3, described[1]


def test_window_options_still_go_to_the_window_and_commands_parse_as_before(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    given: list[list[str]] = []
    monkeypatch.setattr("desktop.qt.run_app", lambda argv: given.append(list(argv or [])) or 0)
    assert main(["--hands-free"]) == 0
    assert main([]) == 0
    assert given == [["--hands-free"], []]
    with pytest.raises(SystemExit) as exited:
        main(["devices", "--hands-free"])  # a window option is not a command's
    assert exited.value.code == 2
    assert "unrecognized arguments: --hands-free" in capsys.readouterr().err
