"""Whom E2B's Python SDK runs commands as, against `corral serve`.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
On a backend declaring `run_as_user` (linux, run as root) a command runs as
the sandbox's `user` (uid 1000) by default and as root when asked; on any
other, both run as the backend's default user (see docs/e2b.md), neither
refused.
"""

import inspect
import os

import pytest

from e2b import Sandbox
from e2b.sandbox_sync.commands.command import Commands

from conftest import BACKEND
# The linux backend declares run_as_user unless it runs rootless.
RUNS_AS_USER = BACKEND == "linux" and os.geteuid() == 0


def takes_user():
    if "user" not in inspect.signature(Commands.run).parameters:
        pytest.skip("this SDK version's commands.run has no user parameter")


@pytest.mark.skipif(not RUNS_AS_USER, reason="the backend does not declare run_as_user")
def test_commands_run_as_the_user_by_default_and_root_when_asked(sbx):
    takes_user()
    assert sbx.commands.run("id -u").stdout.strip() == "1000"
    assert sbx.commands.run("id -u", user="user").stdout.strip() == "1000"
    assert sbx.commands.run("id -u", user="root").stdout.strip() == "0"
    shown = sbx.commands.run('echo "$HOME"; pwd; grep CapEff /proc/self/status').stdout
    assert shown.split("\n")[:2] == ["/home/user", "/home/user"]
    assert shown.split()[-1] == "0000000000000000", shown


@pytest.mark.skipif(not RUNS_AS_USER, reason="the backend does not declare run_as_user")
def test_the_user_cannot_reach_what_is_roots(sbx):
    takes_user()
    sbx.commands.run("umask 077; echo secret > /tmp/secret", user="root")
    assert sbx.commands.run("cat /tmp/secret", user="root").stdout == "secret\n"
    denied = sbx.commands.run("cat /tmp/secret >/dev/null 2>&1; echo $?").stdout.strip()
    assert denied != "0"
    denied = sbx.commands.run("touch /etc/owned 2>/dev/null; echo $?").stdout.strip()
    assert denied != "0"
    # What /files writes is root's, whoever the call names.
    sbx.files.write("uploaded.txt", "hi")
    assert sbx.commands.run("stat -c %u /home/user/uploaded.txt").stdout.strip() == "0"


@pytest.mark.skipif(RUNS_AS_USER, reason="the backend declares run_as_user")
def test_without_run_as_user_both_users_run_as_the_default(sbx):
    takes_user()
    assert sbx.commands.run("echo ran").stdout == "ran\n"
    assert sbx.commands.run("echo ran", user="user").stdout == "ran\n"
    assert sbx.commands.run("echo ran", user="root").stdout == "ran\n"
