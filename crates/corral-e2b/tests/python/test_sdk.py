"""E2B's own Python SDK, unmodified, against `corral serve`.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
The same file runs under every pinned SDK version (requirements-e2b-*.txt);
a call a version does not have is a skip that names it.
"""

import re
import secrets
import time
import urllib.error
import urllib.request
from importlib.metadata import version

import pytest
from conftest import BACKEND, serving

from e2b import Sandbox, SandboxQuery
from e2b.exceptions import AuthenticationException, NotFoundException, TimeoutException
from e2b.sandbox.commands.command_handle import CommandExitException
from e2b.sandbox_sync.commands.command import Commands

SDK_VERSION = tuple(int(part) for part in version("e2b").split(".")[:2])


def listed(metadata):
    paginator = Sandbox.list(query=SandboxQuery(metadata=metadata))
    return sorted(s.sandbox_id for s in paginator.next_items())


# A refusal answered before its body is read leaves the pooled connection
# fit for the calls after it (or closes it saying so).
def test_wrong_api_key_is_refused(server):
    with pytest.raises(AuthenticationException):
        Sandbox.list(api_key="e2b_" + "0" * 40).next_items()
    with pytest.raises(AuthenticationException):
        Sandbox.create(api_key="e2b_" + "0" * 40)
    sandbox = Sandbox.create()
    try:
        assert sandbox.commands.run("echo after").stdout == "after\n"
    finally:
        sandbox.kill()


def test_serve_without_a_token_file_generates_an_e2b_key():
    with serving(backend="memory") as (proc, url):
        second = proc.stdout.readline()
        found = re.fullmatch(r"corral: token (e2b_[0-9a-f]{40}) \(generated: no --token-file\)\n", second)
        assert found, f"corral serve printed {second!r}"
        request = urllib.request.Request(url + "/v2/sandboxes", headers={"X-API-KEY": found.group(1)})
        with urllib.request.urlopen(request) as answer:
            assert answer.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/v2/sandboxes")
        assert refused.value.code == 401


def test_get_info_reports_the_backends_default_size(sbx):
    info = sbx.get_info()
    if not hasattr(info, "cpu_count"):
        pytest.skip("this SDK version's SandboxInfo has no cpu_count")
    # The SDK's SandboxInfo carries no disk size; the Rust tests read it.
    size = (info.cpu_count, info.memory_mb)
    if BACKEND == "linux":
        # One CPU and 1 GiB of memory where cgroups are usable (0: no
        # limit enforced).
        assert size in [(1, 1024), (0, 0)], size
    else:
        # The other backends enforce no default size.
        assert size == (0, 0), size


def test_create_info_list_timeout_kill(server):
    tag = secrets.token_hex(4)
    sandbox = Sandbox.create(metadata={"suite": "sdk", "run": tag}, timeout=120)
    try:
        info = sandbox.get_info()
        assert info.sandbox_id == sandbox.sandbox_id
        assert info.metadata == {"suite": "sdk", "run": tag}
        assert info.template_id == "base"
        assert info.end_at > info.started_at

        assert listed({"run": tag}) == [sandbox.sandbox_id]
        assert listed({"run": "no-" + tag}) == []

        sandbox.set_timeout(300)
        assert sandbox.get_info().end_at > info.end_at
        assert sandbox.is_running()
    finally:
        assert sandbox.kill()
    assert not Sandbox.kill(sandbox.sandbox_id)
    assert listed({"run": tag}) == []
    with pytest.raises(NotFoundException):
        Sandbox.get_info(sandbox.sandbox_id)


# Before 2.30 (2.8 among the pinned versions), `Sandbox.connect` builds
# the connected sandbox without the `E2b-Sandbox-Id` header: its envd
# calls carry only `X-Access-Token`, by which corral routes them.
def test_connect_by_id(server):
    sandbox = Sandbox.create()
    try:
        again = Sandbox.connect(sandbox.sandbox_id)
        assert again.sandbox_id == sandbox.sandbox_id
        assert again.commands.run("echo connected").stdout == "connected\n"
        again.files.write("/tmp/from-connected.txt", "seen")
        assert sandbox.files.read("/tmp/from-connected.txt") == "seen"
    finally:
        sandbox.kill()


def test_foreground_run_streams_to_callbacks(sbx):
    out, err = [], []
    result = sbx.commands.run(
        'echo "out $GREETING"; echo err >&2; pwd',
        envs={"GREETING": "hello"},
        cwd="/tmp",
        on_stdout=out.append,
        on_stderr=err.append,
    )
    assert result.exit_code == 0
    assert result.stdout == "out hello\n/tmp\n"
    assert result.stderr == "err\n"
    assert "".join(out) == result.stdout
    assert "".join(err) == result.stderr


def test_nonzero_exit_raises(sbx):
    with pytest.raises(CommandExitException) as raised:
        sbx.commands.run("echo failing >&2; exit 3")
    assert raised.value.exit_code == 3
    assert raised.value.stderr == "failing\n"


def test_background_list_kill(sbx):
    handle = sbx.commands.run("sleep 60", background=True)
    assert handle.pid in [p.pid for p in sbx.commands.list()]
    assert sbx.commands.kill(handle.pid)
    with pytest.raises(CommandExitException):
        handle.wait()
    for _ in range(50):
        if handle.pid not in [p.pid for p in sbx.commands.list()]:
            break
        time.sleep(0.1)
    assert handle.pid not in [p.pid for p in sbx.commands.list()]
    assert not sbx.commands.kill(handle.pid)


def test_background_run_waits_for_output(sbx):
    handle = sbx.commands.run("sleep 0.2; echo done", background=True)
    result = handle.wait()
    assert result.exit_code == 0
    assert result.stdout == "done\n"


def test_connect_to_a_running_command(sbx):
    handle = sbx.commands.run("sleep 1; echo late; exit 3", background=True)
    attached = sbx.commands.connect(handle.pid)
    with pytest.raises(CommandExitException) as ended:
        attached.wait()
    assert (ended.value.exit_code, ended.value.stdout) == (3, "late\n")
    with pytest.raises(CommandExitException) as started:
        handle.wait()
    assert (started.value.exit_code, started.value.stdout) == (3, "late\n")
    with pytest.raises(NotFoundException):
        sbx.commands.connect(4_000_000).wait()


def test_stdin(sbx):
    handle = sbx.commands.run("head -n 1", background=True, stdin=True)
    sbx.commands.send_stdin(handle.pid, "through stdin\n")
    result = handle.wait()
    assert result.stdout == "through stdin\n"


@pytest.mark.skipif(
    not hasattr(Commands, "close_stdin"),
    reason="this SDK version has no commands.close_stdin",
)
def test_close_stdin(sbx):
    handle = sbx.commands.run("cat", background=True, stdin=True)
    sbx.commands.send_stdin(handle.pid, "until eof")
    sbx.commands.close_stdin(handle.pid)
    assert handle.wait().stdout == "until eof"


def test_command_timeout(sbx):
    started = time.monotonic()
    with pytest.raises(TimeoutException):
        sbx.commands.run("sleep 30", timeout=1)
    assert time.monotonic() - started < 15


def test_files(sbx):
    files = sbx.files
    files.write("/tmp/work/hello.txt", "hello from the sdk")
    assert files.read("/tmp/work/hello.txt") == "hello from the sdk"
    files.write("relative.bin", b"\x00\x01bytes\xff")
    assert files.read("/home/user/relative.bin", format="bytes") == b"\x00\x01bytes\xff"

    assert files.exists("/tmp/work/hello.txt")
    assert not files.exists("/tmp/work/absent.txt")
    with pytest.raises(NotFoundException):
        files.read("/tmp/work/absent.txt")

    assert files.make_dir("/tmp/work/sub")
    assert not files.make_dir("/tmp/work/sub")
    names = sorted(e.name for e in files.list("/tmp/work"))
    assert names == ["hello.txt", "sub"]
    kinds = {e.name: e.type.value for e in files.list("/tmp/work")}
    assert kinds == {"hello.txt": "file", "sub": "dir"}
    assert files.get_info("/tmp/work/hello.txt").size == 18

    written = files.write_files(
        [{"path": "/tmp/work/a.txt", "data": "a"}, {"path": "/tmp/work/b.txt", "data": "b"}]
    )
    assert sorted(w.path for w in written) == ["/tmp/work/a.txt", "/tmp/work/b.txt"]
    assert files.read("/tmp/work/b.txt") == "b"
    files.write("/tmp/work/sub/deep.txt", "deep")
    deep = sorted(e.path for e in files.list("/tmp/work", depth=2))
    assert deep == [
        "/tmp/work/a.txt",
        "/tmp/work/b.txt",
        "/tmp/work/hello.txt",
        "/tmp/work/sub",
        "/tmp/work/sub/deep.txt",
    ]

    moved = files.rename("/tmp/work/hello.txt", "/tmp/work/sub/moved.txt")
    assert moved.path == "/tmp/work/sub/moved.txt"
    assert not files.exists("/tmp/work/hello.txt")
    assert files.read("/tmp/work/sub/moved.txt") == "hello from the sdk"
    assert sbx.commands.run("cat /tmp/work/sub/moved.txt").stdout == "hello from the sdk"

    files.remove("/tmp/work/sub/moved.txt")
    assert not files.exists("/tmp/work/sub/moved.txt")
    files.remove("/tmp/work")
    assert not files.exists("/tmp/work")


def test_two_sandboxes_stay_apart(server):
    first = Sandbox.create()
    second = Sandbox.create()
    try:
        assert first.sandbox_id != second.sandbox_id
        first.files.write("/tmp/mine.txt", "first")
        second.files.write("/tmp/mine.txt", "second")
        assert first.files.read("/tmp/mine.txt") == "first"
        assert second.files.read("/tmp/mine.txt") == "second"
        first.files.write("/tmp/only-first.txt", "x")
        assert not second.files.exists("/tmp/only-first.txt")
        assert second.commands.run("cat /tmp/mine.txt").stdout == "second"

        handle = first.commands.run("sleep 60", background=True)
        assert [p.pid for p in first.commands.list()] == [handle.pid]
        assert second.commands.list() == []
        first.commands.kill(handle.pid)
    finally:
        first.kill()
        second.kill()
