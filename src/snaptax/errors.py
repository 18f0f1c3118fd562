"""Exceptions raised by the library. Only the CLI turns them into exit codes and one-line messages."""
from __future__ import annotations


class SnaptaxError(Exception):
    """Base class: its str() is the one line a user sees."""


class ConfigError(SnaptaxError):
    """A rig file, profile or parameter is missing or malformed; names the file and the field."""

    def __init__(self, source: str, field: str, problem: str):
        self.source, self.field, self.problem = source, field, problem
        super().__init__(f"{source}: field '{field}': {problem}")


class MissingTool(SnaptaxError):
    """An executable or Python module is not installed; names the package that provides it."""

    def __init__(self, tool: str, package: str):
        self.tool, self.package = tool, package
        super().__init__(f"'{tool}' not found: install the Debian package '{package}' (or run 'make setup')")


class DeviceRefused(SnaptaxError):
    """A block device failed a safety check (not named by stable id, not allowed, mounted or in use)."""


class EngineError(SnaptaxError):
    """A snapshot engine or its daemon failed."""


class MeasurementError(SnaptaxError):
    """fio or a counter failed during a measurement."""


class AnalysisError(SnaptaxError):
    """A run's data cannot be analysed (measurements missing, or a model that cannot be fitted to them), or two
    runs cannot be compared; names the run."""


class SiteError(SnaptaxError):
    """The companion site cannot be built: a vendored file is missing, or a chart declares a Vega version other than
    the vendored one; names the file."""
