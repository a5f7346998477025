import os
import signal
import subprocess
import sys
import textwrap

import anyio
import pytest

from inspect_corral import CorralSandboxConfig
from inspect_corral import CorralSandboxEnvironment as C
from inspect_corral._sandbox import LABEL, RUN_ID, RUN_LABEL, _ours

pytestmark = pytest.mark.anyio


def test_registered_under_corral():
    from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

    assert registry_find_sandboxenv("corral") is C


def test_default_concurrency():
    assert C.default_concurrency() == 2 * (os.cpu_count() or 1)


def test_config_deserialize():
    cfg = C.config_deserialize({"memory": "256m", "env": {"K": "v"}})
    assert isinstance(cfg, CorralSandboxConfig) and cfg.env == {"K": "v"}


async def test_config_is_applied():
    cfg = CorralSandboxConfig(memory="256m", pids=64, env={"FROM_CONFIG": "yes"},
                              working_dir="/srv/work")
    await C.task_init("t", cfg)
    envs = await C.sample_init("t", cfg, {})
    try:
        s = envs["default"]
        r = await s.exec(["sh", "-c", "echo $FROM_CONFIG; pwd"])
        assert r.stdout == "yes\n/srv/work\n"
        await s.write_file("rel.txt", "x")
        assert (await s.exec(["cat", "/srv/work/rel.txt"])).stdout == "x"
        # loopback only by default
        r = await s.exec(["sh", "-c", "tail -n +3 /proc/net/dev | cut -d: -f1"])
        assert r.stdout.split() == ["lo"], r
    finally:
        await C.sample_cleanup("t", cfg, envs, False)


async def test_bad_config_fails_task_init():
    with pytest.raises(ValueError):
        await C.task_init("t", "compose.yaml")


async def test_several_sandboxes_at_once_are_separate():
    n = 5
    made: list[dict] = [None] * n  # type: ignore[list-item]

    async def one(i: int) -> None:
        made[i] = await C.sample_init("t", None, {})
        await made[i]["default"].write_file("mine", str(i))

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
    try:
        ids = {m["default"].sandbox_id for m in made}
        assert len(ids) == n
        outs = []
        spans = []

        async def read(i: int) -> None:
            script = "date +%s%N; sleep 1; date +%s%N; cat mine"
            r = await made[i]["default"].exec(["sh", "-c", script])
            began, ended, mine = r.stdout.split("\n", 2)
            spans.append((int(began), int(ended)))
            outs.append((i, mine))

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(read, i)
        assert sorted(outs) == [(i, str(i)) for i in range(n)]
        # Concurrent, not one after another: by the clock the sandboxes
        # share with the host, every command began before any ended (an
        # order, not a duration, so a slow machine holds it too).
        assert max(b for b, _ in spans) < min(e for _, e in spans), spans
    finally:
        async with anyio.create_task_group() as tg:
            for m in made:
                tg.start_soon(C.sample_cleanup, "t", None, m, False)
    assert not ids & set(await _ours({LABEL: "1"}))


async def test_no_cleanup_keeps_and_prints_then_cli_cleanup_removes(capsys):
    envs = await C.sample_init("t", None, {})
    sid = envs["default"].sandbox_id
    await C.task_cleanup("t", None, cleanup=False)
    printed = capsys.readouterr().out
    assert sid in printed and "inspect sandbox cleanup corral" in printed
    assert sid in await _ours({RUN_LABEL: RUN_ID})
    await C.cli_cleanup(sid)
    assert sid not in await _ours({LABEL: "1"})


async def test_task_cleanup_removes_what_samples_left():
    envs = await C.sample_init("t", None, {})
    sid = envs["default"].sandbox_id
    await C.task_cleanup("t", None, cleanup=True)
    assert sid not in await _ours({LABEL: "1"})


async def test_cli_cleanup_refuses_a_sandbox_it_did_not_make():
    with pytest.raises(ValueError, match="not a sandbox that inspect-corral made"):
        await C.cli_cleanup("lnx-0000000000000000")


async def test_an_interrupted_run_is_cleaned_up_by_cli_cleanup():
    # A run that is killed (SIGKILL) between making its sandboxes and
    # cleaning them up: its server goes with it, its sandboxes stay.
    child = textwrap.dedent(
        """
        import anyio, os, signal, sys
        from inspect_corral import CorralSandboxEnvironment as C
        from inspect_corral import _server
        async def main():
            ids = []
            for _ in range(2):
                envs = await C.sample_init("t", None, {})
                ids.append(envs["default"].sandbox_id)
            print(_server._server.proc.pid, *ids, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        anyio.run(main)
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    server_pid, *ids = proc.stdout.split()
    for _ in range(100):  # the orphaned server ends on its parent's death
        if not os.path.exists(f"/proc/{server_pid}") or _zombie(server_pid):
            break
        await anyio.sleep(0.1)
    else:
        pytest.fail(f"the killed run's corral serve {server_pid} outlived it")
    left = set(await _ours({LABEL: "1"}))
    assert set(ids) <= left
    await C.cli_cleanup(None)
    assert not set(ids) & set(await _ours({LABEL: "1"}))


def _zombie(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
