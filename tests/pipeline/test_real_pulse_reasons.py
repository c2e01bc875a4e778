"""real_ttfa_ms_pulse: a read sentence whose run gives no time to first audio says why, in one line of the notes,
instead of leaving the row one sample short. No PulseAudio, no models: the outcomes are built by hand."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from desktop.bench.notes import footnotes
from desktop.bench.real_pulse import Outcome, PulseTurn, no_figure
from desktop.bench.real_runs import RealTurn
from desktop.bench.real_speech import Clip
from desktop.bench.rows import Measured, rows

CLIP = Clip("anna_03", "The child almost hurt the small dog.", np.zeros(1600, dtype=np.float32))
TIMED = Outcome(512.0, waited_out=False, audible=True, started=1, ended=("completed",), dropped=(), frames=80)


def _seen(**changes: Any) -> Outcome:
    return replace(TIMED, **changes)


def test_a_timed_sentence_has_no_reason() -> None:
    assert no_figure(TIMED) == ""


@pytest.mark.parametrize(
    ("seen", "says"),
    [
        (_seen(ttfa_ms=None, audible=False, started=0, ended=(), dropped=("only fillers",)), "dropped (only fillers)"),
        (_seen(ttfa_ms=None, audible=False, started=0, ended=(), dropped=()), "heard no utterance"),
        (_seen(ttfa_ms=None, audible=False, ended=("failed",)), "no reply audible: its turn ended failed"),
        (_seen(ttfa_ms=None, audible=False, ended=()), "no reply audible: its turn taken back, or not ended"),
        (_seen(ttfa_ms=None, audible=False, waited_out=True, ended=()), "the pipeline still busy"),
        (_seen(ttfa_ms=None), "no end of speech found in the 80 frames"),
        (_seen(ttfa_ms=-240.0), "a reply began 240 ms before the end of speech"),
    ],
)
def test_every_way_to_no_figure_is_named(seen: Outcome, says: str) -> None:
    assert says in no_figure(seen)


def test_the_table_counts_and_the_notes_name_a_sentence_without_a_figure() -> None:
    real = [RealTurn("sentence", CLIP, (CLIP.text,), 500.0, CLIP.text)]
    missing = PulseTurn(CLIP, (), None, "no turn: the utterance was dropped (no words)")
    measured = Measured(
        plan_soak=0, devices="fixture", real=real, real_pulse=[PulseTurn(CLIP, (CLIP.text,), 600.0), missing]
    )
    (row,) = [r for r in rows(measured) if r.name == "real_ttfa_ms_pulse"]
    assert row.n == 1
    assert "1 without a figure" in row.note
    assert "real_ttfa_ms_pulse has no figure for anna_03: no turn: the utterance was dropped (no words)" in footnotes(
        measured
    )
