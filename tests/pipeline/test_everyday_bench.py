"""`parley bench --only everyday`: the everyday questions asked of the configured model through the engine, scored
as the share answered right, printed as a row and written to the JSON: on the embedded SmolLM2 (whatever it
scores) and on an OpenAI-compatible server on 127.0.0.1 that answers right (100 %) or once wrong (95 %)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from desktop.bench.everyday_questions import WALL
from desktop.cli import main
from desktop.config import ENV
from engine.prompt import now_sentence
from tests.fault_behaviours import Behaviour, text_stream
from tests.fault_server import FaultServer, Recorded

KEY = "sk-everyday-bench-test-key"
RIGHT = {
    "What's seven times eight?": "Seven times eight is fifty-six.",
    "What is twelve plus nine?": "That's 21.",
    "How much is a hundred minus thirty-five?": "Sixty-five.",
    "What's half of fifty?": "Half of fifty is twenty-five.",
    "What's ten divided by two?": "Five.",
    "What's the capital of France?": "The capital of France is Paris.",
    "What's the capital of Japan?": "Tokyo.",
    "What is the capital city of Italy?": "Rome is the capital of Italy.",
    "Do you know the capital of Canada?": "Yes, it's Ottawa.",
    "How many minutes are in two hours?": "A hundred and twenty minutes.",
    "How many centimetres are in a metre?": "There are one hundred centimetres in a metre.",
    "How many grams are in a kilogram?": "A thousand grams.",
    "What day is it today?": "It's Friday.",
    "What's the date today?": "Today is the fourteenth of March.",
    "What time is it?": "It's twenty to five.",
    "What year is it?": "It's twenty twenty-five.",
    "What day is it tomorrow?": "Tomorrow is Saturday.",
    "My name is Sam.": "Nice to meet you.",
    "Tell me a joke about penguins.": "Why don't penguins fly? They can't afford the tickets.",
    "I'm flying to Lisbon next week.": "Have a good trip!",
}


def _recalled(question: str, earlier: list[str]) -> str | None:
    """The recall questions, answered only from what the request's history holds."""
    if question == "What did I just ask you about?":
        return f"You asked me: {earlier[-1]}" if earlier else "You have not asked anything yet."
    said = " ".join(earlier)
    if question == "What's my name?":
        name = re.search(r"My name is (\w+)", said)
        return f"Your name is {name[1]}." if name else "I don't know your name."
    if question == "Where did I say I'm flying to?":
        place = re.search(r"flying to (\w+)", said)
        return f"To {place[1]}." if place else "You didn't say."
    return None


def responder(wrong: dict[str, str]) -> Any:
    def answer(request: Recorded) -> Behaviour:
        asked = [str(m["content"]) for m in request.json["messages"] if m["role"] == "user"]
        question = asked[-1]
        text = wrong.get(question) or _recalled(question, asked[:-1]) or RIGHT.get(question, "I don't know.")
        return text_stream(text)

    return answer


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user config, PARLEY_CONFIG or [llm] override from the machine."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config-home"))
    for name in ("PARLEY_CONFIG", *ENV):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _everyday_row(printed: str) -> list[str]:
    lines = [line for line in printed.splitlines() if line.startswith("| everyday_correct ")]
    assert len(lines) == 1, printed
    return [cell.strip() for cell in lines[0].split("|")[1:-1]]


def _bench(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], dict[str, Any]]:
    assert main(["bench", "--only", "everyday", "--json", str(out), *argv]) == 0
    printed = capsys.readouterr().out
    table = [line for line in printed.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in table[1:]] == ["everyday_correct"]  # that row alone
    return _everyday_row(printed), json.loads(out.read_text())


def test_a_provider_that_answers_right_scores_100(
    home: Path, fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", KEY)
    fault_server.responder = responder({})
    config = home / "parley.toml"
    config.write_text(f'[llm]\nprovider = "openai"\nbase_url = "{fault_server.base_url}"\nmodel = "fault-1"\n')
    cells, data = _bench(["--config", str(config)], home / "bench.json", capsys)
    assert cells[1:5] == ["100", "100", "—", "measured"], cells
    assert "fault-1 at 127.0.0.1" in cells[-1]
    [row] = data["rows"]
    assert (row["name"], row["p50"], row["target"]) == ("everyday_correct", 100.0, "—"), row
    assert not any("wrong" in note for note in data["footnotes"]), data["footnotes"]

    systems = {r.json["messages"][0]["content"] for r in fault_server.requests}
    assert all(now_sentence(WALL) in system for system in systems), systems  # the prompt's date and time
    assert len(fault_server.requests) == 23  # twenty questions, three of them after a first turn
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in fault_server.requests)
    assert KEY not in (home / "bench.json").read_text(encoding="utf-8")


def test_a_wrong_answer_counts_against_the_model_and_is_shown(
    home: Path, fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fault_server.responder = responder({"What's seven times eight?": "Seven times eight is fifty-four."})
    server = ["--llm", "lmstudio", "--llm-base-url", fault_server.base_url, "--llm-model", "fault-1"]
    cells, data = _bench(server, home / "bench.json", capsys)
    assert cells[1] == "95", cells
    wrong = [note for note in data["footnotes"] if note.startswith("everyday_correct wrong")]
    assert wrong == ["everyday_correct wrong: \"What's seven times eight?\" -> 'Seven times eight is fifty-four.' "
                     "(wanted 56)"]  # fmt: skip


def test_a_provider_that_cannot_be_reached_is_not_measured(
    home: Path, fault_server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = fault_server.base_url
    fault_server.stop()  # nothing listens there any more
    argv = ["--llm", "lmstudio", "--llm-base-url", url, "--llm-model", "fault-1", "--quick"]
    cells, data = _bench(argv, home / "bench.json", capsys)
    assert cells[4] == "not measured", cells
    assert "gave no answer" in cells[-1], cells
    assert data["rows"][0]["p50"] is None


@pytest.mark.slow
def test_the_embedded_model_gets_a_score(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cells, data = _bench(["--quick"], home / "bench.json", capsys)
    [row] = data["rows"]
    assert (row["name"], row["met"]) == ("everyday_correct", "measured"), row
    assert 0 <= row["p50"] <= 100, row
    assert "SmolLM2" in row["note"], row
    assert "(embedded, offline)" in row["note"], row
    assert cells[3] == "—"
