"""What parley.spec bundles beyond what PyInstaller finds by itself: the default models, the licence notices
of every bundled component, and the list of what the app never uses (trimmed). Build time only.

Nothing here names a platform's paths: everything is computed from the installed distributions.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import shutil
import struct
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from PyInstaller.utils.hooks import collect_data_files, collect_dynamic_libs, copy_metadata

ROOT = Path(__file__).resolve().parent.parent
Toc = list[tuple[str, str, str]]  # PyInstaller's (destination name, source path, type code)


class BuildError(Exception):
    """The build cannot produce a working installer; the message is one line naming the fix."""


def default_models() -> dict[str, Path]:
    """Each default model's distribution and its file or folder, found the way the app finds them."""
    sys.path.insert(0, str(ROOT))
    from adapters.asr.whisper import DEFAULT_MODEL_PACKAGE, default_model_dir
    from adapters.llm.local import DEFAULT_DISTRIBUTION
    from adapters.runtime.model_files import ModelError, find_in_distribution
    from adapters.tts.piper_voice import DEFAULT_VOICE_PACKAGE, default_voice_path
    from adapters.turn.smart_turn import DEFAULT_PACKAGE as TURN_PACKAGE
    from adapters.turn.smart_turn import default_model_path as turn_model_path

    try:
        return {
            DEFAULT_MODEL_PACKAGE: default_model_dir(),
            DEFAULT_VOICE_PACKAGE: default_voice_path(),
            DEFAULT_DISTRIBUTION: find_in_distribution(DEFAULT_DISTRIBUTION, "*.gguf"),
            TURN_PACKAGE: turn_model_path(),  # Smart Turn's ONNX file only: pipecat's code is not bundled
        }
    except ModelError as error:
        raise BuildError(f"cannot bundle the default models: {error}") from None


def model_datas(models: dict[str, Path]) -> list[tuple[str, str]]:
    """Each model's folder at its package-relative place, with the distribution's metadata (RECORD), so the
    frozen app finds them through `find_in_distribution` exactly as an installed one does."""
    datas: list[tuple[str, str]] = []
    for name, model in models.items():
        folder = model if model.is_dir() else model.parent
        dist = md.distribution(name)
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file))).resolve()
            if path.suffix not in {".py", ".pyc"} and path.is_relative_to(folder):
                datas.append((str(path), str(PurePosixPath(file.as_posix()).parent)))
        datas += copy_metadata(name)
    return datas


def runtime_files() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(datas, binaries) that are loaded by path, so PyInstaller's import analysis cannot see them."""
    datas = [
        *collect_data_files("piper", includes=["espeak-ng-data/**"]),  # espeak-ng's phoneme data
        *collect_data_files("faster_whisper", includes=["assets/*.onnx"]),  # the Silero VAD model
        *[
            (str(path), "assets/fixtures")
            for path in sorted((ROOT / "assets" / "fixtures").iterdir())
            if path.suffix in {".toml", ".wav"}
        ],  # the scenarios, not their generator
        (str(ROOT / "desktop" / "catalog" / "catalog.toml"), "desktop/catalog"),  # the models `parley models` offers
    ]
    binaries = [*collect_dynamic_libs("llama_cpp"), *collect_dynamic_libs("livekit")]  # loaded with ctypes
    return datas, binaries


# Destination names (POSIX) of what Parley never loads. Parley's window uses QtCore, QtGui and QtWidgets only,
# draws no images, speaks English, and runs on X11 (also under XWayland), Windows or macOS. The shared libraries
# that only these needed go too (`trim`).
UNUSED = re.compile(
    r"""^(
      PySide6/(Qt/)?translations/                                   # Qt's own UI strings (the app is English)
    | PySide6/(Qt/)?plugins/(imageformats|iconengines|generic|egldeviceintegrations|wayland-[^/]+
                             |platformthemes|networkinformation|tls)/
    | PySide6/(Qt/)?plugins/platforminputcontexts/[^/]*virtualkeyboard  # an on-screen keyboard, built on QtQuick
    | PySide6/(Qt/)?plugins/platforms/[^/]*(wayland|eglfs|linuxfb|vnc|vkkhrdisplay|minimalegl)[^/]*$
    | llama_cpp/lib/[^/]*mtmd                                        # multimodal projector: SmolLM2 reads text only
    )""",
    re.VERBOSE,
)
# Python packages that are installed but that Parley never imports at run time (tests, tooling, downloaders,
# extras of dependencies).
EXCLUDES = [
    "pytest", "_pytest", "hypothesis", "mypy", "ruff", "PyInstaller", "IPython", "pygments", "tkinter",
    "PyQt5", "PyQt6", "PySide2", "PySide6.QtNetwork", "hf_xet", "piper.train", "piper.http_server", "llama_cpp.server",
    "desktop.bench",  # the lab: `parley bench` runs from a source checkout, the installer's users need only the app
]  # fmt: skip


def trim(binaries: Toc, datas: Toc) -> tuple[Toc, Toc]:
    """Drops the UNUSED entries, every shared library that only those entries needed, and the symbolic links
    PyInstaller made to any of them."""
    unused = [entry for entry in binaries if _unused(entry)]
    kept = [entry for entry in binaries if not _unused(entry)]
    by_name = {Path(entry[0]).name: entry for entry in kept if entry[2] != "SYMLINK"}
    only_theirs = _needs(unused, by_name) - {Path(entry[0]).name for entry in unused}
    still_needed = _needs([entry for entry in kept if Path(entry[0]).name not in only_theirs], by_name)
    orphans = only_theirs - still_needed
    binaries = [entry for entry in kept if Path(entry[0]).name not in orphans]
    datas = [entry for entry in datas if not _unused(entry)]
    files = {os.path.normpath(entry[0]) for entry in [*binaries, *datas] if entry[2] != "SYMLINK"}

    def dangling(entry: tuple[str, str, str]) -> bool:
        return (
            entry[2] == "SYMLINK" and os.path.normpath(os.path.join(os.path.dirname(entry[0]), entry[1])) not in files
        )

    return [e for e in binaries if not dangling(e)], [e for e in datas if not dangling(e)]


def _unused(entry: tuple[str, str, str]) -> bool:
    return UNUSED.match(Path(entry[0]).as_posix()) is not None


def _needs(roots: Iterable[tuple[str, str, str]], by_name: dict[str, tuple[str, str, str]]) -> set[str]:
    """Names of the bundled libraries that `roots` load, directly or through each other."""
    from PyInstaller.depend.bindepend import get_imports

    seen: set[str] = set()
    todo = [entry[1] for entry in roots if entry[2] in {"BINARY", "EXTENSION"}]
    while todo:
        for name, _path in get_imports(todo.pop()):
            base = Path(name).name
            if base in by_name and base not in seen:
                seen.add(base)
                if by_name[base][2] in {"BINARY", "EXTENSION"}:  # not a SYMLINK entry
                    todo.append(by_name[base][1])
    return seen


def strip_debug_info(binaries: Toc, workpath: Path) -> Toc:
    """Stripped copies of the ELF libraries that carry debug info (ctranslate2's extension: 64 MB of it, libpython).
    Only those, and only when the copy still loads: `strip` rewrites a file's layout, and the libraries that
    auditwheel patched come out unloadable (PyInstaller's own strip=True breaks numpy's OpenBLAS that way)."""
    if shutil.which("strip") is None:
        return binaries
    result = []
    for dest, source, kind in binaries:
        if kind in {"BINARY", "EXTENSION"} and ".debug_info" in _elf(source)[0]:
            target = workpath / "stripped" / dest
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            subprocess.run(["strip", "--strip-debug", str(target)], check=True)
            _sections, loads = _elf(str(target))
            if loads and all((vaddr - offset) % 4096 == 0 for offset, vaddr in loads):
                source = str(target)
        result.append((dest, source, kind))
    return result


def _elf(path: str) -> tuple[set[str], list[tuple[int, int]]]:
    """A little-endian ELF64 file's section names and its loadable segments' (offset, address); empty otherwise."""
    with open(path, "rb") as file:
        data = file.read(64)
        if data[:6] != b"\x7fELF\x02\x01":
            return set(), []
        header = struct.unpack("<16sHHIQQQIHHHHHH", data)
        phoff, shoff, phnum, shnum, shstrndx = header[5], header[6], header[10], header[12], header[13]
        file.seek(phoff)
        segments = [struct.unpack("<IIQQQQQQ", file.read(56)) for _ in range(phnum)]
        file.seek(shoff)
        sections = [struct.unpack("<IIQQQQIIQQ", file.read(64)) for _ in range(shnum)]
        names = b""
        if 0 < shstrndx < len(sections):
            file.seek(sections[shstrndx][4])
            names = file.read(sections[shstrndx][5])
    section_names = {names[s[0] : names.find(b"\0", s[0])].decode(errors="replace") for s in sections}
    return section_names, [(seg[2], seg[3]) for seg in segments if seg[0] == 1]  # PT_LOAD


# -- licence notices -------------------------------------------------------------------------------------------

LICENCE_FILE = re.compile(r"^(licen[cs]e|copying|notice|authors|model_card)([._-].*)?$", re.IGNORECASE)
NOT_LICENCE = {".py", ".pyc", ".pyi", ".so", ".dll", ".dylib", ".pyd"}


def write_licences(toc: Iterable[tuple[str, str, str]], dest: Path) -> None:
    """`dest/<component>/...`: the licence files of every distribution, Python, and (where dpkg knows them)
    system library that the bundle holds, plus Parley's own GPL notice and an index in `dest/README.txt`."""
    owners = _file_owners()
    dists: dict[str, md.Distribution] = {}
    system: set[str] = set()
    for _name, source, _kind in toc:
        if not source:
            continue
        real = os.path.realpath(source)
        owner = owners.get(real) or owners.get(os.path.normpath(source))
        if owner is not None and owner.metadata["Name"] != "parley":  # an editable install of this tree
            dists[owner.metadata["Name"]] = owner
        elif not _is_python_or_parley(real):
            system.add(source)
    dists["pyinstaller"] = md.distribution("pyinstaller")  # its bootloader is the executable
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    index = [
        "Licence notices of everything in this build. Parley itself is free software under the GNU General",
        "Public License, version 3 or (at your option) any later version: see parley/COPYING.",
        "",
    ]
    index += _copy(dest / "parley", [(ROOT / "packaging" / "COPYING", "COPYING")], "Parley", "GPL-3.0-or-later")
    python_licence = Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"
    index += _copy(dest / "python", [(python_licence, "LICENSE.txt")], f"Python {sys.version.split()[0]}", "PSF-2.0")
    for name in sorted(dists, key=str.lower):
        index += _copy_distribution(dest, dists[name])
    index += _system_licences(dest, sorted(system))
    (dest / "README.txt").write_text("\n".join(index) + "\n", encoding="utf-8")


def _file_owners() -> dict[str, md.Distribution]:
    owners: dict[str, md.Distribution] = {}
    for dist in md.distributions():
        base = os.path.realpath(str(dist.locate_file("")))
        for file in dist.files or []:
            owners[os.path.normpath(os.path.join(base, file))] = dist
    return owners


def _is_python_or_parley(path: str) -> bool:
    python = {os.path.realpath(p) for p in (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"])}
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir:
        python.add(os.path.realpath(libdir))  # libpython
    return any(path.startswith(p + os.sep) for p in {*python, str(ROOT)}) or "libpython" in os.path.basename(path)


def _copy_distribution(dest: Path, dist: md.Distribution) -> list[str]:
    files = []
    for file in dist.files or []:
        path = PurePosixPath(file.as_posix())
        in_licence_folder = any(part in {"licenses", "license_files"} for part in path.parts[:-1])
        if (LICENCE_FILE.match(path.name) or in_licence_folder) and path.suffix.lower() not in NOT_LICENCE:
            relative = PurePosixPath(*(part for part in path.parts if not part.endswith(".dist-info")))
            files.append((Path(str(dist.locate_file(file))), relative.as_posix()))
    meta = dist.metadata
    expression, text = meta.get_all("License-Expression") or [""], meta.get_all("License") or [""]
    licence = expression[0] or text[0].strip().split("\n")[0]
    if not licence:
        licence = "; ".join(c.split(" :: ")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License"))
    if not files and "LGPL-3" in licence:  # e.g. PySide6 and shiboken6 (Qt), whose wheels ship no licence text
        files = [(ROOT / "packaging" / "COPYING.LESSER", "COPYING.LESSER"), (ROOT / "packaging" / "COPYING", "COPYING")]
    name = meta["Name"]
    return _copy(dest / name.lower(), files, f"{name} {dist.version}", licence or "see its files")


def _copy(folder: Path, files: Sequence[tuple[Path, str]], what: str, licence: str) -> list[str]:
    """Copies each (source, name under folder); returns the index lines for this component."""
    names = []
    for source, name in files:
        if source.is_file():
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            names.append(target.relative_to(folder.parent).as_posix())
    return [f"{what}: {licence}", *(f"    {name}" for name in names or ["(no licence file shipped)"])]


def _system_licences(dest: Path, sources: Sequence[str]) -> list[str]:
    """Debian's copyright files for the system libraries PyInstaller collected (other systems: listed only)."""
    if not sources:
        return []
    packages: dict[str, list[str]] = {}
    if shutil.which("dpkg-query"):
        for source in sources:
            for path in dict.fromkeys([source, os.path.realpath(source)]):
                found = subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True, check=False)
                if found.returncode == 0:
                    package = found.stdout.split(":", 1)[0]
                    packages.setdefault(package, []).append(os.path.basename(source))
                    break
    lines = []
    for package, libraries in sorted(packages.items()):
        copyright_file = Path("/usr/share/doc") / package / "copyright"
        what = f"{package} ({', '.join(libraries)})"
        lines += _copy(dest / "system", [(copyright_file, package + "/copyright")], what, "system package")
    attributed = {lib for libs in packages.values() for lib in libs}
    lines += [f"{os.path.basename(s)}: system library (see its vendor)" for s in sources
              if os.path.basename(s) not in attributed]  # fmt: skip
    return lines
