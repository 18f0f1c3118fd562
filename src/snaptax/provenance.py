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


def git_state() -> dict[str, str | bool | None]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(paths.REPO_ROOT), *args], capture_output=True,
                                 text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None
    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


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
