import pytest
from inspect_ai.util import OutputLimitExceededError
from inspect_ai.util._sandbox.limits import override_max_read_file_size

from inspect_corral._sandbox import _file_error
from inspect_corral._server import CorralError

pytestmark = pytest.mark.anyio


async def test_write_creates_parents_and_takes_text(sandbox):
    await sandbox.write_file("deep/er/text.txt", "héllo\r\nworld\n")
    assert await sandbox.read_file("deep/er/text.txt") == "héllo\r\nworld\n"
    assert await sandbox.read_file("/workspace/deep/er/text.txt") == "héllo\r\nworld\n"


async def test_write_takes_bytes(sandbox):
    blob = bytes(range(256)) * 64
    await sandbox.write_file("/opt/x/blob.bin", blob)
    assert await sandbox.read_file("/opt/x/blob.bin", text=False) == blob
    r = await sandbox.exec(["sh", "-c", "wc -c < /opt/x/blob.bin"])
    assert r.stdout.strip() == str(len(blob))


async def test_write_overwrites(sandbox):
    await sandbox.write_file("f", "long content")
    await sandbox.write_file("f", "short")
    assert await sandbox.read_file("f") == "short"


async def test_write_onto_a_directory(sandbox):
    await sandbox.exec(["mkdir", "-p", "/workspace/adir"])
    with pytest.raises(IsADirectoryError):
        await sandbox.write_file("adir", "x")


async def test_read_missing(sandbox):
    with pytest.raises(FileNotFoundError):
        await sandbox.read_file("no/such/file")


async def test_read_a_directory(sandbox):
    with pytest.raises(IsADirectoryError):
        await sandbox.read_file("/etc")


async def test_read_bad_utf8(sandbox):
    await sandbox.write_file("bad.txt", b"ok \xff\xfe")
    with pytest.raises(UnicodeDecodeError):
        await sandbox.read_file("bad.txt")
    assert await sandbox.read_file("bad.txt", text=False) == b"ok \xff\xfe"


async def test_read_size_limit(sandbox):
    await sandbox.write_file("big", b"a" * 5000)
    with override_max_read_file_size(4999):
        with pytest.raises(OutputLimitExceededError):
            await sandbox.read_file("big")
    with override_max_read_file_size(5000):
        assert len(await sandbox.read_file("big", text=False)) == 5000


async def test_files_written_are_seen_by_exec(sandbox):
    await sandbox.write_file("script.sh", "echo from-script\n")
    r = await sandbox.exec(["sh", "script.sh"])
    assert r.stdout == "from-script\n"


# How corral's file errors become inspect's (the permission case cannot be
# provoked through a root backend's reads, so the mapping is checked directly).
@pytest.mark.parametrize(
    "code,message,expected",
    [
        ("not_found", "read /x: no such file or directory", FileNotFoundError),
        ("permission_denied", "read /x: permission denied", PermissionError),
        ("io", "write /x: Permission denied (os error 13)", PermissionError),
        ("invalid_input", "read /etc: it is a directory, not a regular file", IsADirectoryError),
        ("invalid_input", "write /a/b: not a directory", NotADirectoryError),
    ],
)
def test_file_error_mapping(code, message, expected):
    assert isinstance(_file_error(CorralError("read", code, message), "x"), expected)


def test_other_errors_pass_through():
    err = CorralError("read", "quota", "too big")
    assert _file_error(err, "x") is err
