"""A corral sandbox for inspect-ai (`--sandbox corral`)."""

from inspect_corral._config import CorralSandboxConfig
from inspect_corral._sandbox import CorralSandboxEnvironment

__all__ = ["CorralSandboxConfig", "CorralSandboxEnvironment"]
