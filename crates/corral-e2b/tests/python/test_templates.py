"""Templates and the code interpreter, through E2B's own SDKs, unmodified.

A template names an image of the backend: `base` is its default image, any
other name one of its images (on linux, `corral image ls`; `host` is the
built-in one), and a template naming none answers 404, which the SDK raises
as its own exception.

`e2b-code-interpreter`'s `run_code` posts to a server on port 49999 in the
sandbox, through `corral serve`'s port proxy. The image E2B publishes runs
Jupyter behind that port; here a small stand-in (written below, Python's
standard library only) answers `/execute` with the same line-per-event
stream, which is what the proxy has to carry. It runs on the linux backend
only (it needs a real python3 in the sandbox); the package is installed
only with the newest pinned `e2b`, and elsewhere the test is a skip that
says so.

Set CORRAL_BIN to the corral binary and CORRAL_BACKEND (default: memory).
"""

import time

import pytest

from conftest import BACKEND
from e2b import Sandbox
from e2b.exceptions import NotFoundException, SandboxException


def test_an_unknown_template_is_not_found(server):
    with pytest.raises((NotFoundException, SandboxException)) as refused:
        Sandbox.create(template="no-such-template-here")
    assert "no-such-template-here" in str(refused.value)
    assert "not found" in str(refused.value)


@pytest.mark.skipif(BACKEND != "linux", reason=f"the {BACKEND} backend has no image named host")
def test_a_template_names_an_image(server):
    sandbox = Sandbox.create(template="host")
    try:
        assert sandbox.get_info().template_id == "host"
        assert sandbox.commands.run("echo from host").stdout == "from host\n"
    finally:
        sandbox.kill()


# What the stand-in answers: one JSON object per line, as E2B's
# code-interpreter server streams them (`stdout`, `result`, `error`,
# `number_of_executions`). State is kept between executions, as Jupyter's
# kernel keeps it.
STAND_IN = r'''
import ast, contextlib, io, json, time, traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

scope = {}
count = 0

def run(code):
    global count
    count += 1
    out = io.StringIO()
    events = []
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(tree, "<cell>", "exec"), scope)
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), scope) if last else None
        if out.getvalue():
            events.append({"type": "stdout", "text": out.getvalue(), "timestamp": time.time_ns()})
        if value is not None:
            events.append({"type": "result", "text": repr(value), "is_main_result": True})
    except Exception as e:
        if out.getvalue():
            events.append({"type": "stdout", "text": out.getvalue(), "timestamp": time.time_ns()})
        events.append({"type": "error", "name": type(e).__name__, "value": str(e),
                       "traceback": traceback.format_exc()})
    events.append({"type": "number_of_executions", "execution_count": count})
    return events

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        lines = b"".join(json.dumps(e).encode() + b"\n" for e in run(body["code"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(lines)))
        self.end_headers()
        self.wfile.write(lines)

ThreadingHTTPServer(("127.0.0.1", 49999), Handler).serve_forever()
'''


@pytest.mark.skipif(BACKEND != "linux", reason=f"written for the linux backend, not {BACKEND}")
def test_run_code_reaches_the_interpreter_on_49999(server):
    interpreter = pytest.importorskip(
        "e2b_code_interpreter", reason="e2b-code-interpreter is pinned with the newest e2b only"
    )
    sandbox = interpreter.Sandbox.create(template="base")
    try:
        sandbox.files.write("/home/user/stand_in.py", STAND_IN)
        sandbox.commands.run("python3 /home/user/stand_in.py", background=True)
        deadline = time.monotonic() + 30
        while not _answers(sandbox):
            assert time.monotonic() < deadline, "the stand-in never answered on 49999"
            time.sleep(0.2)
        seen = []
        first = sandbox.run_code("x = 20\nprint('hello from the sandbox')\nx + 22", on_stdout=seen.append)
        assert first.error is None, first.error
        assert first.logs.stdout == ["hello from the sandbox\n"]
        assert [str(m) for m in seen] == ["hello from the sandbox\n"]
        assert first.text == "42"
        second = sandbox.run_code("x * 2")
        assert second.text == "40", "state is kept between executions"
        failed = sandbox.run_code("1 / 0")
        assert failed.error is not None and failed.error.name == "ZeroDivisionError"
    finally:
        sandbox.kill()


def _answers(sandbox):
    """Whether the stand-in answers on 49999 yet (asked from inside)."""
    probe = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:49999/', timeout=2)"
    try:
        return sandbox.commands.run(f'python3 -c "{probe}"').exit_code == 0
    except Exception:
        return False
