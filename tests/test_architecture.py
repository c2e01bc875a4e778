"""SPEC §1 import direction and §4's ban on ambient cancel state, checked on the source itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN_IN_ENGINE = (
    "PySide6",
    "qasync",
    "sounddevice",
    "audio",
    "desktop",
    "contextvars",
    "llama_cpp",
    "faster_whisper",
    "piper",
    "httpx",
)


def _imports(package: str) -> list[tuple[Path, str]]:
    found = []
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [(path, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((path, node.module))
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def test_engine_imports_no_qt_no_devices_no_models_and_no_contextvars() -> None:
    bad = [(p.name, m) for p, m in _imports("engine") if _top(m) in FORBIDDEN_IN_ENGINE]
    assert bad == []


def test_engine_reaches_adapters_only_through_the_contract() -> None:
    bad = [
        (p.name, m) for p, m in _imports("engine") if _top(m) == "adapters" and not m.startswith("adapters.contract")
    ]
    assert bad == []


def test_adapters_and_audio_never_import_the_engine_or_qt() -> None:
    for package in ("adapters", "audio"):
        bad = [(p.name, m) for p, m in _imports(package) if _top(m) in ("engine", "desktop", "PySide6", "qasync")]
        assert bad == [], package


def test_only_desktop_imports_qt() -> None:
    for package in ("engine", "adapters", "audio"):
        assert not [m for _, m in _imports(package) if _top(m) in ("PySide6", "qasync")], package


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The AST scan itself must catch both import forms."""
    tree = ast.parse("import sounddevice\nfrom PySide6.QtCore import QObject\n")
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    assert {_top(n) for n in names} == {"sounddevice", "PySide6"}
