"""Entry point of the `inspect_ai` group: importing it registers `corral`."""

from inspect_corral._sandbox import CorralSandboxEnvironment  # noqa: F401
