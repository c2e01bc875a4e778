"""A bench run that cannot be measured ends the bench with one line and keeps what it recorded."""

from __future__ import annotations

from pathlib import Path

from desktop.bench.runner import _kept


def test_a_failed_run_keeps_its_journal_and_says_where(tmp_path: Path) -> None:
    run_dir = tmp_path / "echo15"
    run_dir.mkdir()
    (run_dir / "journal.jsonl").write_text('{"type": "session/start"}\n')
    failed = _kept(run_dir, "echo run 16", TimeoutError("the conversation did not settle within the session limit"))
    message = str(failed)
    assert message.startswith("echo run 16 failed (the conversation did not settle within the session limit)")
    kept = Path(message.rsplit(" kept in ", 1)[1])
    assert (kept / "journal.jsonl").read_text() == '{"type": "session/start"}\n'
    assert "\n" not in message
