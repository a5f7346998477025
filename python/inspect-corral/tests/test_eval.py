"""One `inspect eval --sandbox corral` end to end, offline (mock model)."""

import glob
import os
import subprocess
import sys

from inspect_ai.log import read_eval_log

from inspect_corral._sandbox import LABEL

HERE = os.path.dirname(os.path.abspath(__file__))


def _inspect() -> str:
    return os.path.join(os.path.dirname(sys.executable), "inspect")


def test_inspect_eval_runs_the_tool_in_corral(tmp_path):
    logs = tmp_path / "logs"
    proc = subprocess.run(
        [_inspect(), "eval", "probe.py", "--model", "mockllm/model", "--sandbox", "corral",
         "--log-dir", str(logs), "--display", "plain", "--no-log-realtime"],
        cwd=os.path.join(HERE, "tasks"), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [path] = glob.glob(str(logs / "*.eval"))
    log = read_eval_log(path)
    assert log.status == "success", log.error
    assert log.samples and len(log.samples) == 2
    greetings = set()
    for sample in log.samples:
        tool = [m for m in sample.messages if m.role == "tool"]
        assert len(tool) == 1 and tool[0].error is None, tool
        first, second = tool[0].text.strip().split("\n")
        # /etc/hostname inside a corral linux sandbox is its id
        assert first.startswith("inside-lnx-") and first.endswith("-uid0"), first
        greetings.add(second)
    assert greetings == {"hello from the sample", "hello again"}
    assert log.results.scores[0].metrics["accuracy"].value == 1.0


def test_eval_leaves_no_sandbox_behind():
    from inspect_corral._server import server

    # every sandbox of the eval above is gone (the eval ran in its own process)
    mine = [s for s in server().call("list", {"labels": {LABEL: "1"}})]
    assert mine == [], mine


def test_no_sandbox_cleanup_keeps_them_for_inspect_sandbox_cleanup(tmp_path):
    proc = subprocess.run(
        [_inspect(), "eval", "probe.py", "--model", "mockllm/model", "--sandbox", "corral",
         "--log-dir", str(tmp_path / "logs"), "--display", "plain", "--no-sandbox-cleanup"],
        cwd=os.path.join(HERE, "tasks"), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "corral sandboxes kept" in proc.stdout, proc.stdout[-2000:]
    printed = {w for w in proc.stdout.split() if w.startswith("lnx-")}
    assert len(printed) == 2, proc.stdout[-2000:]

    from inspect_corral._server import server

    kept = {s["id"] for s in server().call("list", {"labels": {LABEL: "1"}})}
    assert printed <= kept
    one, other = sorted(printed)
    for args in (["corral", one], ["corral"]):
        done = subprocess.run([_inspect(), "sandbox", "cleanup", *args],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    assert not printed & {s["id"] for s in server().call("list", {"labels": {LABEL: "1"}})}
