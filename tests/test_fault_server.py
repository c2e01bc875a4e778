"""The fault server itself: the adapter tests are only as good as what it records and how it misbehaves."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from tests import fault_behaviours as faults
from tests.fault_server import FaultServer, running


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with running() as started:
        yield started


def post(server: FaultServer, **kwargs: float) -> httpx.Response:
    with httpx.Client(timeout=kwargs.get("timeout", 5.0)) as client:
        return client.post(f"{server.base_url}/chat/completions", json={"model": "m"}, headers={"x-probe": "1"})


def test_it_records_requests_and_streams_sse_with_a_request_id(server: FaultServer) -> None:
    server.push(faults.text_stream("Hi there"))
    response = post(server)
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-request-id"] == "req-1"
    assert response.text.endswith("data: [DONE]\n\n")
    assert '"content": "there"' in response.text
    recorded = server.requests[0]
    assert (recorded.method, recorded.path, recorded.json, recorded.headers["x-probe"]) == (
        "POST",
        "/v1/chat/completions",
        {"model": "m"},
        "1",
    )
    assert server.wait_closed(0)
    assert server.connections[0].closed_by == "client"


def test_an_unscripted_request_is_a_loud_500(server: FaultServer) -> None:
    response = post(server)
    assert response.status_code == 500
    assert "no behaviour was pushed" in response.text


def test_a_connection_close_body_is_closed_by_the_server(server: FaultServer) -> None:
    server.push(faults.text_stream(framing="close"))
    assert post(server).text.endswith("data: [DONE]\n\n")
    assert server.wait_closed(0)
    assert server.connections[0].closed_by == "server"


def test_a_reset_reaches_the_client_as_an_error(server: FaultServer) -> None:
    server.push(faults.reset_mid_stream())
    with pytest.raises(httpx.TransportError):
        post(server)
    assert server.wait_closed(0)
    assert server.connections[0].closed_by == "reset"


def test_a_stall_holds_the_socket_until_the_client_leaves(server: FaultServer) -> None:
    server.push(faults.stall_mid_stream())
    with pytest.raises(httpx.ReadTimeout):
        post(server, timeout=0.3)
    assert server.wait_closed(0)
    connection = server.connections[0]
    assert connection.stalled_at is not None
    assert connection.closed_by == "client"


def test_stop_closes_connections_that_are_still_stalled() -> None:
    with running() as server:
        server.push(faults.stall_before_headers())
        client = socket.create_connection(("127.0.0.1", server.port))
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        assert server.wait_for(server.stalled)
    with client:
        client.settimeout(2.0)
        assert client.recv(1024) == b""  # the server's side is gone
    assert server.connections[0].closed is not None
