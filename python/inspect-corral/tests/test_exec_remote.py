"""`exec_remote`: inspect's own implementation (its sandbox tools, injected
into the sandbox, run the command and are polled), through the proxy an
eval wraps every sandbox in."""

import anyio
import pytest
from inspect_ai.util import (
    ExecCompleted,
    ExecRemoteAwaitableOptions,
    ExecRemoteStreamingOptions,
    ExecStderr,
    ExecStdout,
)
from inspect_ai.util._sandbox._cli import SANDBOX_CLI
from inspect_ai.util._sandbox.events import SandboxEnvironmentProxy

pytestmark = pytest.mark.anyio


async def test_exec_remote(sandbox):
    proxy = SandboxEnvironmentProxy(sandbox)

    # awaitable: output, exit code, input, cwd, env, user
    r = await proxy.exec_remote(["sh", "-c", "echo out; echo err >&2; exit 3"], stream=False)
    assert (r.success, r.returncode, r.stdout, r.stderr) == (False, 3, "out\n", "err\n")
    opts = ExecRemoteAwaitableOptions(input="given", cwd="/tmp", env={"K": "v"}, user="user")
    r = await proxy.exec_remote(
        ["sh", "-c", 'cat; printf " %s %s %s" "$(pwd)" "$K" "$(id -u)"'], opts, stream=False
    )
    assert r.stdout == "given /tmp v 1000", r

    # the tools' server outlived the command that started it
    alive = await sandbox.exec(["sh", "-c", "ps -eo args | grep -c '[s]andbox-tools server'"])
    assert alive.stdout.strip() != "0", alive

    # streaming: events in order, then the exit
    proc = await proxy.exec_remote(["sh", "-c", "echo a; sleep 1; echo b >&2; exit 4"])
    events = [e async for e in proc]
    out = "".join(e.data for e in events if isinstance(e, ExecStdout))
    err = "".join(e.data for e in events if isinstance(e, ExecStderr))
    assert (out, err) == ("a\n", "b\n") and events[-1] == ExecCompleted(exit_code=4), events

    # a timeout kills it and raises
    with pytest.raises(TimeoutError):
        await proxy.exec_remote(
            ["sh", "-c", "sleep 60; touch /tmp/not-killed"],
            ExecRemoteAwaitableOptions(timeout=2),
            stream=False,
        )

    # kill() ends a long-running one
    proc = await proxy.exec_remote(
        ["sh", "-c", "echo $$ > /tmp/long.pid; exec sleep 300"], ExecRemoteStreamingOptions()
    )
    with anyio.fail_after(30):
        while not (await sandbox.exec(["test", "-s", "/tmp/long.pid"])).success:
            await anyio.sleep(0.2)
    await proc.kill()
    with anyio.fail_after(30):
        while (await sandbox.exec(["sh", "-c", 'kill -0 "$(cat /tmp/long.pid)"'])).success:
            await anyio.sleep(0.2)
    assert not (await sandbox.exec(["test", "-e", "/tmp/not-killed"])).success


async def test_only_the_tools_server_start_gets_its_own_session(sandbox):
    # an ordinary command's leftovers still die with it
    await sandbox.exec(["sh", "-c", "sleep 300 & echo $! > /tmp/left"])
    assert not (await sandbox.exec(["sh", "-c", 'kill -0 "$(cat /tmp/left)"'])).success
    # the start command runs through setsid (here: a missing launcher, whose
    # failure setsid reports as a result)
    r = await sandbox.exec([SANDBOX_CLI, "start-server"])
    assert not r.success and "setsid" in r.stderr, r
