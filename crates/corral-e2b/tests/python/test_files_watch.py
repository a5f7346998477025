"""E2B's own Python SDK, unmodified, against `corral serve`: watching
directories, gzip on files, and moving directories.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
Runs under every pinned SDK version: a parameter a version does not have is
a skip that names it.
"""

import asyncio
import inspect

import pytest
from e2b.sandbox_sync.filesystem.filesystem import Filesystem


def sdk_lacks(method, parameter):
    """A skip for an SDK whose `Filesystem.<method>` has no `parameter`."""
    missing = parameter not in inspect.signature(getattr(Filesystem, method)).parameters
    return pytest.mark.skipif(missing, reason=f"this SDK version's files.{method} has no {parameter}")


def test_watch_dir_sees_creates_writes_and_removes(server):
    from e2b import FilesystemEventType, Sandbox

    sbx = Sandbox.create()
    try:
        sbx.files.make_dir("watched")
        handle = sbx.files.watch_dir("watched")
        sbx.files.write("watched/a.txt", "first")
        events = handle.get_new_events()
        assert [(e.type, e.name) for e in events] == [
            (FilesystemEventType.CREATE, "a.txt"),
            (FilesystemEventType.WRITE, "a.txt"),
        ]
        sbx.files.remove("watched/a.txt")
        events = handle.get_new_events()
        assert [(e.type, e.name) for e in events] == [(FilesystemEventType.REMOVE, "a.txt")]
        handle.stop()
    finally:
        sbx.kill()


@sdk_lacks("watch_dir", "include_entry")
def test_watch_dir_recursive_with_entries(server):
    from e2b import FilesystemEventType, Sandbox

    sbx = Sandbox.create()
    try:
        sbx.files.make_dir("watched")
        nested = sbx.files.watch_dir("watched", recursive=True, include_entry=True)
        sbx.files.write("watched/in/deep.txt", "deep")
        events = nested.get_new_events()
        names = [(e.type, e.name) for e in events]
        assert (FilesystemEventType.CREATE, "in/deep.txt") in names
        assert (FilesystemEventType.WRITE, "in/deep.txt") in names
        created = [e for e in events if e.name == "in/deep.txt"][0]
        assert created.entry is not None
        assert created.entry.path == "/home/user/watched/in/deep.txt"
        nested.stop()
    finally:
        sbx.kill()


def test_watch_dir_refuses_what_it_cannot_watch(server):
    from e2b import NotFoundException, Sandbox, SandboxException

    sbx = Sandbox.create()
    try:
        with pytest.raises(NotFoundException):
            sbx.files.watch_dir("never_made")
        sbx.files.write("plain.txt", "x")
        with pytest.raises(SandboxException):
            sbx.files.watch_dir("plain.txt")
    finally:
        sbx.kill()


def test_async_watch_dir_streams_events(server):
    from e2b import AsyncSandbox, FilesystemEventType

    async def run():
        sbx = await AsyncSandbox.create()
        try:
            await sbx.files.make_dir("/tmp/streamed")
            seen = []
            handle = await sbx.files.watch_dir("/tmp/streamed", on_event=seen.append)
            await sbx.files.write("/tmp/streamed/s.txt", "streamed")
            for _ in range(50):
                if any(e.type == FilesystemEventType.WRITE for e in seen):
                    break
                await asyncio.sleep(0.1)
            await handle.stop()
            assert (FilesystemEventType.CREATE, "s.txt") in [(e.type, e.name) for e in seen]
            assert (FilesystemEventType.WRITE, "s.txt") in [(e.type, e.name) for e in seen]
        finally:
            await sbx.kill()

    asyncio.run(run())


@sdk_lacks("write", "gzip")
def test_gzip_write_and_read(server):
    from e2b import Sandbox

    sbx = Sandbox.create()
    try:
        text = "squeeze me " * 500
        sbx.files.write("/tmp/gz.txt", text, gzip=True)
        assert sbx.files.read("/tmp/gz.txt") == text
        assert sbx.files.read("/tmp/gz.txt", gzip=True) == text
        assert sbx.files.read("/tmp/gz.txt", format="bytes", gzip=True) == text.encode()
    finally:
        sbx.kill()


def test_rename_moves_a_directory(server):
    from e2b import NotFoundException, Sandbox

    sbx = Sandbox.create()
    try:
        sbx.files.write("tree/one.txt", "1")
        sbx.files.write("tree/sub/two.txt", "2")
        info = sbx.files.rename("tree", "moved")
        assert info.path == "/home/user/moved"
        assert sbx.files.read("moved/sub/two.txt") == "2"
        with pytest.raises(NotFoundException):
            sbx.files.read("tree/one.txt")
    finally:
        sbx.kill()
