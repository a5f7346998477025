import os
import shutil
import sys

import pytest

sys.dont_write_bytecode = True


def pytest_collection_modifyitems(config, items):
    reason = None
    if not sys.platform.startswith("linux"):
        reason = "the linux backend needs Linux"
    elif os.geteuid() != 0:
        reason = "the linux backend needs root"
    elif not (os.environ.get("CORRAL_BIN") or shutil.which("corral")):
        reason = "no corral binary (set CORRAL_BIN)"
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _server_stops_and_nothing_leaks():
    yield
    from inspect_corral import _sandbox, _server

    if _server._server is not None:
        left = _server._server.call("list", {"labels": {_sandbox.RUN_LABEL: _sandbox.RUN_ID}})
        _server.stop_server()
        assert left == [], f"sandboxes leaked by the tests: {left}"


@pytest.fixture
async def sandbox():
    from inspect_corral import CorralSandboxEnvironment as C

    await C.task_init("test", None)
    envs = await C.sample_init("test", None, {})
    try:
        yield envs["default"]
    finally:
        await C.sample_cleanup("test", None, envs, False)
