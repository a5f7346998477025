"""One `corral serve` per Python process, and a stdlib client of its
backend routes (`POST /v1/backend/<member>`, docs/wire.md)."""

from __future__ import annotations

import atexit
import base64
import http.client
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

REVISION = "corral-wire/2026-11-29"
_BANNER = "corral: serving "


class CorralError(RuntimeError):
    """A backend error: `code` is corral's closed code (`not_found`, `timeout`, ...)."""

    def __init__(self, member: str, code: str, message: str, missing_sandbox: bool = False):
        self.member = member
        self.code = code
        self.message = message
        self.missing_sandbox = missing_sandbox
        super().__init__(f"corral {member}: {code}: {message}")


def corral_bin() -> str:
    """The `corral` binary: `$CORRAL_BIN`, else `corral` on PATH."""
    path = os.environ.get("CORRAL_BIN") or shutil.which("corral")
    if not path:
        raise RuntimeError(
            "corral: no corral binary: set CORRAL_BIN or put corral on PATH"
        )
    return path


def _die_with_parent() -> None:
    # The server ends with the Python process that started it, however it ends.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _spawn_from_owner_thread(argv: list[str], **kw: Any) -> subprocess.Popen:
    """Starts the server from a thread that lives as long as this process:
    the kernel's parent-death signal follows the thread that forked, and
    inspect calls us from short-lived worker threads."""
    got: list[Any] = []
    ready = threading.Event()

    def owner() -> None:
        try:
            got.append(subprocess.Popen(argv, preexec_fn=_die_with_parent, **kw))
        except BaseException as ex:  # handed to the caller
            got.append(ex)
        ready.set()
        threading.Event().wait()  # never set: the thread ends with the process

    threading.Thread(target=owner, name="corral-serve-owner", daemon=True).start()
    ready.wait()
    if isinstance(got[0], BaseException):
        raise got[0]
    return got[0]


@dataclass
class Server:
    host: str
    port: int
    token: str
    proc: subprocess.Popen | None = None
    workdir: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, backend: str = "linux") -> "Server":
        workdir = tempfile.mkdtemp(prefix="inspect-corral-")
        token = "inspect_" + secrets.token_hex(24)
        token_file = os.path.join(workdir, "token")
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token)
        proc = _spawn_from_owner_thread(
            [corral_bin(), "serve", "--backend", backend, "--listen", "127.0.0.1:0",
             "--token-file", token_file],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=open(os.path.join(workdir, "serve.log"), "wb"),
        )
        assert proc.stdout is not None
        line = proc.stdout.readline().decode("utf-8", "replace").strip()
        if not line.startswith(_BANNER) or " on http://" not in line:
            proc.kill()
            proc.wait()
            log = open(os.path.join(workdir, "serve.log"), "rb").read()[-400:]
            shutil.rmtree(workdir, ignore_errors=True)
            raise RuntimeError(
                f"corral serve did not start: {line!r} {log.decode('utf-8', 'replace').strip()}"
            )
        addr = line.split(" on http://", 1)[1]
        host, port = addr.rsplit(":", 1)
        return cls(host=host, port=int(port), token=token, proc=proc, workdir=workdir)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- requests -----------------------------------------------------------

    def _post(self, member: str, body: Any, timeout: float) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = json.dumps(body).encode()
        conn.request(
            "POST",
            "/v1/backend/" + member,
            data,
            {
                "Authorization": "Bearer " + self.token,
                "corral-contract-revision": REVISION,
                "Content-Type": "application/json",
            },
        )
        return conn.getresponse()

    def call(self, member: str, body: Any, timeout: float = 120) -> Any:
        try:
            resp = self._post(member, body, timeout)
            data = resp.read()
        except OSError as ex:
            raise CorralError(member, "unavailable", f"server unreachable: {ex}") from None
        finally:
            pass
        return self._decode(member, resp.status, data)

    @staticmethod
    def _decode(member: str, status: int, data: bytes) -> Any:
        try:
            value = json.loads(data) if data else None
        except ValueError:
            raise CorralError(member, "protocol", f"HTTP {status}: not JSON") from None
        if status == 200:
            return value
        if isinstance(value, dict) and "code" in value:
            raise CorralError(
                member, value["code"], value.get("message", ""), "missing_sandbox" in value
            )
        raise CorralError(member, "protocol", f"HTTP {status}: {data[:200]!r}")

    def exec_stream(
        self,
        body: dict[str, Any],
        on_output: Callable[[str, bytes], bool],
        timeout: float,
    ) -> dict[str, Any]:
        """Runs `exec`; `on_output(stream, bytes)` returning False drops the
        connection, which makes the server kill the run's process group.
        Returns the `outcome` line; raises CorralError for an `error` line."""
        try:
            resp = self._post("exec", body, timeout)
        except OSError as ex:
            raise CorralError("exec", "unavailable", f"server unreachable: {ex}") from None
        try:
            if resp.status != 200:
                self._decode("exec", resp.status, resp.read())
            while True:
                line = resp.readline()
                if not line:
                    raise CorralError("exec", "protocol", "stream ended without an outcome")
                frame = json.loads(line)
                if "output" in frame:
                    out = frame["output"]
                    if not on_output(out["stream"], base64.b64decode(out["bytes"])):
                        return {"dropped": True}
                elif "outcome" in frame:
                    return frame["outcome"]
                elif "error" in frame:
                    err = frame["error"]
                    raise CorralError(
                        "exec", err.get("code", "?"), err.get("message", ""),
                        "missing_sandbox" in err,
                    )
        except OSError as ex:
            raise CorralError("exec", "unavailable", f"connection lost: {ex}") from None
        finally:
            resp.close()


_server: Server | None = None
_server_lock = threading.Lock()


def server() -> Server:
    """This process's server, started on first use and stopped at exit."""
    global _server
    with _server_lock:
        if _server is None or (_server.proc is not None and _server.proc.poll() is not None):
            backend = os.environ.get("INSPECT_CORRAL_BACKEND", "linux")
            _server = Server.start(backend)
            atexit.register(_server.stop)
        return _server


def stop_server() -> None:
    global _server
    with _server_lock:
        if _server is not None:
            _server.stop()
            _server = None
