"""`parley bench --quick`: one table with every row, the same rows as JSON, exit 0 whatever the targets say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from desktop.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ROWS = (
    "stop_ms",
    "quiesce_ms",
    "quiesce_http_ms",
    "ttfa_ms",
    "eot_ms",
    "asr_final_ms",
    "cutoff_rate",
    "cutoff_rate_600ms",
    "complete_split",
    "self_interruptions",
    "heard_word_error",
    "asr_rtf",
    "tts_rtf",
    "llm_ttft_ms",
    "llm_tokens_per_s",
    "answers_after_interruption",
    "repeats_after_interruption",
    "everyday_correct",
    "idle_cpu_pct",
    "idle_cpu_pct_headset",
    "real_dropped_utterances",
    "real_wer",
    "real_ttfa_ms",
    "real_cutoff_rate",
    "soak_threads_delta",
    "soak_fds_delta",
    "soak_sockets_delta",
    "soak_rss_mb_delta",
)


def test_quick_bench_prints_every_row_and_writes_them_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    assert main(["bench", "--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    table = [line for line in printed.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in table[1:]] == list(ROWS)

    data = json.loads(out.read_text())
    assert {"cpu", "cores", "python"} <= set(data["machine"])
    assert [r["name"] for r in data["rows"]] == list(ROWS)
    for r in data["rows"]:
        assert {"name", "p50", "p95", "target", "met"} <= set(r), r
        assert r["met"] in ("yes", "no", "measured"), r  # every row measured, none "not measured"
        assert isinstance(r["p50"], int | float), r
        assert isinstance(r["p95"], int | float), r
