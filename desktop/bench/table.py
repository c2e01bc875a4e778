"""Rows of the benchmark table: samples → p50/p95, a target on one statistic, and whether it is met."""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Stat = Literal["p50", "p95", "max", "final"]


@dataclass(frozen=True)
class Target:
    """`stat` of the samples must be at most `limit` (the "final" stat is a row's closing value)."""

    stat: Stat
    limit: float

    def __str__(self) -> str:
        sign = "=" if self.limit == 0 and self.stat in ("max", "final") else "≤"
        stat = "" if self.stat == "final" else f"{self.stat} "
        return f"{stat}{sign} {_number(self.limit)}"


@dataclass(frozen=True)
class Row:
    name: str
    p50: float | None
    p95: float | None
    target: str
    met: str  # "yes", "no", "measured" or "not measured"
    n: int
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "p50": self.p50, "p95": self.p95, "target": self.target, "met": self.met,
                "n": self.n, "note": self.note}  # fmt: skip


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


Targets = Target | tuple[Target, ...]


def row(
    name: str, samples: Sequence[float], target: Targets | None, *, final: float | None = None, note: str = ""
) -> Row:
    """A measured row; `final` is the value a "final" target is judged on (a soak's after - before). Several
    targets are all to be met."""
    if not samples:
        return not_measured(name, target, note or "no samples")
    p50, p95 = round(percentile(samples, 50), 3), round(percentile(samples, 95), 3)
    if target is None:
        return Row(name, p50, p95, "—", "measured", len(samples), note)
    value = {"p50": p50, "p95": p95, "max": max(samples), "final": final if final is not None else samples[-1]}
    met = "yes" if all(value[t.stat] <= t.limit for t in _all(target)) else "no"
    return Row(name, p50, p95, _shown(target), met, len(samples), note)


def not_measured(name: str, target: Targets | None, reason: str) -> Row:
    return Row(name, None, None, _shown(target) if target else "—", "not measured", 0, f"not measured: {reason}")


def _all(target: Targets) -> tuple[Target, ...]:
    return target if isinstance(target, tuple) else (target,)


def _shown(target: Targets) -> str:
    return ", ".join(str(t) for t in _all(target))


def render(rows: Sequence[Row], footnotes: Sequence[str]) -> str:
    """A Markdown table (readable in a terminal too) followed by the footnotes."""
    header = ("row", "p50", "p95", "target", "met", "n", "note")
    cells = [header] + [(r.name, _number(r.p50), _number(r.p95), r.target, r.met, str(r.n), r.note) for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |" for line in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines + [""] + [f"- {note}" for note in footnotes])


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f}" if abs(value) >= 100 or value == int(value) else f"{value:.2f}"


def machine() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],  # other work on the machine skews every row
    }


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")


def write_json(path: Path, rows: Sequence[Row], info: dict[str, Any], footnotes: Sequence[str]) -> None:
    payload = {"machine": info, "rows": [r.as_json() for r in rows], "footnotes": list(footnotes)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
