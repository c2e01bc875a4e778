"""The table's footnotes: what each row includes, and where the time of the latency rows goes (stage by stage)."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.asr.whisper import CPU_THREADS
from desktop.bench.everyday import everyday_notes
from desktop.bench.real_runs import LEVELS_DBFS, ROOM_DBFS, real_notes
from desktop.bench.rows import Measured
from desktop.bench.scenarios import Run, aborted_metric, metric, ttfas
from desktop.bench.sessions import BARGE_IN_AFTER_S, SPOKEN_EVERY
from desktop.bench.soak import POOL_IDLE_S, WARMUP_CYCLES, Soak
from desktop.bench.table import machine, percentile
from desktop.bench.turn_runs import split_texts
from desktop.config import Config
from desktop.pipeline.voice import pause_ms

STAGES = ("eot_ms", "asr_final_ms", "prefill_wait_ms", "llm_ttft_ms", "tts_first_ms")


def machine_note() -> str:
    info = machine()
    return (
        f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['platform']}; {info['date']}; "
        f"load average at the end (1/5/15 min) {'/'.join(map(str, info['loadavg_1_5_15']))}"
    )


def footnotes(m: Measured) -> list[str]:
    notes = [
        machine_note(),
        f"stop_ms, quiesce_ms, ttfa_ms, heard_word_error: the bundled barge_in (x{len(m.barge_in)}) and echo "
        f"(x{len(m.echo)}) scenarios as `parley run --fast` runs them: fixture devices, the real Whisper, SmolLM2 "
        "and Piper; model work takes real time, idle waits are skipped.",
        _stop_note(m),
        _heard_note(m),
        _quiesce_note(m.runs),
        _ttfa_note(m.runs),
        *_turns_note(m),
        "quiesce_http_ms: the barge_in scenario against the tests' fault-injecting OpenAI-compatible server, whose "
        "stream stalls after two sentences: the cancel has to close a live HTTP stream.",
        f"asr_rtf: Whisper tiny.en (int8, {CPU_THREADS} CPU thread(s)) on the 5 fixture utterances; tts_rtf: Piper "
        "per sentence; llm: SmolLM2 via llama.cpp, default system prompt + a question (its prefix cached after the "
        "first call).",
        "idle_cpu_pct: time.process_time of the whole process per 0.5 s while a fixture session listens in real "
        "time to a silent mic with AEC on (20 ms frames through AEC + VAD, the sink rendering no block after 2 s with "
        "nothing to play, as the Player's callback wakes no loop; the loudspeaker rig simulating the echo path); "
        "idle_cpu_pct_headset: the same session without the loudspeaker rig and canceller. The VAD's energy gate "
        "keeps Silero off in a silent room.",
        *everyday_notes(m.everyday),
        _soak_note(m.soak, m.plan_soak),
        *_real_notes(m),
    ]
    if m.self_described:
        notes.append("self-interruptions: " + "; ".join(m.self_described))
    if isinstance(m.http, str):
        notes.append(f"quiesce_http_ms not measured: {m.http}")
    if m.devices == "pulse" and m.pulse is not None and not isinstance(m.pulse, str):
        notes.append(_pulse_note(m.pulse.ttfa_metrics))
        notes.append(
            "self_talk_turns_pulse, self_interruptions_pulse, missed_barge_ins_pulse, stop_ms_pulse: desktop/bench/"
            "loudspeaker.py; the user's onset is found under the echo by cross-correlation with the clip. "
            f"Uninterrupted replies paused {m.pulse.loudspeaker.onset_pauses} times on an onset in "
            f"{m.pulse.loudspeaker.played_s:.0f} s played (each resumed within the onset window). "
            + ("; ".join(m.pulse.loudspeaker.described) or "No turn or interruption came from Parley's own voice.")
        )
    return notes


def _pulse_note(turns: list[dict[str, float]]) -> str:
    stages = ", ".join(f"{s} {_p50_p95([t.get(s, 0.0) for t in turns])}" for s in STAGES)
    return (
        "ttfa_ms_pulse: 'What's the weather like today?' and 'Tell me a long story about a dragon who learns to fly.' "
        "in turn, played into the PulseAudio microphone of a fresh session (real time, a headset: no echo path); "
        "the end of speech is the clip's last loud 10 ms window as captured (ADC time), the first audio the "
        f"Player's DAC time. Stages (p50/p95 ms over {len(turns)} turns, the journal's): {stages}."
    )


def _p50(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{percentile(known, 50):.0f}" if known else "—"


def _p50_p95(values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{percentile(known, 50):.0f}/{percentile(known, 95):.0f}" if known else "—"


def _stop_note(m: Measured) -> str:
    s = m.stops
    return (
        "stop_ms is read off the signals: the interrupting clip's first 10 ms window above -40 dBFS → output.wav "
        "silent from then on (if it was in a gap between words already, the moment the pipeline paused it)."
        f" Stages (p50/p95 ms): signal onset → VAD onset {_p50_p95([x.vad_onset_ms for x in s])}"
        f", VAD onset → barge-in detected {_p50_p95([x.detect_ms for x in s])} (min_speech_ms), detected → output "
        f"silent {_p50_p95([x.silence_ms for x in s])}; the journal's own stop_ms (VAD onset → detected) p50 "
        f"{_p50(metric(m.runs, 'stop_ms'))}."
    )


def _heard_note(m: Measured) -> str:
    head = (
        "heard_word_error: the journal's kept text vs Whisper's transcript (beam 5) of the played part of "
        "output.wav, numbers read as digits on both sides ('nineteen' = '19'), aligned letter by letter: words kept "
        "but not audible plus words audible but not kept (Whisper's misreadings inside the sentence are not "
        "counted); on PulseAudio the words heard past the kept ones are read against the reply's next words, and "
        "whatever Whisper made of the cut word's fragment counts as one word"
    )
    if not m.heard:
        return head + "."
    worst = max(m.heard, key=lambda h: (h.error, h.edits))
    return (
        f"{head}; worst ({worst.error} at the cut, {worst.edits} word edits in all): kept {worst.kept!r}, "
        f"Whisper heard {worst.transcript!r}; all word edits p50/p95 {_p50_p95([float(h.edits) for h in m.heard])}; "
        f"with the pipeline's greedy Whisper as the ear instead: p50/p95 "
        f"{_p50_p95([float(h.greedy_error) for h in m.heard])}, max {max(h.greedy_error for h in m.heard)}."
    )


def _quiesce_note(runs: list[Run]) -> str:
    quiesce = aborted_metric(runs, "quiesce_ms")
    if not quiesce:
        return "quiesce_ms: no turn was cancelled."
    return (
        f"quiesce_ms: cancel (barge-in confirmed) → the turn's tasks and threads ended, over {len(quiesce)} "
        "interruptions; the turn waits for its worker threads to leave their current step (one llama.cpp token "
        "or 32 prompt tokens; Piper's inference is ended midway) while Whisper transcribes the interruption."
    )


def _ttfa_note(runs: list[Run]) -> str:
    turns = [t for run in runs for t in run.of("metrics/turn") if "ttfa_ms" in t and "eot_ms" in t]
    if not turns:
        return "ttfa_ms: no turn had its stages measured."
    stages = ", ".join(f"{s} {_p50_p95([t.get(s, 0.0) for t in turns])}" for s in STAGES)
    rest = _p50_p95([t["ttfa_ms"] - sum(t.get(s, 0.0) for s in STAGES) for t in turns])
    lag = _p50_p95([t.ms - t.journal_ms for run in runs for t in ttfas(run)])
    audio = Config().audio
    kinds = _by_kind(runs)
    return (
        f"ttfa_ms: each voice turn's utterance, its last loud 10 ms window (-40 dBFS) in the signal → the reply's "
        f"first sample in output.wav. Stages (p50/p95 ms over {len(turns)} turns): the VAD places the end of speech "
        f"{lag} after the signal's (Silero's 32 ms windows and their memory); from there the journal's {stages}; the "
        f"rest {rest} is the sink's 30 ms latency and queueing. By kind (p50/p95): questions {_p50_p95(kinds['?'])}, "
        f"statements {_p50_p95(kinds['.'])} (finished-sounding words Smart Turn doubts wait statement_wait_ms "
        f"{audio.statement_wait_ms} before they are decided). eot_ms/asr_final_ms rows: every voice turn of the "
        "scenarios and of the end-of-turn fixtures, from the end of speech as the VAD placed it."
    )


def _by_kind(runs: list[Run]) -> dict[str, list[float]]:
    """ttfa of the turns whose words end in a question mark, and of the others."""
    out: dict[str, list[float]] = {"?": [], ".": []}
    for run in runs:
        texts = {e["turn"]: str(e["text"]) for e in run.of("user/message")}
        for t in ttfas(run):
            out["?" if texts.get(t.turn, "").rstrip().endswith("?") else "."].append(t.ms)
    return out


def _turns_note(m: Measured) -> list[str]:
    if not m.clips:
        return []
    audio = Config().audio
    note = (
        f"cutoff_rate: each of the {len(m.clips)} end-of-turn fixtures (assets/fixtures/turns: Piper sentences with "
        "0.3-1.0 s pauses inserted at word boundaries, and complete questions) said once into a fresh pipeline "
        "session (`run --fast`, real Whisper, Smart Turn, SmolLM2, Piper); split into more than one turn = cut off "
        "(a turn reopened before its reply was heard is one). "
        f"Settings: the VAD's pause {pause_ms(audio):g} ms, min_silence_ms {audio.min_silence_ms}, "
        f"statement_wait_ms (doubted words) {audio.statement_wait_ms}, max_turn_wait_ms {audio.max_turn_wait_ms}. "
        "cutoff_rate_600ms: the same clips through Silero with a fixed 600 ms hangover (what ended a turn before)."
    )
    return [note] + [f"cut off: {text}" for text in split_texts(m.clips)]


def _soak_note(soak: Soak | None, cycles: int) -> str:
    head = (
        f"soak_*: {cycles} cycles after {WARMUP_CYCLES} warm-up ones, each a fresh fixture session on the shared "
        "preloaded models: a typed question → the reply's first audio (SmolLM2 + Piper) → "
        f"{BARGE_IN_AFTER_S:g} s later a push-to-talk barge-in (every {SPOKEN_EVERY}th cycle the spoken "
        "'stop, what time is it' through VAD + Whisper instead) → the turn aborted and quiescent → the session "
        "closed. Counts from /proc/self after gc.collect(); p50/p95 over the per-cycle deltas, met on the final one "
        f"(the first and last counts are taken {POOL_IDLE_S:g} s after the work, once a job has ended anyio's "
        "idle worker threads: the pool's size is not a leak)."
    )
    if soak is None or not soak.cycles:
        return head
    aborted = [c for c in soak.cycles if c.outcome == "aborted"]
    quiesce = [float(c.metrics["quiesce_ms"]) for c in aborted if "quiesce_ms" in c.metrics]
    tail = f" {len(aborted)}/{len(soak.cycles)} cycles aborted a reply"
    if quiesce:
        tail += f"; their quiesce_ms p50 {percentile(quiesce, 50):.0f}, p95 {percentile(quiesce, 95):.0f}"
    return head + tail + "."


def _real_notes(m: Measured) -> list[str]:
    if not m.real:
        return []
    note = (
        f"real_*: {len(m.real)} recordings of real people (assets/real_speech: ten read sentences, the first ones "
        f"also at {', '.join(f'{x:g}' for x in LEVELS_DBFS)} dBFS, with and without a meeting room's tone at "
        f"{ROOM_DBFS:g} dBFS, and each turn of both speakers of a telephone conversation, its pauses kept), each "
        "said once into a fresh fixture session (`run --fast`). real_wer pools every clip's user messages against "
        "its transcript; real_ttfa_ms is read off the signals as ttfa_ms is, the end of speech being where the "
        "voice falls 20 dB under its own level."
    )
    return [note, *real_notes(m.real), *_pulse_texts(m)]


def _pulse_texts(m: Measured) -> list[str]:
    """Where PulseAudio heard a read sentence otherwise than the fixture path did, and why a sentence gave no
    real_ttfa_ms_pulse figure."""
    if not isinstance(m.real_pulse, list):
        return []
    fixture = {t.clip.name: t.texts for t in m.real if t.group == "sentence"}
    texts = [
        f"real on PulseAudio {t.clip.name}: {list(t.texts)} (fixture path: {list(fixture.get(t.clip.name, ()))})"
        for t in m.real_pulse
        if fixture.get(t.clip.name) is not None and len(t.texts) != len(fixture[t.clip.name])
    ]
    return texts + [f"real_ttfa_ms_pulse has no figure for {t.clip.name}: {t.why}" for t in m.real_pulse if t.why]
