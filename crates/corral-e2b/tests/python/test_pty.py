"""Terminals through E2B's Python SDK (`sandbox.pty`), against `corral serve`.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
The SDK opens `/bin/bash -i -l` on the terminal, which needs a backend with
terminals running a real bash: the linux backend. The memory backend has
terminals over a simulated shell that does not run bash interactively, and
the other backends have none (a pty is refused there as unimplemented,
which the Rust tests prove), so elsewhere these tests are skipped.
"""

import threading

import pytest

from e2b import CommandExitException

from conftest import BACKEND

pytestmark = pytest.mark.skipif(
    BACKEND != "linux",
    reason=f"the {BACKEND} backend has no terminal running a real bash (linux has)",
)


def pty_size(cols, rows):
    try:
        from e2b import PtySize
    except ImportError:
        pytest.skip("this SDK version exports no PtySize")
    return PtySize(cols=cols, rows=rows)


class Shown:
    """What a terminal showed, gathered by `on_pty` in a thread of its own."""

    def __init__(self, handle):
        self.chunks = []
        self.exit = None
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._wait, args=(handle,), daemon=True)
        self.thread.start()

    def _wait(self, handle):
        try:
            handle.wait(on_pty=self._on)
            self.exit = 0
        except CommandExitException as e:
            self.exit = e.exit_code

    def _on(self, data):
        with self.cond:
            self.chunks.append(bytes(data))
            self.cond.notify_all()

    def text(self):
        with self.cond:
            return b"".join(self.chunks).decode(errors="replace")

    def wait_for(self, needle, seconds=30):
        """Waits (bounded) until the terminal has shown `needle`."""
        with self.cond:
            self.cond.wait_for(lambda: needle in b"".join(self.chunks).decode(errors="replace"), seconds)
        assert needle in self.text(), f"{needle!r} never shown: {self.text()!r}"

    def ended(self, seconds=30):
        self.thread.join(seconds)
        assert not self.thread.is_alive(), f"the terminal never ended: {self.text()!r}"
        return self.exit


def test_a_pty_runs_bash_takes_keystrokes_resizes_and_exits_with_its_code(sbx):
    handle = sbx.pty.create(pty_size(80, 24), timeout=60)
    shown = Shown(handle)
    # What the shell prints, not the keystrokes the terminal echoes.
    sbx.pty.send_stdin(handle.pid, b"echo hi-$((1+2))\n")
    shown.wait_for("hi-3")
    sbx.pty.send_stdin(handle.pid, b"stty size\n")
    shown.wait_for("24 80")
    sbx.pty.resize(handle.pid, pty_size(132, 43))
    sbx.pty.send_stdin(handle.pid, b"stty size\n")
    shown.wait_for("43 132")
    sbx.pty.send_stdin(handle.pid, b"exit 3\n")
    assert shown.ended() == 3


def test_a_pty_is_killed_and_listed_as_any_process(sbx):
    handle = sbx.pty.create(pty_size(80, 24), timeout=60)
    shown = Shown(handle)
    sbx.pty.send_stdin(handle.pid, b"echo ready-$((1+2))\n")
    shown.wait_for("ready-3")
    assert handle.pid in [p.pid for p in sbx.commands.list()]
    assert sbx.pty.kill(handle.pid)
    assert shown.ended() != 0
    assert handle.pid not in [p.pid for p in sbx.commands.list()]
