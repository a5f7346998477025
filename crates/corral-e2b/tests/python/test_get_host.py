"""E2B's own Python SDK, unmodified, against `corral serve`: a server the
workload starts on a port never declared is reached through
`sandbox.get_host(port)`, with `corral serve` as the proxy.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND: memory (the
default; its sandboxes have no ports, so the proxy answers 501) or linux.
Others are skipped (the local backend's commands see host paths, not the
files the SDK wrote).
"""

import http.client
import json
import time
from urllib.parse import urlparse

import pytest

from conftest import BACKEND


def get(server, host, path="/"):
    """GET `path` from `corral serve` with `host` as the Host header."""
    address = urlparse(server)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=20)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_get_host_reaches_an_undeclared_port(server):
    from e2b import Sandbox

    if BACKEND not in ("memory", "linux"):
        pytest.skip(f"written for the memory and linux backends, not {BACKEND}")

    sbx = Sandbox.create()
    try:
        host = sbx.get_host(8080)
        assert host.startswith(f"8080-{sbx.sandbox_id}.")
        if BACKEND == "memory":
            status, body = get(server, host)
            assert status == 501, body
            assert json.loads(body)["code"] == 501
            return
        sbx.files.write("/home/user/served/hello-get-host.txt", "hi")
        sbx.commands.run(
            "cd /home/user/served && python3 -m http.server 8080 --bind 127.0.0.1",
            background=True,
        )
        deadline = time.monotonic() + 30
        status, body = None, ""
        while time.monotonic() < deadline:
            status, body = get(server, host)
            if status == 200:
                break
            assert status == 502, body
            time.sleep(0.2)
        assert status == 200, body
        assert "hello-get-host.txt" in body
        status, body = get(server, host, "/hello-get-host.txt")
        assert (status, body) == (200, "hi")
        # A wire path addressed to the port is the port's: http.server's 404.
        status, body = get(server, host, "/v1/create")
        assert status == 404 and "File not found" in body, body
        # Nothing on another port: 502, one line.
        status, body = get(server, sbx.get_host(8081))
        assert status == 502, body
        assert "nothing listens" in json.loads(body)["message"]
    finally:
        sbx.kill()
    status, _ = get(server, sbx.get_host(8080))
    assert status == 404


ECHO_SERVER = r"""
import socket, threading
def serve(conn):
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.recv(1024)
        if not chunk:
            return
        head += chunk
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n")
    while True:
        data = conn.recv(65536)
        if not data:
            break
        conn.sendall(data)
    conn.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 49999))
s.listen()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def test_get_host_relays_an_upgrade_byte_for_byte(server):
    import socket

    from e2b import Sandbox

    if BACKEND != "linux":
        pytest.skip(f"written for the linux backend, not {BACKEND}")
    sbx = Sandbox.create()
    try:
        sbx.files.write("/home/user/echo.py", ECHO_SERVER)
        sbx.commands.run("python3 /home/user/echo.py", background=True)
        address = urlparse(server)
        head = (
            f"GET /ws HTTP/1.1\r\nHost: {sbx.get_host(49999)}\r\n"
            "Connection: Upgrade\r\nUpgrade: echo\r\n\r\n"
        ).encode()
        deadline = time.monotonic() + 30
        answer = b""
        while time.monotonic() < deadline:
            conn = socket.create_connection((address.hostname, address.port), timeout=20)
            conn.sendall(head)
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = conn.recv(1)
                if not chunk:
                    break
                answer += chunk
            if answer.startswith(b"HTTP/1.1 101"):
                break
            conn.close()
            time.sleep(0.2)
        assert answer.startswith(b"HTTP/1.1 101"), answer
        for message in [b"ping", b"\x00\xff binary \r\n", b"x" * 100000]:
            conn.sendall(message)
            back = b""
            while len(back) < len(message):
                back += conn.recv(65536)
            assert back == message
        conn.close()
    finally:
        sbx.kill()
