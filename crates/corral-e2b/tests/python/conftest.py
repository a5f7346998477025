"""What every suite here shares: one `corral serve` per test module, pointed
at by the environment variables E2B's SDK reads, and a sandbox per test.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
"""

import contextlib
import os
import re
import secrets
import subprocess
import tempfile

import pytest

BACKEND = os.environ.get("CORRAL_BACKEND", "memory")
CORRAL_BIN = os.environ.get("CORRAL_BIN", "target/debug/corral")


@contextlib.contextmanager
def serving(*args, backend=BACKEND):
    """`corral serve --backend BACKEND --listen 127.0.0.1:0 ARGS…`: yields the
    process and the URL its first line prints; ends it afterwards."""
    proc = subprocess.Popen(
        [CORRAL_BIN, "serve", "--backend", backend, "--listen", "127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        found = re.search(r"http://\S+", line)
        assert found, f"corral serve printed {line!r}"
        yield proc, found.group(0)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def server():
    """A server with a token file holding an `e2b_<hex>` key, and the SDK's
    three variables pointing at it."""
    key = "e2b_" + secrets.token_hex(20)
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(key)
    try:
        with serving("--token-file", f.name) as (_, url):
            os.environ["E2B_API_URL"] = url
            os.environ["E2B_SANDBOX_URL"] = url
            os.environ["E2B_API_KEY"] = key
            yield url
    finally:
        os.unlink(f.name)


@pytest.fixture
def sbx(server):
    """A sandbox of `server`, killed after the test."""
    from e2b import Sandbox

    sandbox = Sandbox.create()
    try:
        yield sandbox
    finally:
        sandbox.kill()
