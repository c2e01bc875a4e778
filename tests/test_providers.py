"""The provider table is the one list of providers: the config, the CLI, `parley doctor` and the session read it;
Ollama, LM Studio and llama.cpp's server on 127.0.0.1 are found, listed and used over real HTTP (fake servers)."""

from __future__ import annotations

import json
import socket
import time
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from adapters.runtime.clock import SystemClock
from desktop.cli import _parser
from desktop.config import Config, ConfigError, LlmConfig, load
from desktop.doctor import doctor
from desktop.model.session import Session
from desktop.model.settings_rules import try_connection
from desktop.model.voice import SimulatedVoice
from desktop.providers.listing import detect_local, list_models, list_url
from desktop.providers.table import OPENAI_BASE_URL, PROVIDERS, base_url_for, provider_named
from engine.events import TurnEnded
from engine.journal import read_events
from tests.fault_behaviours import status, text_stream
from tests.fault_server import FaultServer, running

OLLAMA_TAGS = {"models": [{"name": "llama3.2:1b", "size": 1}, {"name": "qwen2.5:0.5b", "size": 2}]}
OPENAI_LIST = {"object": "list", "data": [{"id": "qwen2.5-7b-instruct", "object": "model"}]}


def _closed_port() -> str:
    """A URL on 127.0.0.1 where nothing listens (the port was just free)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _nowhere() -> dict[str, str]:
    return {p.name: _closed_port() for p in PROVIDERS if p.local_server}


def test_every_provider_in_the_table_is_taken_by_the_config_and_the_cli(tmp_path: Path) -> None:
    for provider in PROVIDERS:
        args = _parser().parse_args(["run", "--text", "hi", "--out", str(tmp_path), "--llm", provider.name])
        assert args.llm == provider.name
        path = tmp_path / f"{provider.name}.toml"
        path.write_text(f'[llm]\nprovider = "{provider.name}"\n', encoding="utf-8")
        assert load(path, env={}).llm.provider == provider.name
    with pytest.raises(ConfigError, match="use one of 'local', 'openai', 'ollama', 'lmstudio', 'llamacpp'"):
        load(path, env={"PARLEY_LLM": "gpt"})


def test_a_provider_line_alone_reaches_the_server_where_it_listens_by_default() -> None:
    assert base_url_for(LlmConfig(provider="ollama")) == "http://127.0.0.1:11434/v1"
    assert base_url_for(LlmConfig(provider="lmstudio")) == "http://127.0.0.1:1234/v1"
    assert base_url_for(LlmConfig(provider="openai")) == OPENAI_BASE_URL
    assert base_url_for(LlmConfig(provider="ollama", base_url="http://box:11434/v1")) == "http://box:11434/v1"
    ollama = provider_named("ollama")
    assert ollama is not None
    assert list_url(ollama, "http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434/api/tags"


def test_ollama_and_lm_studio_on_this_computer_are_found_with_their_models() -> None:
    with running() as ollama, running() as lmstudio:
        ollama.push(status(200, OLLAMA_TAGS))
        lmstudio.push(status(200, OPENAI_LIST))
        where = {**_nowhere(), "ollama": ollama.base_url, "lmstudio": lmstudio.base_url}
        found = {d.provider.name: d for d in detect_local(where)}
    assert set(found) == {"ollama", "lmstudio"}  # nothing answers where llama.cpp's server would be
    assert found["ollama"].models == ("llama3.2:1b", "qwen2.5:0.5b")
    assert found["lmstudio"].models == ("qwen2.5-7b-instruct",)
    assert [r.path for r in ollama.requests] == ["/api/tags"]
    assert [r.path for r in lmstudio.requests] == ["/v1/models"]


def test_with_no_server_running_nothing_is_found_at_once() -> None:
    started = time.monotonic()
    assert detect_local(_nowhere()) == []
    assert time.monotonic() - started < 2.0


def test_a_server_answering_something_else_is_not_taken_for_ollama(fault_server: FaultServer) -> None:
    fault_server.push(status(200, "<html>a web page</html>"), status(200, {"models": "none"}))
    ollama = provider_named("ollama")
    assert ollama is not None
    assert detect_local({**_nowhere(), "ollama": fault_server.base_url}) == []
    with pytest.raises(Exception, match=r"answered, but not with a Ollama \(on this computer\) model list"):
        list_models(ollama, fault_server.base_url)


def _ollama(server: FaultServer, model: str = "llama3.2:1b") -> Config:
    return replace(Config(), llm=LlmConfig(provider="ollama", base_url=server.base_url, model=model))


def test_doctor_says_whether_the_server_offers_the_configured_model(fault_server: FaultServer) -> None:
    fault_server.push(status(200, OLLAMA_TAGS), status(200, OLLAMA_TAGS))
    checks = {c.name: c for c in doctor(_ollama(fault_server, "llama3.2"))}  # a name without a tag is :latest
    assert not checks["LLM provider"].ok
    assert "has no model 'llama3.2'; pick one of llama3.2:1b, qwen2.5:0.5b" in checks["LLM provider"].detail
    checks = {c.name: c for c in doctor(_ollama(fault_server))}
    assert checks["LLM provider"].ok, checks["LLM provider"].detail
    assert checks["LLM proxy"].ok


def test_doctor_and_test_connection_say_how_to_start_a_missing_server() -> None:
    config = replace(Config(), llm=LlmConfig(provider="ollama", base_url=_closed_port(), connect_timeout=1))
    check = next(c for c in doctor(config) if c.name == "LLM provider")
    assert not check.ok
    assert "cannot be reached" in check.detail
    assert "ollama serve" in check.detail
    ok, words = try_connection(config, None)
    assert not ok
    assert "ollama serve" in words


@pytest.mark.anyio
async def test_a_turn_is_answered_by_ollama_and_the_cloud_key_stays_home(
    fault_server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARLEY_LLM_API_KEY", "sk-cloud-SECRET")
    fault_server.push(text_stream("Paris is the capital of France."))
    clock = SystemClock()
    session = Session(_ollama(fault_server), journal_dir=tmp_path, voice=SimulatedVoice(clock, ms_per_word=1),
                      clock=clock)  # fmt: skip
    ended = anyio.Event()
    session.subscribe(lambda event: ended.set() if isinstance(event, TurnEnded) else None)
    async with session.running():
        assert session.send_text("What's the capital of France?")
        with anyio.fail_after(10):
            await ended.wait()
    chat = fault_server.requests[0]
    assert chat.path == "/v1/chat/completions"
    assert chat.json["model"] == "llama3.2:1b"
    assert "authorization" not in chat.headers  # a server on this computer never gets the key meant for a cloud
    events = read_events(session.journal_path)
    request = next(e for e in events if e["type"] == "llm/request")
    assert (request["provider"], request["model"]) == ("ollama", "llama3.2:1b")
    reply = next(e for e in events if e["type"] == "assistant/message")
    assert reply["text"] == "Paris is the capital of France."
    assert "sk-cloud-SECRET" not in json.dumps(events)
