"""`connection()`: none (the corral command line attaches no shell), and the
single-command line it offers instead reaches the same sandbox."""

import subprocess

import pytest
from inspect_ai.util._sandbox.context import sandbox_connections

pytestmark = pytest.mark.anyio


async def test_connection_is_not_implemented_and_says_why(sandbox):
    for user in (None, "user"):
        with pytest.raises(NotImplementedError) as ex:
            await sandbox.connection(user=user)
        msg = str(ex.value)
        assert sandbox.sandbox_id in msg and "cannot attach a shell" in msg
        assert "\n" not in msg
    # inspect's own caller skips a sandbox without connections
    assert await sandbox_connections({"default": sandbox}) == {}


async def test_the_offered_command_reaches_the_same_sandbox(sandbox):
    await sandbox.write_file("seen-by-cli.txt", "written through the plugin")
    argv = sandbox.cli_exec_command()
    got = subprocess.run(
        argv + ["cat", "/workspace/seen-by-cli.txt"], capture_output=True, text=True, timeout=60
    )
    assert (got.returncode, got.stdout) == (0, "written through the plugin"), got
    # and the other way round, through the shell line the message shows
    with pytest.raises(NotImplementedError) as ex:
        await sandbox.connection()
    line = str(ex.value).split("run single commands with: ", 1)[1]
    assert line.endswith(" CMD...")
    shell = line[: -len(" CMD...")] + " sh -c 'echo from-cli > /tmp/from-cli'"
    got = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got
    assert await sandbox.read_file("/tmp/from-cli") == "from-cli\n"
