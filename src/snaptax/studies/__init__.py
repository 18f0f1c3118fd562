"""Studies: one module per reproduced measurement. Each has run(rig, profile) → published run directory,
describe_plan(profile) → text, and render(run_dir, ...) → claim outcomes (registered in snaptax.render)."""
from __future__ import annotations

from importlib import import_module
from types import ModuleType

from ..errors import ConfigError

STUDIES = {
    "chain-length": "chain_length",
    "calibration": "calibration",
    "engines": "engines",
}


def get(name: str) -> ModuleType:
    module = STUDIES.get(name) or STUDIES.get(name.replace("_", "-"))
    if module is None:
        raise ConfigError("study", "STUDY", f"unknown study {name!r} (one of: {', '.join(STUDIES)})")
    return import_module(f"{__name__}.{module}")
