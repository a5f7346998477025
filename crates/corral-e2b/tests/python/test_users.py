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


@pytest.mark.skipif(RUNS_AS_USER, reason="the backend declares run_as_user")
def test_without_run_as_user_both_users_run_as_the_default(sbx):
    takes_user()
    assert sbx.commands.run("echo ran").stdout == "ran\n"
    assert sbx.commands.run("echo ran", user="user").stdout == "ran\n"
    assert sbx.commands.run("echo ran", user="root").stdout == "ran\n"


@pytest.mark.skipif(not RUNS_AS_USER, reason="the backend does not declare run_as_user")
def test_files_written_for_the_user_are_the_users(sbx):
    takes_user()
    # Written for `user` (the default): the user's, so a command run as the
    # user rewrites it; its new parent directories are the user's too.
    sbx.files.write("made/for/user.txt", "hi")
    owners = sbx.commands.run("stat -c %u:%g made made/for made/for/user.txt").stdout.split()
    assert owners == ["1000:1000"] * 3, owners
    sbx.commands.run("echo rewritten > made/for/user.txt")
    assert sbx.files.read("made/for/user.txt") == "rewritten\n"
    sbx.files.make_dir("made/dir")
    assert sbx.commands.run("stat -c %u made/dir").stdout.strip() == "1000"
    # Written for root: root's, and the user cannot rewrite it.
    sbx.files.write("/tmp/roots.txt", "hi", user="root")
    assert sbx.commands.run("stat -c %u /tmp/roots.txt").stdout.strip() == "0"
    denied = sbx.commands.run("echo x > /tmp/roots.txt 2>/dev/null; echo $?").stdout.strip()
    assert denied != "0"
