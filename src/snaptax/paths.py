"""Every path the project uses, built in one place.

Environment overrides (for tests and CI, which must not write into the checkout's data/):
  SNAPTAX_DATA_DIR  root of measured data            (default <repo>/data)
  SNAPTAX_WORK_DIR  scratch images, sockets, caches  (default from the rig file, else /var/tmp/snaptax)
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
RIGS_DIR = REPO_ROOT / "rigs"
PAPER_DIR = REPO_ROOT / "paper"
GENERATED_DIR = PAPER_DIR / "generated"
FIGURES_DIR = PAPER_DIR / "figures"
BENCH_DIR = REPO_ROOT / "bench"
BUILD_DIR = REPO_ROOT / "build"                       # compiled artefacts (git-ignored), rebuilt by make setup
COFW_SOURCE = REPO_ROOT / "src" / "snaptax" / "cofw" / "cofw.c"
COFW_PLUGIN = BUILD_DIR / "nbdkit-cofw.so"            # the copy-on-first-write engine's nbdkit plugin

DEFAULT_WORK_DIR = Path("/var/tmp/snaptax")
# One lock for the whole machine: measurements are timing-sensitive and must never overlap,
# whichever checkout, test or helper starts them.
MEASURE_LOCK = Path("/var/tmp/snaptax-measure.lock")


def data_dir() -> Path:
    return Path(os.environ.get("SNAPTAX_DATA_DIR", REPO_ROOT / "data"))


def study_dir(rig: str, study: str) -> Path:
    return data_dir() / rig / study


def work_dir(configured: str | Path | None = None) -> Path:
    env = os.environ.get("SNAPTAX_WORK_DIR")
    if env:
        return Path(env)
    return Path(configured) if configured else DEFAULT_WORK_DIR


def rig_file(name_or_path: str | Path) -> Path:
    """A rig given by name ('local') resolves to rigs/local.yaml; anything with a suffix or slash is a path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or "/" in str(name_or_path):
        return p
    return RIGS_DIR / f"{name_or_path}.yaml"
