"""The `parley` command line: bad input gets one line naming the problem and the fix, exit status 2."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from adapters.contract import LlmAdapter
from desktop.catalog.command import add_parser as add_models_parser
from desktop.errors import BadInput, disk_problem
from desktop.languages import CHOICES
from desktop.providers.table import provider_names
from desktop.qt import add_window_options
from desktop.terminal import printable, printable_output
from engine.conversation import VERSION
from engine.journal import JournalBusy, JournalCorrupt, JournalWriteFailed
from engine.journal_lock import writer_lock

if TYPE_CHECKING:
    from desktop.config import Config
    from desktop.scenario import Scenario

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT = 0, 1, 2
ONLY = ("everyday",)  # what `parley bench --only` runs on its own: the everyday questions to the configured model
WINDOW_OPTIONS = ("--fixture", "--quit-when-ready", "--hands-free", "--config", "--journal-dir")  # `parley` + these
EXIT_SIGNALLED = 128  # + the signal's number: 130 for Ctrl-C (SIGINT), 143 for SIGTERM, as shells report them
_STOPS = (signal.SIGTERM, signal.SIGINT, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else []))  # HUP: no terminal
MAX_SOAK = 10_000  # barge-in cycles: hours of soak already; more is a typo


class _Noted:
    """SIGTERM and Ctrl-C where the session does not handle them (while the models import, after the session):
    noted, and acted on at the next safe point. Raised there, an exception breaks whatever was importing."""

    def __init__(self) -> None:
        self.signal: signal.Signals | None = None
        self._previous = {sig: signal.getsignal(sig) for sig in _STOPS}
        self.arm()

    def arm(self) -> None:
        for sig in self._previous:
            signal.signal(sig, self._note)

    def _note(self, signum: int, _frame: object) -> None:
        self.signal = self.signal or signal.Signals(signum)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class _Parser(argparse.ArgumentParser):
    """argparse with its complaint on one line: the usage is one `--help` away, not printed above it."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message}; see {self.prog} --help\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="parley", description="A voice companion that stops when you talk.")
    parser.add_argument("--version", action="version", version=f"parley {VERSION}")
    window = parser.add_argument_group(
        "the window",
        "`parley` alone opens the window; these options go with it, e.g. `parley --hands-free`",
        argument_default=argparse.SUPPRESS,
    )
    add_window_options(window)  # for --help: main() hands a command line that starts with one to the window
    commands = parser.add_subparsers(dest="command")
    demo = commands.add_parser("demo", help="the engine alone: the embedded LLM, a silent speaker, a barge-in")
    demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where journal.jsonl goes")
    run = commands.add_parser("run", help="a spoken conversation from a scenario (or typed turns), offline")
    given = run.add_mutually_exclusive_group(required=True)
    given.add_argument("--fixture", type=Path, metavar="SCENARIO.toml", help="a scenario file (see assets/fixtures/)")
    given.add_argument("--text", action="append", metavar="MESSAGE", help="a typed turn (repeatable)")
    run.add_argument("--out", type=Path, required=True, help="writes journal.jsonl, output.wav and report.json here")
    run.add_argument("--fast", action="store_true", help="skip idle time (model work still takes real time)")
    _add_llm_options(run)
    run.add_argument("--retries", type=int, metavar="N")
    run.add_argument("--idle-timeout", type=float, metavar="SECONDS")
    run.add_argument("--language", choices=CHOICES, help="what you speak and Parley answers in (needs its models)")
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
    bench.add_argument("--only", choices=ONLY, help="just this part: everyday = questions to the configured model")
    bench.add_argument("--config", type=Path, metavar="FILE", help="the config of the everyday questions' model")
    _add_llm_options(bench)
    add_models_parser(commands)
    return parser


def _add_llm_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--llm", choices=provider_names(), help="the embedded model or a server (desktop.providers)")
    command.add_argument("--llm-base-url", metavar="URL")
    command.add_argument("--llm-model", metavar="NAME")


def _bench(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("desktop.bench") is None:  # the installer leaves the lab out (packaging/bundling.py)
        raise BadInput("the benchmark is not part of the installed app; run `parley bench` from a source checkout")
    from desktop.bench.runner import Options, run_bench
    from desktop.config import load, with_llm

    if args.soak is not None and not 1 <= args.soak <= MAX_SOAK:
        raise BadInput(f"--soak {args.soak} is out of range; give a number of cycles from 1 to {MAX_SOAK}, e.g. 200")
    if args.json is not None:
        _check_out_file(args.json, "--json")
    config = with_llm(load(args.config), provider=args.llm, base_url=args.llm_base_url, model=args.llm_model)
    return run_bench(
        Options(soak=args.soak, json=args.json, devices=args.devices, quick=args.quick, config=config, only=args.only)
    )


def _models(args: argparse.Namespace) -> int:
    from desktop.catalog.command import run_models

    return run_models(args)


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
    noted = _Noted()
    try:
        return _run_session(args, noted)
    finally:
        noted.restore()


def _run_session(args: argparse.Namespace, noted: _Noted) -> int:
    from adapters.llm.secret import load_api_key
    from desktop.catalog.languages import spoken
    from desktop.config import load, with_language, with_llm
    from desktop.scenario import load_scenario, scenario_path

    config = with_llm(
        load(args.config),
        provider=args.llm,
        base_url=args.llm_base_url,
        model=args.llm_model,
        retries=args.retries,
        idle_timeout=args.idle_timeout,
    )
    language = spoken(with_language(config, args.language))
    if language.problem:
        print(f"parley: {language.problem}", file=sys.stderr)  # and the run goes on in English
    config = language.config
    scenario = load_scenario(scenario_path(args.fixture)) if args.fixture else None  # or a bundled one
    _check_texts(args.text or [])
    _check_out_dir(args.out)  # all of the input is checked before any model loads
    if config.llm.provider == "openai":
        load_api_key()  # a malformed key is named now, not after the models loaded
    with writer_lock(args.out / "journal.jsonl"):  # one run per folder: its journal, output.wav and report.json
        return _run_locked(args, noted, config, scenario)


def _run_locked(args: argparse.Namespace, noted: _Noted, config: Config, scenario: Scenario | None) -> int:
    from desktop.pipeline.run import STOP_SIGNALS, run_session

    if noted.signal is not None:
        print(
            f"parley: stopped by {noted.signal.name} before the session started; nothing was written", file=sys.stderr
        )
        return EXIT_SIGNALLED + noted.signal
    ran = asyncio.run(run_session(scenario, args.text or [], config, args.out, args.fast, stop_on=STOP_SIGNALS))
    noted.arm()  # the loop put the defaults back when it let go of the signals
    for note in ran.notes:
        print(f"parley: {note}", file=sys.stderr)
    print(ran.report)
    wrote = f"wrote {args.out / 'journal.jsonl'}, {args.out / 'output.wav'}, {args.out / 'report.json'}"
    stopped = ran.stopped_by or noted.signal
    if stopped is None:
        print(wrote)
        return EXIT_OK
    print(f"parley: stopped by {stopped.name}; every turn was closed in order; {wrote}", file=sys.stderr)
    return EXIT_SIGNALLED + stopped


def _demo(args: argparse.Namespace) -> int:
    from adapters.runtime.clock import SystemClock
    from desktop.demo import run_demo

    async def go() -> str:
        return await run_demo(_local_llm(), args.out, SystemClock())

    _check_out_dir(args.out)
    print(asyncio.run(go()))
    print(f"journal: {args.out / 'journal.jsonl'}")
    return EXIT_OK


def _check_texts(texts: list[str]) -> None:
    """Typed turns are words: not empty, and UTF-8 (a terminal in another encoding gives undecodable bytes)."""
    for text in texts:
        if not text.strip():
            raise BadInput("--text is empty; give the words of the turn, e.g. --text 'what time is it'")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise BadInput("--text is not valid UTF-8; set the terminal to UTF-8 (e.g. LANG=C.UTF-8)") from None


def _check_out_dir(out: Path) -> None:
    """The output directory exists (created if need be) and takes files, or one line says why not."""
    from desktop.paths import out_dir_problem

    problem = out_dir_problem(out)
    if problem is not None:
        raise BadInput(f"--out {out} {problem}; give a directory Parley can write to")


def _check_out_file(path: Path, flag: str) -> None:
    """A file written at the end of a long run: find out now whether it can be written."""
    from desktop.paths import out_dir_problem

    if path.is_dir():
        raise BadInput(f"{flag} {path} is a directory; give a file path, e.g. {flag} bench.json")
    problem = out_dir_problem(path.parent)
    if problem is not None:
        raise BadInput(f"{flag} {path}: its directory {path.parent} {problem}; give a writable file path")


def _local_llm() -> LlmAdapter:
    from adapters.llm.local import LocalLlamaAdapter
    from adapters.runtime.model_files import ModelError

    try:
        return LocalLlamaAdapter()
    except ModelError as error:
        raise BadInput(str(error)) from None


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0].split("=")[0] in WINDOW_OPTIONS:
        from desktop.qt import run_app

        return run_app(given)  # the window, playing a scenario into it (or closing once it is usable)
    args = _parser().parse_args(argv)
    if args.command is None:
        from desktop.qt import run_app

        return run_app([])
    try:
        commands = {"demo": _demo, "run": _run, "self-test": _self_test, "devices": _devices, "doctor": _doctor,
                    "bench": _bench, "models": _models}  # fmt: skip
        with printable_output():
            return commands[args.command](args)
    except _bad_input() as error:
        print(f"parley: {printable(str(error))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        problem = disk_problem(error)
        if problem is None:
            raise
        print(f"parley: {printable(problem)}", file=sys.stderr)  # the journal's, if it failed first
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("parley: stopped by SIGINT", file=sys.stderr)
        return EXIT_SIGNALLED + signal.SIGINT


def _bad_input() -> tuple[type[Exception], ...]:
    """Every error that means "your input is wrong", not "Parley is broken"."""
    from adapters.llm.secret import MalformedKey
    from adapters.runtime.model_files import ModelError
    from audio.events import AudioError
    from desktop.config import ConfigError
    from desktop.scenario import ScenarioError

    return (
        BadInput,
        JournalCorrupt,
        JournalBusy,
        JournalWriteFailed,
        MalformedKey,
        ConfigError,
        ScenarioError,
        ModelError,
        AudioError,
    )


if __name__ == "__main__":
    sys.exit(main())
