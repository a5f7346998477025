import time

import pytest
from inspect_ai.util import ExecResult, OutputLimitExceededError
from inspect_ai.util._sandbox.environment import SandboxUserUnsupportedError
from inspect_ai.util._sandbox.limits import override_max_exec_output_size

from inspect_corral._sandbox import _exec_error
from inspect_corral._server import CorralError

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("given", ["text in\n", b"bytes\x00\xff in\n"])
async def test_input_is_stdin(sandbox, given):
    r = await sandbox.exec(["sh", "-c", "cat | od -An -c"], input=given)
    assert r.success, r
    raw = given.encode() if isinstance(given, str) else given
    expected = (await sandbox.exec(["sh", "-c", "od -An -c"], input=raw)).stdout
    assert r.stdout == expected


async def test_no_input_is_eof(sandbox):
    r = await sandbox.exec(["cat"], timeout=10)
    assert r.success and r.stdout == ""


async def test_cwd_default_absolute_and_relative(sandbox):
    assert (await sandbox.exec(["pwd"])).stdout == "/workspace\n"
    assert (await sandbox.exec(["pwd"], cwd="/tmp")).stdout == "/tmp\n"
    await sandbox.write_file("sub/dir/f", "x")
    assert (await sandbox.exec(["pwd"], cwd="sub/dir")).stdout == "/workspace/sub/dir\n"


@pytest.mark.parametrize(
    "cwd,shown", [("nowhere", "/workspace/nowhere"), ("/no/such/dir", "/no/such/dir"),
                  ("/etc/hostname", "/etc/hostname")]
)
async def test_missing_cwd_is_a_failed_result(sandbox, cwd, shown):
    r = await sandbox.exec(["pwd"], cwd=cwd)
    assert (r.success, r.returncode, r.stdout) == (False, 126, "")
    assert f'working directory "{shown}"' in r.stderr and r.stderr.count("\n") == 1, r


async def test_env_is_added(sandbox):
    r = await sandbox.exec(["sh", "-c", 'printf %s "$A|$B"'], env={"A": "1", "B": "two words"})
    assert r.stdout == "1|two words"


@pytest.mark.parametrize(
    "user,uid",
    [(None, "0"), ("root", "0"), ("0", "0"), ("user", "1000"), ("1000", "1000")],
)
async def test_user(sandbox, user, uid):
    r = await sandbox.exec(["id", "-u"], user=user, cwd="/tmp")
    assert r.stdout == f"{uid}\n", r
    if uid == "1000":
        assert (await sandbox.exec(["sh", "-c", "echo $HOME"], user=user)).stdout == "/home/user\n"


@pytest.mark.parametrize("user", ["nobody", "admin", "1001", ""])
async def test_unknown_user_is_refused(sandbox, user):
    with pytest.raises(SandboxUserUnsupportedError):
        await sandbox.exec(["id"], user=user)


async def test_exit_code_and_stderr(sandbox):
    r = await sandbox.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.success, r.returncode, r.stdout, r.stderr) == (False, 3, "out\n", "err\n")


async def test_missing_program_raises_permission_error(sandbox):
    with pytest.raises(PermissionError) as ex:
        await sandbox.exec(["no-such-program"], cwd="/tmp", user="user")
    assert ex.value.filename == "no-such-program"
    assert "command not found" in ex.value.strerror


# How corral's exec errors become inspect's, from the error line's code and
# typed opening (the not-executable rows cannot be provoked on every corral
# build, so the mapping is checked directly too).
@pytest.mark.parametrize(
    "code,message,expected",
    [
        ("not_found", 'command not found: "nope"', PermissionError),
        ("invalid_input", 'command is not executable: "/etc/hostname"', PermissionError),
        ("permission_denied", "exec: permission denied", PermissionError),
        ("not_found", 'working directory "/w/x": no such directory', ExecResult),
        ("invalid_input", 'malformed command "x"', CorralError),
        ("quota", "output over 64 MiB", CorralError),
    ],
)
def test_exec_error_mapping(code, message, expected):
    got = _exec_error(CorralError("exec", code, message), "prog")
    assert isinstance(got, expected), got
    if isinstance(got, PermissionError):
        assert (got.filename, got.strerror) == ("prog", message)


def test_a_missing_sandbox_is_not_a_missing_program():
    err = CorralError("exec", "not_found", 'no sandbox with id "x"', missing_sandbox=True)
    assert _exec_error(err, "prog") is err


async def test_timeout_kills_the_process_group(sandbox):
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        await sandbox.exec(
            ["sh", "-c", "sleep 300 & echo $! > /tmp/child; wait"], timeout=1, timeout_retry=False
        )
    assert time.monotonic() - start < 20
    alive = await sandbox.exec(["sh", "-c", 'kill -0 "$(cat /tmp/child)"'])
    assert not alive.success, "the background child outlived the timeout"


async def test_timeout_retry_tries_three_times(sandbox):
    with pytest.raises(TimeoutError):
        await sandbox.exec(["sh", "-c", "echo x >> /tmp/tries; sleep 60"], timeout=1)
    assert (await sandbox.read_file("/tmp/tries")) == "x\nx\nx\n"


async def test_output_limit(sandbox):
    with override_max_exec_output_size(1000):
        ok = await sandbox.exec(["sh", "-c", "head -c 1000 /dev/zero | tr '\\0' a"])
        assert len(ok.stdout) == 1000
        with pytest.raises(OutputLimitExceededError) as ex:
            await sandbox.exec(["sh", "-c", "yes | head -c 100000000; sleep 60"], timeout=120)
        assert ex.value.truncated_output is not None
        assert len(ex.value.truncated_output) <= 1000


async def test_huge_output_is_bounded_on_stderr_too(sandbox):
    with override_max_exec_output_size(4096):
        start = time.monotonic()
        with pytest.raises(OutputLimitExceededError):
            await sandbox.exec(["sh", "-c", "yes >&2"], timeout=60)
        assert time.monotonic() - start < 30
    assert (await sandbox.exec(["echo", "still alive"])).stdout == "still alive\n"
