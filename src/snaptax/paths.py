"""Every path the project uses, built in one place.

Environment overrides (for tests and CI, which must not write into the checkout's data/):
  SNAPTAX_DATA_DIR  root of measured data            (default <repo>/data)
  SNAPTAX_WORK_DIR  scratch images, sockets, caches  (default from the rig file, else /var/tmp/snaptax)
  SNAPTAX_DERIVED_DIR  the cache of runs' derived values (default <repo>/build/derived)
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent        # src/snaptax
SRC_DIR = PACKAGE_DIR.parent                          # what must be on sys.path to import snaptax (nbdkit's plugin)
GUEST_DIR = PACKAGE_DIR / "guest"                     # the guest's scripts and lvm.conf (package data)
REPO_ROOT = PACKAGE_DIR.parents[1]
RIGS_DIR = REPO_ROOT / "rigs"
SPINDLES_DIR = RIGS_DIR / "spindles"                  # drive profiles and device specs (snaptax.spindle.rigfiles)
PAPER_DIR = REPO_ROOT / "paper"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"               # the study notebooks, NN_<study>.ipynb, with their outputs


def figures_dir(paper_dir: Path) -> Path:
    return paper_dir / "figures"


def generated_dir(paper_dir: Path) -> Path:
    """Tables and values the paper inputs, written by `snaptax render`."""
    return paper_dir / "generated"


def printed_values_file(paper_dir: Path, rig: str, profile: str) -> Path:
    """What the paper prints from a rig's runs of a profile, committed (snaptax.paper.printedvalues)."""
    return paper_dir / "printed" / f"{rig}-{profile}.tsv"


GENERATED_DIR = generated_dir(PAPER_DIR)
FIGURES_DIR = figures_dir(PAPER_DIR)
BENCH_DIR = REPO_ROOT / "bench"
BENCH_LATEST = BENCH_DIR / "latest.json"              # `make bench`'s figures, one flat JSON object
BUILD_DIR = REPO_ROOT / "build"                       # compiled artefacts and caches (git-ignored)
COFW_SOURCE = PACKAGE_DIR / "cofw" / "cofw.c"
COFW_PLUGIN = BUILD_DIR / "nbdkit-cofw.so"            # the copy-on-first-write engine's nbdkit plugin
SPINDLE_C_DIR = PACKAGE_DIR / "spindle"
SPINDLE_CORE_SOURCE = SPINDLE_C_DIR / "spindle_core.c"   # the emulator's model in C (model.py + arrays.py)
SPINDLE_CORE_HEADER = SPINDLE_C_DIR / "spindle_core.h"
SPINDLE_PLUGIN_SOURCE = SPINDLE_C_DIR / "spindle_plugin.c"
SPINDLE_PLUGIN = BUILD_DIR / "nbdkit-spindle.so"      # the spindle emulator's nbdkit plugin (core + timing)
SPINDLE_CORE_LIB = BUILD_DIR / "libspindle-core.so"   # the core alone, for the trace-equivalence test (ctypes)
NBD_SIMPLE_REPLIES_SOURCE = PACKAGE_DIR / "nbdclient" / "simple_replies.c"
NBD_SIMPLE_REPLIES_SHIM = BUILD_DIR / "libnbd-simple-replies.so"   # preloaded into fio: its nbd engine's replies
SITE_DIR = BUILD_DIR / "site"                         # the offline companion site (`snaptax site`, make site)
SITE_JS_PINS = REPO_ROOT / "tools" / "site-js.txt"    # the site's JavaScript: npm packages, versions, integrity
SITE_JS_DIR = BUILD_DIR / "site-js"                   # ... fetched once by tools/site-js.sh: <name>-<version>/

DEFAULT_WORK_DIR = Path("/var/tmp/snaptax")
# One lock for the whole machine: measurements are timing-sensitive and must never overlap,
# whichever checkout, test or helper starts them.
MEASURE_LOCK = Path("/var/tmp/snaptax-measure.lock")


def data_dir() -> Path:
    return Path(os.environ.get("SNAPTAX_DATA_DIR", REPO_ROOT / "data"))


def derived_dir() -> Path:
    """The cache of runs' derived values (snaptax.derived): build/derived, or SNAPTAX_DERIVED_DIR (tests)."""
    return Path(os.environ.get("SNAPTAX_DERIVED_DIR", BUILD_DIR / "derived"))


def study_dir(rig: str, study: str) -> Path:
    return data_dir() / rig / study


def work_dir(configured: str | Path | None = None) -> Path:
    env = os.environ.get("SNAPTAX_WORK_DIR")
    if env:
        return Path(env)
    return Path(configured) if configured else DEFAULT_WORK_DIR


def engine_run_dir(rig_work_dir: Path, tag: str) -> Path:
    """Scratch of one running engine or daemon (sockets, logs, lvm.conf), named by its tag (e.g. 'qcow2-c64k');
    the process group that runs it removes it on close."""
    return rig_work_dir / "run" / tag


def rig_file(name_or_path: str | Path) -> Path:
    """A rig given by name ('local') resolves to rigs/local.yaml; anything with a suffix or slash is a path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or "/" in str(name_or_path):
        return p
    return RIGS_DIR / f"{name_or_path}.yaml"
