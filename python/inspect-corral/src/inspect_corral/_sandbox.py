"""`CorralSandboxEnvironment`: inspect's `SandboxEnvironment` over corral."""

from __future__ import annotations

import base64
import errno
import os
import posixpath
import secrets
import shlex
from typing import Any, Literal, Union, overload

import anyio
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    sandboxenv,
)
from inspect_ai.util._sandbox._cli import SANDBOX_CLI
from inspect_ai.util._sandbox.environment import SandboxConnection, SandboxUserUnsupportedError
from pydantic import BaseModel

from inspect_corral._config import (
    CorralSandboxConfig,
    check_env_pair,
    check_path_text,
    load_config,
    parse_size,
)
from inspect_corral._server import CorralError, corral_bin, server

LABEL = "inspect-corral"
RUN_LABEL = "inspect-corral-run"
# This process's run: every sandbox it makes carries it.
RUN_ID = secrets.token_hex(8)
# Whom a command may run as, and corral's name for it.
USERS = {"root": "root", "0": "root", "user": "user", "1000": "user"}
_CREATE_TIMEOUT = 300


def _call(member: str, body: Any, timeout: float = 120) -> Any:
    return server().call(member, body, timeout)


async def _acall(member: str, body: Any, timeout: float = 120) -> Any:
    return await anyio.to_thread.run_sync(_call, member, body, timeout)


def create_body(config: CorralSandboxConfig, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "size": {
            "cpus": config.cpus,
            "memory_bytes": parse_size("memory", config.memory),
            "disk_bytes": parse_size("disk", config.disk),
        },
        "env": dict(config.env),
        "network": {"mode": config.network},
        "ports": [],
        "limits": {"pids": config.pids},
        "labels": labels,
        "snapshot": None,
        "idle_timeout": None,
        "timeout": config.timeout * 1000 if config.timeout else None,
        "key": None,
        "image": config.image,
    }


async def _destroy(ids: list[str]) -> None:
    async with anyio.create_task_group() as tg:
        for sid in ids:
            tg.start_soon(_acall, "destroy", {"id": sid})


async def _ours(labels: dict[str, str]) -> list[str]:
    found = await _acall("list", {"labels": labels})
    return [s["id"] for s in found]


@sandboxenv(name="corral")
class CorralSandboxEnvironment(SandboxEnvironment):
    """Each sample in its own corral sandbox (`corral serve`, linux backend)."""

    def __init__(self, sandbox_id: str, working_dir: str) -> None:
        super().__init__()
        self.sandbox_id = sandbox_id
        self.working_dir = working_dir

    # -- lifecycle ----------------------------------------------------------

    @classmethod
    def default_concurrency(cls) -> int | None:
        return 2 * (os.cpu_count() or 1)

    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return load_config(config)

    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        load_config(config)  # a bad config fails the task before any sample runs
        await anyio.to_thread.run_sync(server)

    @classmethod
    async def sample_init(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        metadata: dict[str, str],
    ) -> dict[str, SandboxEnvironment]:
        cfg = load_config(config)
        info = await _acall(
            "create",
            create_body(cfg, {LABEL: "1", RUN_LABEL: RUN_ID}),
            _CREATE_TIMEOUT,
        )
        env = cls(info["id"], cfg.working_dir)
        try:
            await _acall("mkdir", {"id": env.sandbox_id, "path": cfg.working_dir, "parents": True})
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _destroy([env.sandbox_id])
            raise
        return {"default": env}

    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        ids = [e.as_type(CorralSandboxEnvironment).sandbox_id for e in environments.values()]
        with anyio.CancelScope(shield=True):
            await _destroy(ids)

    @classmethod
    async def task_cleanup(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, cleanup: bool
    ) -> None:
        left = await _ours({LABEL: "1", RUN_LABEL: RUN_ID})
        if cleanup:
            with anyio.CancelScope(shield=True):
                await _destroy(left)
        elif left:
            print("\ncorral sandboxes kept (--no-sandbox-cleanup):")
            for sid in left:
                print(f"  {sid}")
            print(
                "Remove them with: inspect sandbox cleanup corral ID "
                "(or all of them: inspect sandbox cleanup corral)\n"
            )

    @classmethod
    async def cli_cleanup(cls, id: str | None) -> None:
        ours = await _ours({LABEL: "1"})
        if id is not None:
            if id not in ours:
                raise ValueError(f"corral: {id!r} is not a sandbox that inspect-corral made")
            ours = [id]
        await _destroy(ours)
        print(f"corral: removed {len(ours)} sandbox(es)")

    # -- paths --------------------------------------------------------------

    def _path(self, what: str, path: str) -> str:
        """The absolute path in the sandbox: a relative one is taken from the
        working directory, and `.`, `..` and repeated slashes are resolved
        lexically, `..` never above `/` (corral's own rule for paths)."""
        check_path_text(what, path)
        if not path.startswith("/"):
            path = self.working_dir + "/" + path
        return normalise(path)

    # -- exec ---------------------------------------------------------------

    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        if not cmd:
            raise ValueError("corral: exec needs a command")
        for i, a in enumerate(cmd):
            if "\0" in a:
                raise ValueError(f"corral: argument {i} of the command contains a NUL byte")
        for k, v in (env or {}).items():
            check_env_pair(k, v)
        run_as = None
        if user is not None:
            if user not in USERS:
                raise SandboxUserUnsupportedError(
                    f"corral: no user {user!r} in the sandbox (known: root, user)"
                )
            run_as = USERS[user]
        argv = list(cmd)
        if argv[:2] == [SANDBOX_CLI, "start-server"]:
            argv = await self._in_own_session(argv)
        body = {
            "id": self.sandbox_id,
            "command": {"argv": argv},
            "cwd": self._path("cwd", cwd) if cwd is not None else self.working_dir,
            "env": dict(env or {}),
            "stdin": None
            if input is None
            else base64.b64encode(input.encode() if isinstance(input, str) else input).decode(),
            "timeout_ms": None,
            "activity_path": None,
            "run_as": run_as,
        }
        # timeout_retry: like docker's, up to two more tries, of at most 60 s and 30 s.
        tries = [timeout]
        if timeout is not None and timeout_retry:
            tries += [min(timeout, 60), min(timeout, 30)]
        for i, t in enumerate(tries):
            body["timeout_ms"] = int(t * 1000) if t is not None else None
            try:
                return await anyio.to_thread.run_sync(self._exec_once, body, t, cmd[0])
            except TimeoutError:
                if i == len(tries) - 1:
                    raise
        raise AssertionError("unreachable")

    async def _in_own_session(self, argv: list[str]) -> list[str]:
        """`argv` under `setsid --wait`, when the sandbox has it.

        inspect's sandbox tools start a server that stays in the process
        group of the command that started it, and rely on it running on
        after that command (docker leaves such processes alone). corral kills
        what is left of a command's group when the command ends, so the
        server would die with it. In a session of its own it outlives the
        command, as under docker; `--wait` keeps the command's output and
        exit status. The wrapper runs as root, so it is named by absolute
        path, never looked up through the image's PATH."""
        for setsid in ("/usr/bin/setsid", "/bin/setsid"):
            try:
                st = await _acall("stat", {"id": self.sandbox_id, "path": setsid})
            except CorralError:
                continue
            if st.get("file_type") == "file":
                return [setsid, "--wait", *argv]
        return argv

    def _exec_once(
        self, body: dict[str, Any], timeout: float | None, program: str
    ) -> ExecResult[str]:
        limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
        out = {"stdout": bytearray(), "stderr": bytearray()}
        over: list[str] = []

        def on_output(stream: str, chunk: bytes) -> bool:
            buf = out.get(stream)
            if buf is None:
                return True
            buf += chunk
            if len(buf) > limit:
                over.append(stream)
                return False
            return True

        # Our socket waits past the server's own timeout (which kills the group first).
        sock_timeout = (timeout + 90) if timeout is not None else 24 * 3600
        try:
            outcome = server().exec_stream(body, on_output, sock_timeout)
        except CorralError as ex:
            if ex.code == "timeout":
                raise TimeoutError(f"corral: command timed out after {timeout} s") from None
            got = _exec_error(ex, program)
            if isinstance(got, ExecResult):
                return got
            raise got from None
        if over:
            stream = over[0]
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR,
                truncated_output=bytes(out[stream][:limit]).decode("utf-8", "replace"),
            )
        status = outcome.get("status", {})
        code = status["code"] if "code" in status else 128 + _signal_number(status.get("signal"))
        return ExecResult(
            success=code == 0,
            returncode=code,
            stdout=bytes(out["stdout"]).decode("utf-8", "replace"),
            stderr=bytes(out["stderr"]).decode("utf-8", "replace"),
        )

    # -- connection ---------------------------------------------------------

    def cli_exec_command(self) -> list[str]:
        """The `corral exec` command line that runs a command in this sandbox
        from a shell on this host (append the command): the same binary,
        backend and state directory as the server the plugin started, so it
        works while the eval runs and after it, for sandboxes kept with
        `--no-sandbox-cleanup`."""
        argv: list[str] = []
        state = os.environ.get("CORRAL_STATE_DIR")
        if state:
            argv += ["env", f"CORRAL_STATE_DIR={state}"]
        backend = os.environ.get("INSPECT_CORRAL_BACKEND", "linux")
        return argv + [corral_bin(), "exec", "--backend", backend, self.sandbox_id, "--"]

    async def connection(self, *, user: str | None = None) -> SandboxConnection:
        """Not available: the corral command line has no interactive shell.

        `corral exec` runs one command with its stdin on `/dev/null` and no
        terminal, and has no `--user`; a command pasted into a terminal
        could not give a shell. inspect documents `NotImplementedError` for
        a sandbox that provides no connection (`sandbox_connections()` skips
        it; the human agent refuses to start). The message says how to run
        single commands in the sandbox instead."""
        raise NotImplementedError(
            "corral: no connection to sandbox "
            f"{self.sandbox_id}: the corral command line cannot attach a shell "
            "(corral exec has no stdin and no terminal); run single commands with: "
            + shlex.join(self.cli_exec_command())
            + " CMD..."
        )

    # -- files --------------------------------------------------------------

    async def write_file(self, file: str, contents: str | bytes) -> None:
        path = self._path("file", file)
        if path == "/":
            raise IsADirectoryError(errno.EISDIR, "Is a directory", file)
        data = contents.encode("utf-8") if isinstance(contents, str) else bytes(contents)
        parent = posixpath.dirname(path)
        try:
            if parent != "/":
                await _acall("mkdir", {"id": self.sandbox_id, "path": parent, "parents": True})
            await _acall(
                "write",
                {"id": self.sandbox_id, "path": path,
                 "bytes": base64.b64encode(data).decode(), "mode": None},
            )
        except CorralError as ex:
            raise _file_error(ex, file) from None

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    async def read_file(self, file: str, text: bool = True) -> Union[str, bytes]:
        path = self._path("file", file)
        try:
            st = await _acall("stat", {"id": self.sandbox_id, "path": path})
            if st.get("file_type") == "directory":
                raise IsADirectoryError(errno.EISDIR, "Is a directory", file)
            if st.get("size", 0) > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
                raise OutputLimitExceededError(
                    limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR,
                    truncated_output=None,
                )
            got = await _acall("read", {"id": self.sandbox_id, "path": path})
        except CorralError as ex:
            raise _file_error(ex, file) from None
        data = base64.b64decode(got["bytes"])
        if len(data) > SandboxEnvironmentLimits.MAX_READ_FILE_SIZE:
            raise OutputLimitExceededError(
                limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR, truncated_output=None
            )
        # Bytes decode as they are: CRLF stays CRLF; bad UTF-8 raises UnicodeDecodeError.
        return data.decode("utf-8") if text else data


def normalise(path: str) -> str:
    """An absolute path with `.`, `..` and empty components resolved
    lexically; `..` at the root stays at the root."""
    parts: list[str] = []
    for c in path.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if parts:
                parts.pop()
            continue
        parts.append(c)
    return "/" + "/".join(parts)


# What corral's linux backend answers (the exec stream's `error` line) when a
# command cannot start. The wire carries the error's closed code and its one
# line, no finer kind: within a code the kinds are told apart by the fixed
# opening of the line, which is the backend's typed error (`ExecError`)
# printed, never the command's own output.
_CANNOT_START = {
    ("not_found", "command not found"): errno.ENOENT,
    ("invalid_input", "command is not executable"): errno.EACCES,
    ("permission_denied", ""): errno.EACCES,
}


def _exec_error(ex: CorralError, program: str) -> Exception | ExecResult[str]:
    """What a backend error of `exec` becomes for inspect.

    A program that cannot start (missing, or not executable) raises
    `PermissionError` naming it; a missing working directory is a failed
    result naming the directory (as inspect's docker provider returns it);
    anything else is raised as it came."""
    if ex.missing_sandbox:
        return ex
    for (code, opening), err in _CANNOT_START.items():
        if ex.code == code and ex.message.startswith(opening):
            return PermissionError(err, ex.message, program)
    if ex.code == "not_found" and ex.message.startswith("working directory"):
        return ExecResult(False, 126, "", f"corral: {ex.message}\n")
    return ex


def _file_error(ex: CorralError, file: str) -> Exception:
    msg = ex.message.lower()
    if ex.code == "not_found":
        return FileNotFoundError(errno.ENOENT, "No such file or directory", file)
    if ex.code == "permission_denied" or "permission denied" in msg:
        return PermissionError(errno.EACCES, "Permission denied", file)
    if "is a directory" in msg:
        return IsADirectoryError(errno.EISDIR, "Is a directory", file)
    if "not a directory" in msg:
        return NotADirectoryError(errno.ENOTDIR, "Not a directory", file)
    return ex


def _signal_number(name: str | None) -> int:
    import signal

    try:
        return int(getattr(signal, name or "", 0)) or 1
    except (TypeError, ValueError):
        return 1
