"""A Hugging Face-compatible file server on 127.0.0.1, so downloads are tested over real HTTP with real files.

It answers what huggingface_hub asks of the Hub: `HEAD/GET /{repo}/resolve/{revision}/{path}` with X-Repo-Commit
and an ETag (the git blob id of a small file); for a large (LFS) file a 302 to a "CDN" on another host name
(localhost) with X-Linked-Etag (its sha256) and X-Linked-Size, as the Hub does; the CDN honours Range requests
(206, Content-Range). The Hub's 404s carry X-Error-Code (RepoNotFound, EntryNotFound). Faults on cue: a connection
cut after some bytes, bytes that do not match the checksum, a slow line. Every request is recorded; it runs in its
own threads, and `stop()` joins them.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_FROM = 1_000_000  # files this big are LFS files (served through the CDN), as on the Hub
BLOCK = 64 * 1024
RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<path>.+)$")


@dataclass
class Hosted:
    """A file in a repo: served from `source` on disk."""

    source: Path
    size: int
    sha256: str
    git_sha1: str

    @property
    def lfs(self) -> bool:
        return self.size >= LFS_FROM


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    host: str
    range: str


@dataclass
class Faults:
    cut_after: dict[str, list[int]] = field(default_factory=dict)  # sha256 -> bytes sent before each next cut
    corrupt: set[str] = field(default_factory=set)  # sha256 of files served with one byte changed
    pace: dict[str, float] = field(default_factory=dict)  # sha256 -> seconds between blocks (a slow line)


class FakeHub:
    def __init__(self) -> None:
        self.files: dict[tuple[str, str, str], Hosted] = {}  # (repo, revision, path)
        self.blobs: dict[str, Hosted] = {}
        self.seen: list[Seen] = []
        self.faults = Faults()
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # a paced sender stops waiting
        self.sockets: set[socket.socket] = set()  # open client connections (a pooled client keeps them alive)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = False  # server_close() joins the handlers
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-hub", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def host(self, repo: str, path: str, source: Path, revision: str = "main") -> Hosted:
        data = source.read_bytes()
        hosted = Hosted(source, len(data), hashlib.sha256(data).hexdigest(), _git_sha1(data))
        self.files[(repo, revision, path)] = hosted
        self.blobs[hosted.sha256] = hosted
        return hosted

    def cut(self, hosted: Hosted, *after: int) -> None:
        """The next GETs of the file break off after these many bytes (of the body sent), one cut each."""
        self.faults.cut_after[hosted.sha256] = list(after)

    def gets(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.method == "GET"]

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        with self._lock:
            for connection in self.sockets:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)  # a handler waiting for a next request returns
        self._server.server_close()
        self._thread.join(5.0)

    def note(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    def next_cut(self, sha256: str) -> int | None:
        with self._lock:
            cuts = self.faults.cut_after.get(sha256)
            return cuts.pop(0) if cuts else None


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            with hub._lock:
                hub.sockets.add(self.connection)

        def finish(self) -> None:
            with hub._lock:
                hub.sockets.discard(self.connection)
            with contextlib.suppress(OSError):
                super().finish()

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def do_GET(self) -> None:
            self._answer(body=True)

        def _answer(self, *, body: bool) -> None:
            hub.note(Seen(self.command, self.path, self.headers.get("Host", ""), self.headers.get("Range", "")))
            if self.path.startswith("/cdn/"):
                self._blob(hub.blobs.get(self.path.removeprefix("/cdn/")), body=body)
                return
            match = RESOLVE.match(self.path)
            if match is None:
                self._error(404, "RepoNotFound")
                return
            repo, revision, path = match["repo"], match["revision"], match["path"]
            hosted = hub.files.get((repo, revision, path))
            if hosted is None:
                known = any(r == repo for r, _, _ in hub.files)
                self._error(404, "EntryNotFound" if known else "RepoNotFound")
            elif hosted.lfs:
                self._redirect(hosted)
            else:
                self._blob(hosted, body=body, etag=hosted.git_sha1, hub_headers=True)

        def _error(self, status: int, code: str) -> None:
            self.send_response(status)
            self.send_header("X-Error-Code", code)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _redirect(self, hosted: Hosted) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://localhost:{hub.port}/cdn/{hosted.sha256}")
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("X-Linked-Etag", f'"{hosted.sha256}"')
            self.send_header("X-Linked-Size", str(hosted.size))
            self.send_header("ETag", f'"{hosted.git_sha1}"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _blob(self, hosted: Hosted | None, *, body: bool, etag: str = "", hub_headers: bool = False) -> None:
            if hosted is None:
                self._error(404, "EntryNotFound")
                return
            start = _range_start(self.headers.get("Range", ""))
            if start >= hosted.size and start:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{hosted.size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{hosted.size - 1}/{hosted.size}")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(hosted.size - start))
            if hub_headers:
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{etag}"')
            self.end_headers()
            if body:
                self._send(hosted, start)

        def _send(self, hosted: Hosted, start: int) -> None:
            cut = hub.next_cut(hosted.sha256)
            sent = 0
            with hosted.source.open("rb") as source:
                source.seek(start)
                while block := source.read(BLOCK):
                    if hosted.sha256 in hub.faults.corrupt:
                        block = _corrupted(block, start + sent, hosted.size // 2)
                    if cut is not None and sent + len(block) >= cut:
                        self.wfile.write(block[: cut - sent])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    self.wfile.write(block)
                    sent += len(block)
                    pause = hub.faults.pace.get(hosted.sha256)
                    if pause and hub.stopping.wait(pause):
                        return

    return Handler


def _corrupted(block: bytes, offset: int, at: int) -> bytes:
    """`block` (of the file from `offset`) with the file's byte `at` flipped, if the block holds it."""
    if not offset <= at < offset + len(block):
        return block
    i = at - offset
    return block[:i] + bytes([block[i] ^ 0xFF]) + block[i + 1 :]


def _range_start(header: str) -> int:
    found = re.fullmatch(r"bytes=(\d+)-", header.strip())
    return int(found[1]) if found else 0


@contextlib.contextmanager
def running() -> Iterator[FakeHub]:
    hub = FakeHub().start()
    try:
        yield hub
    finally:
        hub.stop()
