"""A tiny forward HTTP proxy on 127.0.0.1 for the proxy tests: plain-http absolute-URI requests only (no CONNECT).

It records every request it was asked to forward (method, absolute URI, headers), rewrites the request line
to origin form, strips the proxy's own headers, and relays bytes both ways until either side closes. With
`credentials` set it answers 407 to requests that do not carry them, as a corporate proxy does.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import socketserver
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

HOP_HEADERS = ("proxy-authorization", "proxy-connection")


@dataclass(frozen=True)
class Forwarded:
    method: str
    uri: str
    headers: dict[str, str]


class ForwardProxy:
    """`url` is what HTTP_PROXY would hold; `requests` what came through, in order."""

    def __init__(self, credentials: tuple[str, str] | None = None) -> None:
        self.requests: list[Forwarded] = []
        self.credentials = credentials
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="http-proxy", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}"

    def start(self) -> ForwardProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5.0)

    def _serve(self, client: socket.socket) -> None:
        head, rest = _read_head(client)
        if head is None:
            return
        line, *lines = head.decode("latin-1").split("\r\n")
        method, uri, version = line.split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines if h)}
        self.requests.append(Forwarded(method, uri, headers))
        if self.credentials is not None and headers.get("proxy-authorization") != _basic(*self.credentials):
            client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
            return
        target = urlsplit(uri)
        if target.scheme != "http" or target.hostname is None:
            client.sendall(b"HTTP/1.1 501 Not Implemented\r\ncontent-length: 0\r\n\r\n")
            return
        kept = [h for h in lines if h and h.partition(":")[0].strip().lower() not in HOP_HEADERS]
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        with socket.create_connection((target.hostname, target.port or 80), timeout=5) as upstream:
            upstream.settimeout(None)
            upstream.sendall("\r\n".join([f"{method} {path} {version}", *kept, "", ""]).encode("latin-1") + rest)
            self._relay(client, upstream)

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        with self._lock:
            self._sockets |= {client, upstream}
        upward = threading.Thread(target=_pump, args=(client, upstream), daemon=True)
        upward.start()
        _pump(upstream, client)
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)  # the client went away or the server closed: end both sides
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_RDWR)
        upward.join(5.0)
        with self._lock:
            self._sockets -= {client, upstream}


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@contextlib.contextmanager
def running(credentials: tuple[str, str] | None = None) -> Iterator[ForwardProxy]:
    proxy = ForwardProxy(credentials).start()
    try:
        yield proxy
    finally:
        proxy.stop()
