"""Build the copy-on-first-write engine's C nbdkit plugin (cofw.c) with gcc against Debian's nbdkit-plugin-dev and
libnbd-dev. `make setup` runs `python -m snaptax build-plugin`; the launcher calls ensure_plugin() before every
start, which rebuilds only when the source is newer than the plugin.

A missing compiler or header package is refused with one line naming the Debian package (MissingTool), before
gcc prints pages of errors (snaptax.cbuild). The compiler is $CC, else gcc; `cc=` overrides both (tests use a
nonexistent one).
"""
from __future__ import annotations

from pathlib import Path

from .. import cbuild
from ..paths import COFW_PLUGIN, COFW_SOURCE

# header -> the Debian package that ships it
HEADERS = (("nbdkit-plugin.h", "nbdkit-plugin-dev"), ("libnbd.h", "libnbd-dev"))
LIBS = ("-lnbd",)


def needs_build(source: Path = COFW_SOURCE, plugin: Path = COFW_PLUGIN) -> bool:
    return cbuild.needs_build([source], plugin)


def build_plugin(cc: str | None = None, *, source: Path = COFW_SOURCE, plugin: Path = COFW_PLUGIN,
                 force: bool = False) -> Path:
    """Compile `source` into `plugin` when it is missing or older than the source (or `force`); return it."""
    return cbuild.compile_shared([source], plugin, headers=HEADERS, libs=LIBS, cc=cc, force=force)


def ensure_plugin() -> Path:
    """The plugin, (re)built if the source is newer (a no-op after make setup)."""
    if needs_build():
        return build_plugin()
    return COFW_PLUGIN
