"""Hostile input at the plugin's boundary: each refused in one clear line."""

import json

import pytest
from inspect_ai.util._sandbox.compose import ComposeConfig

from inspect_corral._config import CorralConfigError, load_config

pytestmark = pytest.mark.anyio

EXEC_CASES = [
    ("nul in an argument", dict(cmd=["echo", "a\0b"]), ValueError, "NUL"),
    ("empty command", dict(cmd=[]), ValueError, "needs a command"),
    ("nul in cwd", dict(cmd=["pwd"], cwd="a\0b"), ValueError, "NUL"),
    ("bad env name", dict(cmd=["true"], env={"A=B": "1"}), ValueError, "name"),
    ("empty env name", dict(cmd=["true"], env={"": "1"}), ValueError, "name"),
    ("nul in env value", dict(cmd=["true"], env={"A": "x\0y"}), ValueError, "NUL"),
]


@pytest.mark.parametrize("name,kwargs,exc,words", EXEC_CASES, ids=[c[0] for c in EXEC_CASES])
async def test_exec_refuses(sandbox, name, kwargs, exc, words):
    with pytest.raises(exc) as ex:
        await sandbox.exec(**kwargs)
    assert words in str(ex.value) and "\n" not in str(ex.value)


# A program that cannot start raises PermissionError naming it (corral's
# linux init reports each as a typed refusal; a result, such as the exit 134
# of an init child that aborted, fails the row).
PROGRAM_CASES = [
    ("bare name on no PATH directory", ["no-such-program"], "no-such-program"),
    ("bare name with arguments", ["no-such-program", "-v", "x"], "no-such-program"),
    ("absolute path that does not exist", ["/no/such/program"], "/no/such/program"),
    ("regular file without the execute bit", ["/etc/hostname"], "/etc/hostname"),
    ("directory as the program", ["/tmp"], "/tmp"),
]


@pytest.mark.parametrize("name,cmd,program", PROGRAM_CASES, ids=[c[0] for c in PROGRAM_CASES])
async def test_program_that_cannot_start(sandbox, name, cmd, program):
    try:
        got = await sandbox.exec(cmd)
    except PermissionError as ex:
        assert ex.filename == program and program in str(ex) and "\n" not in str(ex), ex
    else:
        pytest.fail(f"{cmd} gave a result, not PermissionError: {got}")
    assert (await sandbox.exec(["echo", "ok"])).stdout == "ok\n"


PATH_CASES = [
    ("nul", "a\0b"),
    ("empty", ""),
]


@pytest.mark.parametrize("name,path", PATH_CASES, ids=[c[0] for c in PATH_CASES])
async def test_paths_refused(sandbox, name, path):
    for op in (lambda: sandbox.read_file(path), lambda: sandbox.write_file(path, "x")):
        with pytest.raises(ValueError) as ex:
            await op()
        assert "corral:" in str(ex.value) and "\n" not in str(ex.value)


# `..` is resolved lexically, as corral resolves it, never above `/`
# (inspect's docker provider hands such paths on and they work): given ->
# where the file lands.
DOTDOT_CASES = [
    ("dotdot relative", "../../tmp/dd1", "/tmp/dd1"),
    ("dotdot past the root", "../../../../../../tmp/dd2", "/tmp/dd2"),
    ("dotdot absolute", "/workspace/../tmp/dd3", "/tmp/dd3"),
    ("dotdot in the middle", "a/b/../../dd4", "/workspace/dd4"),
    ("dot and slashes", "./a//./dd5", "/workspace/a/dd5"),
    ("double leading slash", "//tmp/dd6", "/tmp/dd6"),
    ("dotdot from the root", "/../../tmp/dd7", "/tmp/dd7"),
]


@pytest.mark.parametrize("name,given,lands", DOTDOT_CASES, ids=[c[0] for c in DOTDOT_CASES])
async def test_dotdot_paths_resolve_lexically(sandbox, name, given, lands):
    await sandbox.write_file(given, name)
    assert (await sandbox.exec(["cat", lands])).stdout == name
    assert await sandbox.read_file(given) == name
    assert await sandbox.read_file(lands) == name


@pytest.mark.parametrize("path", ["/tmp/..", "..", "../..", "a/..", "/.."])
async def test_dotdot_onto_a_directory(sandbox, path):
    await sandbox.exec(["mkdir", "-p", "/workspace/a"])
    with pytest.raises(IsADirectoryError):
        await sandbox.read_file(path)
    with pytest.raises(IsADirectoryError):
        await sandbox.write_file(path, "x")


CWD_CASES = [
    ("dotdot relative", "../tmp", "/tmp"),
    ("dotdot past the root", "../../../../..", "/"),
    ("dotdot absolute", "/workspace/../etc", "/etc"),
    ("dot and slashes", ".//./", "/workspace"),
]


@pytest.mark.parametrize("name,cwd,pwd", CWD_CASES, ids=[c[0] for c in CWD_CASES])
async def test_dotdot_cwd_resolves_lexically(sandbox, name, cwd, pwd):
    assert (await sandbox.exec(["pwd"], cwd=cwd)).stdout == pwd + "\n"


CONFIG_CASES = [
    ("compose file", "compose.yaml", "compose files and Dockerfiles"),
    ("docker-compose file", "docker-compose.yml", "compose files and Dockerfiles"),
    ("Dockerfile", "Dockerfile", "compose files and Dockerfiles"),
    ("missing file", "no-such-config.json", "does not exist"),
    ("unknown key", {"imagee": "x"}, "imagee"),
    ("negative cpus", {"cpus": -1}, "cpus"),
    ("bad memory", {"memory": "lots"}, "not a size"),
    ("zero disk", {"disk": 0}, "positive"),
    ("bad network", {"network": "host"}, "network"),
    ("relative working dir", {"working_dir": "work"}, "absolute"),
    ("dotdot working dir", {"working_dir": "/a/../b"}, "'..'"),
    ("nul in env", {"env": {"A": "\0"}}, "NUL"),
    ("compose model", ComposeConfig(services={}), "compose-style"),
    ("a number", 42, "not understood"),
]


@pytest.mark.parametrize("name,config,words", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_configs_refused(name, config, words):
    with pytest.raises(CorralConfigError) as ex:
        load_config(config)
    assert words in str(ex.value) and "\n" not in str(ex.value), str(ex.value)


@pytest.mark.parametrize(
    "name,text,words",
    [
        ("services.json", json.dumps({"services": {"default": {}}}), "'services'"),
        ("list.json", "[1, 2]", "mapping"),
        ("broken.json", "{not json", "does not parse"),
        ("broken.yaml", "a: [unclosed", "does not parse"),
        ("conf.toml", "a = 1", ".json, .yaml"),
        ("huge.json", " " * (2 << 20), "larger than 1 MiB"),
    ],
)
def test_config_files_refused(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CorralConfigError) as ex:
        load_config(str(path))
    assert words in str(ex.value) and "\n" not in str(ex.value), str(ex.value)


def test_good_configs(tmp_path):
    (tmp_path / "c.yaml").write_text("memory: 512m\ncpus: 1.5\nenv:\n  A: b\n")
    (tmp_path / "c.json").write_text(json.dumps({"pids": 64, "network": "none"}))
    y = load_config(str(tmp_path / "c.yaml"))
    assert (y.memory, y.cpus, y.env) == ("512m", 1.5, {"A": "b"})
    assert load_config(str(tmp_path / "c.json")).pids == 64
    assert load_config(None).working_dir == "/workspace"
