"""What was measured → the table's rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from desktop.bench.everyday import Everyday, everyday_row
from desktop.bench.http_provider import HttpRuns
from desktop.bench.interruptions import Interruption
from desktop.bench.models import LlmTimes
from desktop.bench.real_pulse import PulseTurn
from desktop.bench.real_runs import RealTurn, real_rows
from desktop.bench.scenarios import Heard, Run, Stop, aborted_metric, metric, ttfas
from desktop.bench.soak import Soak
from desktop.bench.table import Row, Target, not_measured, row
from desktop.bench.turn_runs import ClipRun, cutoff_rows

STOP, QUIESCE = Target("p95", 120), Target("p95", 150)
TTFA = (Target("p50", 500), Target("p95", 800))
NONE_EVER, HEARD, IDLE = Target("max", 0), Target("max", 1), Target("p50", 5)
LOUDSPEAKER = ("self_talk_turns_pulse", "self_interruptions_pulse", "missed_barge_ins_pulse")
INTERRUPTION_ROWS = ("answers_after_interruption", "repeats_after_interruption")
NO_GROWTH, RSS_GROWTH = Target("final", 0), Target("final", 20)


@dataclass
class Measured:
    plan_soak: int
    devices: str
    llm: LlmTimes = field(default_factory=LlmTimes)
    asr_rtf: list[float] = field(default_factory=list)
    tts_rtf: list[float] = field(default_factory=list)
    idle_cpu: list[float] = field(default_factory=list)
    idle_cpu_headset: list[float] = field(default_factory=list)
    barge_in: list[Run] = field(default_factory=list)
    echo: list[Run] = field(default_factory=list)
    heard: list[Heard] = field(default_factory=list)
    stops: list[Stop] = field(default_factory=list)
    self_interruptions: list[float] = field(default_factory=list)
    self_described: list[str] = field(default_factory=list)
    http: HttpRuns | str = "not run"
    pulse: Any = None  # desktop.bench.pulse.PulseRuns, or why it could not be measured
    soak: Soak | None = None
    clips: list[ClipRun] = field(default_factory=list)  # the end-of-turn fixtures through the pipeline
    real: list[RealTurn] = field(default_factory=list)  # real people's recordings through the pipeline
    real_pulse: list[PulseTurn] | str | None = None  # the read sentences on PulseAudio (None: not asked for)
    interruptions: list[Interruption] = field(default_factory=list)  # a question over a story, on SmolLM2
    everyday: Everyday | None = None  # everyday questions asked of the configured model

    @property
    def runs(self) -> list[Run]:
        return self.barge_in + self.echo

    def turn_metric(self, key: str) -> list[float]:
        """`key` of every voice turn the pipeline decided: the scenarios' and the end-of-turn fixtures'."""
        clips = [float(m[key]) for clip in self.clips for m in clip.metrics if key in m]
        return metric(self.runs, key) + clips


def rows(m: Measured) -> list[Row]:
    runs = m.runs
    return [
        row("stop_ms", [s.total_ms for s in m.stops], STOP),
        row("quiesce_ms", aborted_metric(runs, "quiesce_ms"), QUIESCE),
        _http_row(m.http),
        row("ttfa_ms", [t.ms for run in runs for t in ttfas(run)], TTFA, note="end of speech in the signal"),
        row("eot_ms", m.turn_metric("eot_ms"), None, note="end of speech -> turn decided"),
        row("asr_final_ms", m.turn_metric("asr_final_ms"), None, note="turn decided -> its text ready"),
        *(cutoff_rows(m.clips) if m.clips else [not_measured("cutoff_rate", Target("final", 5), "no clips run")]),
        row("self_interruptions", m.self_interruptions, NONE_EVER, note=f"per echo run, {len(m.echo)} runs"),
        row("heard_word_error", [float(h.error) for h in m.heard], HEARD, note="words wrong at the cut"),
        row("asr_rtf", m.asr_rtf, None),
        row("tts_rtf", m.tts_rtf, None),
        row("llm_ttft_ms", m.llm.ttft_ms, None),
        row("llm_tokens_per_s", m.llm.tokens_per_s, None),
        *_interruption_rows(m.interruptions),
        everyday_row(m.everyday),
        row("idle_cpu_pct", m.idle_cpu, IDLE, note="% of one core"),
        row("idle_cpu_pct_headset", m.idle_cpu_headset, None, note="the same without the loudspeaker rig"),
        *real_rows(m.real, pulse_ttfa=_real_pulse_ttfa(m.real_pulse), pulse_missing=_real_pulse_missing(m.real_pulse)),
        *_soak_rows(m.soak, m.plan_soak),
        *(_pulse_rows(m.pulse) if m.devices == "pulse" else []),
    ]


def _real_pulse_ttfa(turns: list[PulseTurn] | str | None) -> list[float] | str | None:
    if turns is None or isinstance(turns, str):
        return turns
    return [t.ttfa_ms for t in turns if t.ttfa_ms is not None]


def _real_pulse_missing(turns: list[PulseTurn] | str | None) -> int:
    return sum(t.ttfa_ms is None for t in turns) if isinstance(turns, list) else 0


def _interruption_rows(cuts: list[Interruption]) -> list[Row]:
    """Shares in % of all the interruptions (one sample each): a small model also gets some facts wrong."""
    if not cuts:
        return [not_measured(name, None, "no interruptions run") for name in INTERRUPTION_ROWS]
    answered = 100.0 * sum(c.answered for c in cuts) / len(cuts)
    repeated = 100.0 * sum(c.repeated for c in cuts) / len(cuts)
    note = f"% of {len(cuts)} questions over a story, SmolLM2"
    return [
        row("answers_after_interruption", [answered], None, note=f"{note}: the next reply answered"),
        row("repeats_after_interruption", [repeated], None, note=f"{note}: the next reply copied a cut one"),
    ]


def _http_row(http: HttpRuns | str) -> Row:
    if isinstance(http, str):
        return not_measured("quiesce_http_ms", QUIESCE, http)
    note = f"{http.closed_by_client}/{http.stalled} stalled streams closed by Parley"
    return row("quiesce_http_ms", http.quiesce_ms, QUIESCE, note=note)


def _soak_rows(soak: Soak | None, cycles: int) -> list[Row]:
    names = (("soak_threads_delta", "threads", NO_GROWTH), ("soak_fds_delta", "fds", NO_GROWTH),
             ("soak_sockets_delta", "sockets", NO_GROWTH), ("soak_rss_mb_delta", "rss_mb", RSS_GROWTH))  # fmt: skip
    if soak is None or not soak.deltas:
        return [not_measured(name, target, f"soak of {cycles} cycles") for name, _, target in names]
    final = soak.final
    return [
        row(
            name,
            [float(getattr(d, attr)) for d in soak.deltas],
            target,
            final=float(getattr(final, attr)),
            note=f"final {getattr(final, attr):+g} after {len(soak.deltas)} cycles",
        )
        for name, attr, target in names
    ]


def _pulse_rows(pulse: Any) -> list[Row]:
    if pulse is None or isinstance(pulse, str):
        reason = pulse or "not run"
        return [
            not_measured("ttfa_ms_pulse", TTFA, reason),
            not_measured("idle_cpu_pct_pulse", IDLE, reason),
            not_measured("stop_ms_pulse", STOP, reason),
            not_measured("stop_ms_pulse_headset", STOP, reason),
            not_measured("heard_word_error_pulse", HEARD, reason),
            *(not_measured(name, NONE_EVER, reason) for name in LOUDSPEAKER),
        ]
    loud = pulse.loudspeaker
    where = f"{loud.runs // 2} replies + {loud.runs // 2} barge-ins, speaker looped into the mic (0 dB, 40 ms)"
    return [
        row("ttfa_ms_pulse", pulse.ttfa_ms, TTFA, note="spoken question/statement, PulseAudio, real time"),
        row("idle_cpu_pct_pulse", pulse.idle_cpu, IDLE, note="% of one core, PulseAudio devices, a silent room"),
        row("stop_ms_pulse", loud.stop_ms, STOP, note="with echo: speaker looped into the mic, real time"),
        row("stop_ms_pulse_headset", pulse.stop_ms, STOP, note="PulseAudio null sinks, no echo path"),
        row("heard_word_error_pulse", [float(h.error) for h in pulse.heard], HEARD, note="words wrong at the cut"),
        row("self_talk_turns_pulse", loud.self_talk_turns, NONE_EVER, note=where),
        row("self_interruptions_pulse", loud.self_interruptions, NONE_EVER, note=where),
        row("missed_barge_ins_pulse", loud.missed, NONE_EVER, note="user words that did not interrupt, per barge-in"),
    ]
