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
    return parser


def _demo(args: argparse.Namespace) -> int:
    from desktop.demo import fake_llm, run_demo
    from engine.clock import MonotonicClock
    from engine.testing import VirtualClock

    async def go() -> str:
        if args.llm == "fake":
            clock = VirtualClock()
            return await run_demo(fake_llm(clock), args.out, clock)
        return await run_demo(_local_llm(), args.out, MonotonicClock())

    args.out.mkdir(parents=True, exist_ok=True)
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
    args = _parser().parse_args(argv)
    if args.command is None:
        from desktop.app import run_app

        return run_app([])
    try:
        return _demo(args)
    except (BadInput, JournalCorrupt) as error:
        print(f"parley: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
