"""The sandbox's configuration: image, limits, network, environment."""

from __future__ import annotations

import json
import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

# Configs that belong to docker and that corral cannot honour.
_DOCKER_NAMES = re.compile(
    r"(^|/)(compose|docker-compose)(\.[^/]*)?\.ya?ml$|(^|/)Dockerfile[^/]*$", re.I
)
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class CorralConfigError(ValueError):
    """A configuration corral cannot honour."""


def parse_size(field: str, value: int | str | None) -> int | None:
    """Bytes from an int or a string such as `512m` or `2GiB`."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise CorralConfigError(f"corral config: {field} must be a size, not {value!r}")
    if isinstance(value, int):
        n = value
    else:
        m = _SIZE.match(value)
        if not m:
            raise CorralConfigError(
                f"corral config: {field} {value!r} is not a size (e.g. 512m, 2g)"
            )
        n = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if n <= 0:
        raise CorralConfigError(f"corral config: {field} must be positive, not {value!r}")
    return n


class CorralSandboxConfig(BaseModel):
    """What each sample's sandbox is made with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str | None = None
    """The image to start from (`None`: the backend's default root file system)."""
    cpus: float | None = None
    memory: int | str | None = None
    """Memory limit: bytes, or a size such as `512m`."""
    disk: int | str | None = None
    """Writable disk limit: bytes, or a size such as `1g`."""
    pids: int | None = None
    network: Literal["none", "default"] = "none"
    """`none`: loopback only (the default); `default`: the backend's network."""
    env: dict[str, str] = {}
    """Environment every command starts with."""
    working_dir: str = "/workspace"
    """Where relative paths and commands start (absolute)."""
    timeout: int | None = None
    """Destroy a sandbox this many seconds after it was made, whatever happens."""

    @field_validator("cpus")
    @classmethod
    def _cpus(cls, v: float | None) -> float | None:
        if v is not None and not (v > 0 and v != float("inf")):
            raise ValueError(f"cpus must be a positive number, not {v!r}")
        return v

    @field_validator("pids", "timeout")
    @classmethod
    def _positive(cls, v: int | None) -> int | None:
        if v is not None and v <= 0:
            raise ValueError(f"must be positive, not {v!r}")
        return v

    @field_validator("memory", "disk")
    @classmethod
    def _size(cls, v: int | str | None, info: Any) -> int | str | None:
        parse_size(info.field_name, v)
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for k, val in v.items():
            check_env_pair(k, val)
        return v

    @field_validator("working_dir")
    @classmethod
    def _wd(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError(f"working_dir must be absolute, not {v!r}")
        check_path_text("working_dir", v)
        if ".." in v.split("/"):
            raise ValueError(f"working_dir {v!r} contains a '..' component")
        return v


def check_path_text(what: str, path: str) -> None:
    """Refuses an empty path or one with a NUL byte, in one line."""
    if "\0" in path:
        raise ValueError(f"corral: {what} {path!r} contains a NUL byte")
    if path == "":
        raise ValueError(f"corral: {what} is empty")


def check_env_pair(key: str, value: str) -> None:
    if not key or "=" in key or "\0" in key:
        raise ValueError(f"corral: environment variable name {key!r} is invalid")
    if "\0" in value:
        raise ValueError(f"corral: environment variable {key!r} has a NUL byte in its value")


def load_config(config: Any) -> CorralSandboxConfig:
    """The config inspect handed over: `None`, our model, a dict, or a file name."""
    if config is None:
        return CorralSandboxConfig()
    if isinstance(config, CorralSandboxConfig):
        return config
    if isinstance(config, dict):
        return _validated(config, "config")
    if isinstance(config, BaseModel):
        raise CorralConfigError(
            f"corral cannot honour a {type(config).__name__} config (compose-style "
            "configs are docker's); give a corral config: image, cpus, memory, disk, "
            "pids, network, env, working_dir, timeout"
        )
    if isinstance(config, str):
        if _DOCKER_NAMES.search(config):
            raise CorralConfigError(
                f"corral cannot honour {config!r}: compose files and Dockerfiles are "
                "docker's; give a corral config (.json or .yaml)"
            )
        if not os.path.isfile(config):
            raise CorralConfigError(f"corral config file {config!r} does not exist")
        with open(config, "rb") as f:
            raw = f.read(1 << 20)
            if f.read(1):
                raise CorralConfigError(f"corral config {config!r} is larger than 1 MiB")
        try:
            text = raw.decode("utf-8")
            if config.endswith(".json"):
                data = json.loads(text)
            elif config.endswith((".yaml", ".yml")):
                import yaml

                data = yaml.safe_load(text)
            else:
                raise CorralConfigError(
                    f"corral config {config!r}: name a .json, .yaml or .yml file"
                )
        except CorralConfigError:
            raise
        except Exception as ex:
            first = str(ex).splitlines()[0] if str(ex) else type(ex).__name__
            raise CorralConfigError(f"corral config {config!r} does not parse: {first}") from None
        if not isinstance(data, dict):
            raise CorralConfigError(f"corral config {config!r} must be a mapping")
        if "services" in data:
            raise CorralConfigError(
                f"corral cannot honour {config!r}: it has 'services' (a compose file)"
            )
        return _validated(data, repr(config))
    raise CorralConfigError(f"corral config of type {type(config).__name__} is not understood")


def _validated(data: dict[str, Any], where: str) -> CorralSandboxConfig:
    from pydantic import ValidationError

    try:
        return CorralSandboxConfig(**data)
    except ValidationError as ex:
        parts = []
        for e in ex.errors():
            loc = ".".join(str(x) for x in e["loc"]) or "config"
            parts.append(f"{loc}: {e['msg']}")
        raise CorralConfigError(f"corral config {where}: " + "; ".join(parts)) from None
    except CorralConfigError as ex:
        raise CorralConfigError(f"{ex} (in {where})") from None
