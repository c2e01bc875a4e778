"""The `parley` command line: bad input gets one line naming the problem and the fix, exit status 2."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from adapters.contract import LlmAdapter
from engine.conversation import VERSION
from engine.journal import JournalCorrupt

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """The user's input, configuration or environment is wrong; the message says how to fix it."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="parley", description="A voice companion that stops when you talk.")
    parser.add_argument("--version", action="version", version=f"parley {VERSION}")
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser("demo", help="the engine with a real LLM and a simulated speaker, with a barge-in")
    demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where journal.jsonl goes")
    demo.add_argument("--llm", choices=("local", "fake"), default="local")
    run = commands.add_parser("run", help="a spoken conversation from a scenario (or typed turns), offline")
    given = run.add_mutually_exclusive_group(required=True)
    given.add_argument("--fixture", type=Path, metavar="SCENARIO.toml", help="a scenario file (see assets/fixtures/)")
    given.add_argument("--text", action="append", metavar="MESSAGE", help="a typed turn (repeatable)")
    run.add_argument("--out", type=Path, required=True, help="writes journal.jsonl, output.wav and report.json here")
    run.add_argument("--fast", action="store_true", help="skip idle time (model work still takes real time)")
    run.add_argument("--llm", choices=("local", "openai"), help="the embedded model or an OpenAI-compatible server")
    run.add_argument("--llm-base-url", metavar="URL")
    run.add_argument("--llm-model", metavar="NAME")
    run.add_argument("--retries", type=int, metavar="N")
    run.add_argument("--idle-timeout", type=float, metavar="SECONDS")
    run.add_argument("--config", type=Path, metavar="FILE", help="a config TOML instead of the user config")
    commands.add_parser("self-test", help="the bundled barge-in scenario, then the journal's invariants")
    commands.add_parser("devices", help="the audio devices PortAudio sees, with their indexes")
    doctor = commands.add_parser("doctor", help="check models, devices and the LLM provider")
    doctor.add_argument("--config", type=Path, metavar="FILE", help="a config TOML instead of the user config")
    bench = commands.add_parser("bench", help="measure stop, quiesce and first-audio times, RTFs, CPU and leaks")
    bench.add_argument("--soak", type=int, metavar="N", help="barge-in cycles of the resource soak (default 200)")
    bench.add_argument("--json", type=Path, metavar="FILE", help="also write the machine and the rows as JSON")
    bench.add_argument("--devices", choices=("fixture", "pulse"), default="fixture",
                       help="pulse: also measure stop and heard words on PulseAudio null sinks")  # fmt: skip
    bench.add_argument("--quick", action="store_true", help="small repetition counts (a smoke run)")
    return parser


def _bench(args: argparse.Namespace) -> int:
    from desktop.bench.runner import Options, run_bench

    if args.soak is not None and args.soak < 1:
        raise BadInput(f"--soak {args.soak}: give a number of cycles >= 1, e.g. --soak 200")
    return run_bench(Options(soak=args.soak, json=args.json, devices=args.devices, quick=args.quick))


def _devices(args: argparse.Namespace) -> int:
    from desktop.doctor import devices_table

    print(devices_table())
    return EXIT_OK


def _doctor(args: argparse.Namespace) -> int:
    from desktop.config import load
    from desktop.doctor import doctor

    checks = doctor(load(args.config))
    for check in checks:
        print(check.line())
    return EXIT_OK if all(check.ok for check in checks) else EXIT_INTERNAL


def _self_test(args: argparse.Namespace) -> int:
    from desktop.selftest import self_test

    problems = self_test()
    for problem in problems:
        print(f"self-test: {problem}", file=sys.stderr)
    print("self-test: ok" if not problems else f"self-test: FAILED ({len(problems)} problems)")
    return EXIT_OK if not problems else EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    from desktop.config import load, with_llm
    from desktop.scenario import load_scenario
    from desktop.voice.fixture_run import run_session
    from desktop.voice.live import scenario_path

    config = with_llm(
        load(args.config),
        provider=args.llm,
        base_url=args.llm_base_url,
        model=args.llm_model,
        retries=args.retries,
        idle_timeout=args.idle_timeout,
    )
    scenario = load_scenario(scenario_path(args.fixture)) if args.fixture else None  # or a bundled one
    print(asyncio.run(run_session(scenario, args.text or [], config, args.out, args.fast)))
    print(f"wrote {args.out / 'journal.jsonl'}, {args.out / 'output.wav'}, {args.out / 'report.json'}")
    return EXIT_OK


def _demo(args: argparse.Namespace) -> int:
    from adapters.contract.private_files import private_dir
    from desktop.demo import fake_llm, run_demo
    from engine.clock import MonotonicClock
    from engine.testing import VirtualClock

    async def go() -> str:
        if args.llm == "fake":
            clock = VirtualClock()
            return await run_demo(fake_llm(clock), args.out, clock)
        return await run_demo(_local_llm(), args.out, MonotonicClock())

    private_dir(args.out)
    print(asyncio.run(go()))
    print(f"journal: {args.out / 'journal.jsonl'}")
    return EXIT_OK


def _local_llm() -> LlmAdapter:
    from adapters.llm.local import LocalLlamaAdapter
    from adapters.llm.models import ModelError

    try:
        return LocalLlamaAdapter()
    except ModelError as error:
        raise BadInput(str(error)) from None


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in ("--fixture", "--quit-when-ready"):
        from desktop.app import run_app

        return run_app(given)  # the window, playing a scenario into it (or closing once it is usable)
    args = _parser().parse_args(argv)
    if args.command is None:
        from desktop.app import run_app

        return run_app([])
    try:
        commands = {"demo": _demo, "run": _run, "self-test": _self_test, "devices": _devices, "doctor": _doctor,
                    "bench": _bench}  # fmt: skip
        return commands[args.command](args)
    except _bad_input() as error:
        print(f"parley: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _bad_input() -> tuple[type[Exception], ...]:
    """Every error that means "your input is wrong", not "Parley is broken"."""
    from adapters.asr.wav import AudioFileError
    from adapters.llm.models import ModelError
    from audio.events import AudioError
    from desktop.config import ConfigError
    from desktop.scenario import ScenarioError
    from desktop.voice.assembly import BadInput as AssemblyBadInput

    return (
        BadInput,
        AssemblyBadInput,
        JournalCorrupt,
        ConfigError,
        ScenarioError,
        ModelError,
        AudioError,
        AudioFileError,
    )


if __name__ == "__main__":
    sys.exit(main())
