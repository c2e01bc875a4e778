"""A real OpenAI-compatible HTTP/1.1 server that misbehaves on cue, so adapter tests see real sockets.

It runs in its own thread with its own event loop (independent of the test's loop), answers each
request with the next scripted `Behaviour`, records every request and every connection's open/close
times, and offers bounded waits ("the server saw the connection closed") instead of hopeful sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

import pytest

from tests.fault_behaviours import Behaviour, Delay, Forever, Stall


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Connection:
    opened: float
    closed: float | None = None
    closed_by: str | None = None  # "client", "server" or "reset"
    stalled_at: float | None = None  # when the server started to withhold data
    requests: int = 0


class FaultServer:
    """Serves scripted behaviours on 127.0.0.1 (random port); `push` before each call, or set `responder` to answer
    each request that finds nothing pushed from what it asks."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.responder: Callable[[Recorded], Behaviour] | None = None
        self.connections: list[Connection] = []
        self.port = 0
        self._queue: list[Behaviour] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="fault-server", daemon=True)
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._served = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self._queue.extend(behaviours)

    def start(self) -> FaultServer:
        self._thread.start()
        if not self._ready.wait(5.0):
            raise RuntimeError("the fault server did not start within 5 s")
        return self

    def stop(self) -> None:
        """Close every connection, stop the loop and join the thread (bounded)."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(5.0)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5.0)
        if not self._loop.is_closed() and not self._thread.is_alive():
            self._loop.close()

    # Bounded waits: poll a condition until it holds or the bound expires; never a hopeful sleep.

    def wait_for(self, condition: Callable[[], bool], timeout: float = 3.0) -> bool:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    async def until(self, condition: Callable[[], bool], within: float = 3.0) -> bool:
        """`wait_for` without blocking the caller's event loop."""
        deadline = time.monotonic() + within
        while not condition():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    def wait_closed(self, index: int, timeout: float = 3.0) -> bool:
        """Blocking: from async tests use `until_closed`, or the test's own loop cannot close the socket."""
        return self.wait_for(lambda: self.closed(index), timeout)

    async def until_closed(self, index: int, within: float = 3.0) -> bool:
        return await self.until(lambda: self.closed(index), within)

    def closed(self, index: int) -> bool:
        return len(self.connections) > index and self.connections[index].closed is not None

    def all_closed(self) -> bool:
        return all(connection.closed is not None for connection in self.connections)

    def stalled(self) -> bool:
        return any(connection.stalled_at is not None for connection in self.connections)

    # The server's own thread from here on.

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    def _next(self, request: Recorded) -> tuple[Behaviour, int]:
        with self._lock:
            self._served += 1
            if self._queue:
                return self._queue.pop(0), self._served
            if self.responder is not None:
                return self.responder(request), self._served
        body = json.dumps({"error": {"message": "fault server: no behaviour was pushed", "type": "test_bug"}})
        return Behaviour(500, (("content-type", "application/json"),), (body.encode(),), "length"), self._served

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = Connection(opened=time.monotonic())
        self.connections.append(connection)
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self._writers.add(writer)
        outcome = "client"
        try:
            while (request := await _read_request(reader)) is not None:
                connection.requests += 1
                self.requests.append(request)
                outcome = await self._respond(*self._next(request), reader, writer, connection)
                if outcome != "keep":
                    break
            outcome = "client" if outcome == "keep" else outcome
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            outcome = "client"
        finally:
            writer.close()
            connection.closed_by = outcome
            connection.closed = time.monotonic()
            self._writers.discard(writer)
            self._handlers.discard(task)

    async def _respond(
        self,
        behaviour: Behaviour,
        number: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        connection: Connection,
    ) -> str:
        if behaviour.stall_before_headers:
            return await _stall(reader, connection)
        writer.write(_head(behaviour, number))
        for part in behaviour.parts:
            if isinstance(part, bytes):
                writer.write(_framed(behaviour, part))
                await writer.drain()
            elif isinstance(part, Forever):
                return await _forever(behaviour, part, reader, writer)
            elif isinstance(part, Delay):
                await asyncio.sleep(part.seconds)
            elif isinstance(part, Stall):
                await writer.drain()
                return await _stall(reader, connection)
            else:
                await _reset(writer)
                return "reset"
        if behaviour.framing == "chunked":
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        return "server" if behaviour.framing == "close" else "keep"


def _framed(behaviour: Behaviour, part: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(part), part) if behaviour.framing == "chunked" else part


async def _forever(
    behaviour: Behaviour, part: Forever, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> str:
    """Keep sending until the client closes its end (a closed socket raises ConnectionError instead)."""
    while not reader.at_eof():
        writer.write(_framed(behaviour, part.data))
        await writer.drain()
        await asyncio.sleep(part.every_s)
    return "client"


async def _read_request(reader: asyncio.StreamReader) -> Recorded | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise
        return None  # a clean close between requests
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, path, _version = request_line.split(" ", 2)
    headers = {
        name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines if line)
    }
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Recorded(method, path, headers, body)


def _head(behaviour: Behaviour, number: int) -> bytes:
    headers = dict(behaviour.headers)
    headers.setdefault("date", formatdate(usegmt=True))
    if behaviour.request_id_header:
        headers[behaviour.request_id_header] = f"req-{number}"
    if behaviour.framing == "chunked":
        headers["transfer-encoding"] = "chunked"
    elif behaviour.framing == "length":
        headers["content-length"] = str(sum(len(part) for part in behaviour.parts if isinstance(part, bytes)))
    else:
        headers["connection"] = "close"
    lines = [f"HTTP/1.1 {behaviour.status} {HTTPStatus(behaviour.status).phrase}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _stall(reader: asyncio.StreamReader, connection: Connection) -> str:
    """Withhold data until the client gives up and closes its end."""
    connection.stalled_at = time.monotonic()
    with contextlib.suppress(ConnectionError):
        while await reader.read(65536):
            pass
    return "client"


async def _reset(writer: asyncio.StreamWriter) -> None:
    """Let queued bytes leave, then abort with RST so the client sees a reset, not a clean end."""
    for _ in range(200):
        if writer.transport.get_write_buffer_size() == 0:
            break
        await asyncio.sleep(0.005)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@contextlib.contextmanager
def running() -> Iterator[FaultServer]:
    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """A started FaultServer, stopped (every connection closed, thread joined) after the test."""
    with running() as server:
        yield server
