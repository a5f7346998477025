"""E2B's own Python SDK, unmodified, against `corral serve`.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
"""

import os
import re
import subprocess
import secrets
import tempfile

import pytest


@pytest.fixture(scope="module")
def server():
    binary = os.environ.get("CORRAL_BIN", "target/debug/corral")
    backend = os.environ.get("CORRAL_BACKEND", "memory")
    key = "e2b_" + secrets.token_hex(20)
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(key)
    proc = subprocess.Popen(
        [binary, "serve", "--backend", backend, "--listen", "127.0.0.1:0", "--token-file", f.name],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    url = re.search(r"http://\S+", line).group(0)
    os.environ["E2B_API_URL"] = url
    os.environ["E2B_SANDBOX_URL"] = url
    os.environ["E2B_API_KEY"] = key
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    os.unlink(f.name)


def test_create_run_files_kill(server):
    from e2b import Sandbox

    sbx = Sandbox.create(metadata={"suite": "sdk"})
    try:
        result = sbx.commands.run("echo hi")
        assert result.exit_code == 0
        assert result.stdout == "hi\n"

        sbx.files.write("/tmp/hello.txt", "hello from the sdk")
        assert sbx.files.read("/tmp/hello.txt") == "hello from the sdk"
        sbx.files.write("relative.txt", b"bytes")
        assert sbx.files.read("/home/user/relative.txt", format="bytes") == b"bytes"

        info = sbx.get_info()
        assert info.sandbox_id == sbx.sandbox_id
        listed = Sandbox.list(query=__import__("e2b").SandboxQuery(metadata={"suite": "sdk"})).next_items()
        assert [s.sandbox_id for s in listed] == [sbx.sandbox_id]
        sbx.set_timeout(60)
    finally:
        assert sbx.kill()
    assert not Sandbox.kill(sbx.sandbox_id)


def test_nonzero_exit_and_missing_file(server):
    from e2b import Sandbox
    from e2b.exceptions import NotFoundException
    from e2b.sandbox.commands.command_handle import CommandExitException

    sbx = Sandbox.create()
    try:
        with pytest.raises(CommandExitException):
            sbx.commands.run("exit 3")
        with pytest.raises(NotFoundException):
            sbx.files.read("/tmp/absent")
    finally:
        sbx.kill()


def test_wrong_api_key_is_refused(server):
    from e2b import Sandbox
    from e2b.exceptions import AuthenticationException

    with pytest.raises(AuthenticationException):
        Sandbox.create(api_key="e2b_" + "0" * 40)
