"""Derived values of published runs, kept apart from the raw runs.

A published run (data/<rig>/<study>/<run>/) is raw: nothing writes into it after it is published. What its study's
analysis makes of it — the Values and the claims' verdicts (values.DerivedValues) — is derived: computed when it is
read, and cached under build/derived/ (git-ignored), keyed by the run's manifest and by a fingerprint of the code that
analysed it, so that a second `make claims` or `make compare` reads the values back instead of analysing again,
while a changed analysis is never served stale values. Nothing here is committed: the committed record of what the
paper prints is snaptax.paper.printedvalues.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from . import paths
from .record import MANIFEST, PartSet, RunRef, load_run, write_atomic
from .values import DerivedValues, DerivedValuesFormatError

if TYPE_CHECKING:
    from .analysis import Analysis


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the package's source (every file under src/snaptax, by path and content): the code that analyses."""
    h = hashlib.sha256()
    for f in sorted(p for p in paths.PACKAGE_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(paths.PACKAGE_DIR)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _stem(run: RunRef) -> str:
    """The start of a run's cache file names: a whole run's id; a set's first part's id, its count and a hash of its
    name (the parts' ids joined: 9 parts of 41 characters are longer than a file name may be)."""
    if not isinstance(run, PartSet):
        return Path(run).name
    return f"{run.runs[0].name}+{len(run.runs) - 1}-{hashlib.sha256(run.name.encode()).hexdigest()[:12]}"


def cache_path(run: RunRef) -> Path:
    """Where the derived values of a run are cached: named by the run's place, its manifest and the code (a set of
    part runs: by each part's place and manifest)."""
    dirs = [r.resolve() for r in run.runs] if isinstance(run, PartSet) else [Path(run).resolve()]
    h = hashlib.sha256(f"{code_fingerprint()}\0".encode())
    for d in dirs:
        h.update(f"{d}\0".encode() + (d / MANIFEST).read_bytes())
    return paths.derived_dir() / dirs[0].parent.name / f"{_stem(run)}-{h.hexdigest()[:20]}.json"


def store(run: RunRef, derived: DerivedValues) -> None:
    """Keep a run's derived values in the cache (and drop those of other code for the same run)."""
    path = cache_path(run)
    for stale in path.parent.glob(f"{_stem(run)}-*.json"):
        if stale != path:
            stale.unlink(missing_ok=True)
    write_atomic(path, json.dumps(derived.to_json(), indent=1, sort_keys=True, allow_nan=False) + "\n")


def analyse(run: RunRef) -> Analysis:
    """A published run (or a complete set of part runs) analysed by its study now (tables, fits, figures' data), its
    values cached for later reads."""
    from . import studies

    record = load_run(run)
    analysis = studies.get(record.manifest.study).analyse(record)
    store(run, analysis.derived_values())
    return analysis


def values_of(run: RunRef) -> DerivedValues:
    """A published run's derived values: from the cache when the same code made them, else analysed now."""
    try:
        return DerivedValues.from_json(json.loads(cache_path(run).read_text()), cache_path(run))
    except (FileNotFoundError, ValueError, DerivedValuesFormatError):
        return analyse(run).derived_values()


__all__ = ["code_fingerprint", "cache_path", "store", "analyse", "values_of"]
