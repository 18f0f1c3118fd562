"""Provenance of a run: the software, host and source revision that produced it."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from . import __version__, paths


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _first_line(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def tool_versions() -> dict[str, str | None]:
    return {
        "fio": _first_line(["fio", "--version"]),
        "qemu-storage-daemon": _first_line(["qemu-storage-daemon", "--version"]),
        "qemu-img": _first_line(["qemu-img", "--version"]),
        "qemu-system-x86_64": _first_line(["qemu-system-x86_64", "--version"]),
        "nbdkit": _first_line(["nbdkit", "--version"]),
        "python": sys.version.split()[0],
        "snaptax": __version__,
    }


# The measuring tools whose version can change a result: Debian's point releases change them (a QEMU 7.2 update once
# broke iothread exports), so a rerun with other versions is said to be one.
MEASURING_TOOLS = ("fio", "qemu-storage-daemon", "qemu-img", "qemu-system-x86_64", "nbdkit")


def tool_drift(recorded: list[dict[str, str | None]], installed: dict[str, str | None]) -> str:
    """One line naming each measuring tool whose installed version differs from the versions the given runs
    recorded (their manifests' provenance.tools), with how many runs recorded each; '' when none differs."""
    parts = []
    for tool in MEASURING_TOOLS:
        seen: dict[str, int] = {}
        for tools in recorded:
            version = tools.get(tool)
            if version:
                seen[version] = seen.get(version, 0) + 1
        here = installed.get(tool) or "not installed"
        others = {v: n for v, n in seen.items() if v != here}
        if others:
            was = ", ".join(f"{v!r} in {n} run{'s' if n > 1 else ''}" for v, n in sorted(others.items()))
            parts.append(f"{tool}: {here!r} here, {was}")
    if not parts:
        return ""
    return ("the installed tools differ from those the paper's runs recorded (a rerun may differ for that): "
            + "; ".join(parts))


def git_state() -> dict[str, str | bool | None]:
    """The commit checked out, and whether the code that measures (CODE_PATHS) has uncommitted changes or new
    files: notebooks, data and the paper are outputs and do not make a run's code dirty."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(paths.REPO_ROOT), *args], capture_output=True,
                                 text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=normal", "--", *CODE_PATHS)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def uncommitted_code_files(root: Path | None = None) -> list[str]:
    """The files under CODE_PATHS that differ from HEAD or are new and not ignored (what makes git_state dirty)."""
    try:
        out = subprocess.run(["git", "-C", str(root or paths.REPO_ROOT), "status", "--porcelain",
                              "--untracked-files=normal", "--", *CODE_PATHS], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line[3:] for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


# The code that measures: a run made from a tree with uncommitted changes keeps their diff beside its manifest
# (UNCOMMITTED_DIFF), so that the "+" of its code label (record.Manifest.code_label) names code a reader can rebuild:
# the commit plus this diff. notebooks/, data/ and paper/ are left out: a notebook only passes parameters to the
# package, and the published data and the paper are outputs, not the code that measured.
CODE_PATHS = ("src", "rigs", "tools", "Makefile", "pyproject.toml", "requirements.txt", "environment.yml")
UNCOMMITTED_DIFF = "uncommitted.diff"


def uncommitted_diff(root: Path | None = None) -> str | None:
    """`git diff HEAD` of the tracked files under CODE_PATHS in `root` (default: the repository): '' when they are as
    committed, None when git cannot say (no git, not a repository)."""
    try:
        out = subprocess.run(["git", "-C", str(root or paths.REPO_ROOT), "diff", "--no-color", "--no-ext-diff",
                              "HEAD", "--", *CODE_PATHS], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def host() -> dict:
    cpu = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = None
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem_kib = int(line.split()[1])
                break
    except OSError:
        pass
    return {"hostname": platform.node(), "kernel": platform.release(), "kernel_version": platform.version(),
            "machine": platform.machine(), "cpu": cpu, "cpus": os.cpu_count(), "mem_kib": mem_kib}


def collect() -> dict:
    return {"tools": tool_versions(), "git": git_state(), "host": host(), "collected_utc": utc_now()}
