"""Build the spindle emulator's C objects: the nbdkit plugin (spindle_plugin.c + spindle_core.c, against Debian's
nbdkit-plugin-dev) and the model core alone as a shared library (spindle_core.c, for the trace-equivalence test
through ctypes). `make setup` builds both (`python -m snaptax build-plugin`); serve() and the test call the
ensure_* functions, which rebuild only when a source is newer than its object.

-ffp-contract=off: the core must compute the very doubles the Python model computes; a fused multiply-add
(allowed by default in GNU C when the target has FMA) rounds once where Python rounds twice.
"""
from __future__ import annotations

from pathlib import Path

from .. import cbuild
from ..paths import (
    SPINDLE_CORE_HEADER,
    SPINDLE_CORE_LIB,
    SPINDLE_CORE_SOURCE,
    SPINDLE_PLUGIN,
    SPINDLE_PLUGIN_SOURCE,
)

HEADERS = (("nbdkit-plugin.h", "nbdkit-plugin-dev"),)
CFLAGS = ("-ffp-contract=off",)
LIBS = ("-lm",)


def plugin_inputs() -> list[Path]:
    return [SPINDLE_PLUGIN_SOURCE, SPINDLE_CORE_SOURCE, SPINDLE_CORE_HEADER]


def build_plugin(cc: str | None = None, *, plugin: Path = SPINDLE_PLUGIN, force: bool = False) -> Path:
    """The nbdkit plugin, compiled when missing or older than its sources (or `force`)."""
    return cbuild.compile_shared([SPINDLE_PLUGIN_SOURCE, SPINDLE_CORE_SOURCE], plugin, headers=HEADERS,
                                 depends=[SPINDLE_CORE_HEADER], cflags=CFLAGS, libs=LIBS, cc=cc, force=force)


def build_core(cc: str | None = None, *, library: Path = SPINDLE_CORE_LIB, force: bool = False) -> Path:
    """The model core alone (no nbdkit): what snaptax.spindle.cmodel loads."""
    return cbuild.compile_shared([SPINDLE_CORE_SOURCE], library, depends=[SPINDLE_CORE_HEADER], cflags=CFLAGS,
                                 libs=LIBS, cc=cc, force=force)


def ensure_plugin() -> Path:
    return build_plugin()


def ensure_core() -> Path:
    return build_core()
