"""Build the copy-on-first-write engine's C nbdkit plugin (cofw.c) with gcc against Debian's nbdkit-plugin-dev and
libnbd-dev. `make setup` runs `python -m snaptax build-plugin`; the launcher calls ensure_plugin() before every
start, which rebuilds only when the source is newer than the plugin.

A missing compiler or header package is refused with one line naming the Debian package (MissingTool), before
gcc prints pages of errors. The compiler is $CC, else gcc; `cc=` overrides both (tests use a nonexistent one).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import EngineError, MissingTool
from ..paths import COFW_PLUGIN, COFW_SOURCE

# header -> the Debian package that ships it
HEADERS = (("nbdkit-plugin.h", "nbdkit-plugin-dev"), ("libnbd.h", "libnbd-dev"))
CFLAGS = ("-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-format-truncation",
          "-fPIC", "-shared", "-pthread")
LIBS = ("-lnbd",)


def _compiler(cc: str | None) -> str:
    name = cc or os.environ.get("CC") or "gcc"
    path = shutil.which(name)
    if not path:
        raise MissingTool(name, "gcc")
    return path


def _check_headers(cc: str) -> None:
    """Each header through the preprocessor alone: a missing one is named with its package."""
    for header, package in HEADERS:
        probe = subprocess.run([cc, "-E", "-x", "c", "-o", os.devnull, "-"], input=f"#include <{header}>\n",
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise MissingTool(header, package)


def needs_build(source: Path = COFW_SOURCE, plugin: Path = COFW_PLUGIN) -> bool:
    return not plugin.exists() or plugin.stat().st_mtime < source.stat().st_mtime


def build_plugin(cc: str | None = None, *, source: Path = COFW_SOURCE, plugin: Path = COFW_PLUGIN,
                 force: bool = False) -> Path:
    """Compile `source` into `plugin` when it is missing or older than the source (or `force`); return it."""
    compiler = _compiler(cc)
    if not force and not needs_build(source, plugin):
        return plugin
    _check_headers(compiler)
    plugin.parent.mkdir(parents=True, exist_ok=True)
    # Compile beside the target and rename: a concurrent start never loads a half-written object.
    fd, tmp = tempfile.mkstemp(prefix=plugin.name + ".", suffix=".tmp", dir=plugin.parent)
    os.close(fd)
    try:
        proc = subprocess.run([compiler, *CFLAGS, "-o", tmp, str(source), *LIBS], capture_output=True, text=True)
        if proc.returncode != 0:
            # One line: the first error gcc names, else its first line of output (a wrapper's), else the status.
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            first = next((ln for ln in lines if "error" in ln),
                         lines[0][:200] if lines else f"{compiler} exited with status {proc.returncode}")
            raise EngineError(f"building {plugin.name} from {source.name} failed: {first}")
        os.replace(tmp, plugin)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return plugin


def ensure_plugin() -> Path:
    """The plugin, (re)built if the source is newer (a no-op after make setup)."""
    if needs_build():
        return build_plugin()
    return COFW_PLUGIN
