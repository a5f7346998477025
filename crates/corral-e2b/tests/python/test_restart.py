"""A restart of `corral serve` with the same token file, through E2B's Python
SDK: a sandbox made before is listed, connected to and run in again with
its template, metadata and end time, and its old access token.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
The memory backend's sandboxes end with the server that made them, so
there the test is skipped.
"""

import os
import secrets
import tempfile

import pytest

from e2b import Sandbox, SandboxQuery

from conftest import BACKEND, serving

pytestmark = pytest.mark.skipif(
    BACKEND == "memory", reason="the memory backend's sandboxes end with the server"
)


def point_at(url, key):
    os.environ["E2B_API_URL"] = url
    os.environ["E2B_SANDBOX_URL"] = url
    os.environ["E2B_API_KEY"] = key


def test_a_sandbox_outlives_a_restart_of_serve():
    key = "e2b_" + secrets.token_hex(20)
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(key)
    tag = secrets.token_hex(4)
    sandbox_id = None
    try:
        with serving("--token-file", f.name) as (_, url):
            point_at(url, key)
            sandbox = Sandbox.create(metadata={"run": tag}, timeout=300)
            sandbox_id = sandbox.sandbox_id
            sandbox.commands.run("echo kept > /tmp/mark")
            before = sandbox.get_info()
        with serving("--token-file", f.name) as (_, url):
            point_at(url, key)
            listed = Sandbox.list(query=SandboxQuery(metadata={"run": tag})).next_items()
            assert [s.sandbox_id for s in listed] == [sandbox_id]
            again = Sandbox.connect(sandbox_id)
            info = again.get_info()
            assert (info.template_id, info.metadata) == (before.template_id, before.metadata)
            assert info.end_at >= before.end_at
            assert again.commands.run("cat /tmp/mark").stdout == "kept\n"
            assert again.kill()
            sandbox_id = None
    finally:
        if sandbox_id is not None:
            with serving("--token-file", f.name) as (_, url):
                point_at(url, key)
                Sandbox.kill(sandbox_id)
        os.unlink(f.name)
