"""Compiling the project's C shared objects (the copy-on-first-write engine's nbdkit plugin, the spindle
emulator's plugin and its model core) with gcc against Debian's -dev packages.

A missing compiler or header package is refused with one line naming the Debian package (MissingTool), before
gcc prints pages of errors; a failed compile with one line (EngineError). The compiler is `cc`, else $CC, else
gcc. The object is compiled beside its target and renamed over it, so a concurrent start never loads a
half-written file; it is rebuilt only when missing or older than one of its inputs (sources and headers).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import EngineError, MissingTool

BASE_CFLAGS = ("-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-format-truncation",
               "-fPIC", "-shared", "-pthread")


def compiler(cc: str | None = None) -> str:
    name = cc or os.environ.get("CC") or "gcc"
    path = shutil.which(name)
    if not path:
        raise MissingTool(name, "gcc")
    return path


def check_headers(cc: str, headers: Sequence[tuple[str, str]]) -> None:
    """Each (header, Debian package) through the preprocessor alone: a missing one is named with its package."""
    for header, package in headers:
        probe = subprocess.run([cc, "-E", "-x", "c", "-o", os.devnull, "-"], input=f"#include <{header}>\n",
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise MissingTool(header, package)


def needs_build(inputs: Sequence[Path], output: Path) -> bool:
    if not output.exists():
        return True
    built = output.stat().st_mtime
    return any(p.stat().st_mtime > built for p in inputs)


def compile_shared(sources: Sequence[Path], output: Path, *, headers: Sequence[tuple[str, str]] = (),
                   depends: Sequence[Path] = (), cflags: Sequence[str] = (), libs: Sequence[str] = (),
                   cc: str | None = None, force: bool = False) -> Path:
    """Compile `sources` into the shared object `output` when it is missing, older than a source or one of
    `depends` (headers), or `force`; return it."""
    cc_path = compiler(cc)
    if not force and not needs_build([*sources, *depends], output):
        return output
    check_headers(cc_path, headers)
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=output.name + ".", suffix=".tmp", dir=output.parent)
    os.close(fd)
    try:
        proc = subprocess.run([cc_path, *BASE_CFLAGS, *cflags, "-o", tmp, *map(str, sources), *libs],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            # One line: the first error gcc names, else its first line of output (a wrapper's), else the status.
            lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
            first = next((ln for ln in lines if "error" in ln),
                         lines[0][:200] if lines else f"{cc_path} exited with status {proc.returncode}")
            raise EngineError(f"building {output.name} from {sources[0].name} failed: {first}")
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return output
