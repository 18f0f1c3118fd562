"""The stand-ins' operating points inferred from runs (`snaptax infer`), written to rigs/operating-points/<rig>.yaml.

Each inferred stand-in (snaptax.standins) names the Value of the sweep study that infers it (its value_key); the
newest run of that study at a profile gives the value and its interval. The file is what studies' plans read
(snaptax.operatingpoints); a value outside its range is refused before anything is written. `--stand-in` infers only
the stand-ins named and keeps the others where the file has them.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import yaml

from . import derived, operatingpoints, paths, standins, studies
from .operatingpoints import HEADER, OperatingPoint, path
from .record import RunRef, readable_runs, write_atomic


def point_of(s: standins.StandIn, run: RunRef) -> OperatingPoint | None:
    """The operating point `run` (a run of the study that infers `s`) gives, or None when it gives no finite value."""
    v = derived.values_of(run).values.get(s.value_key)
    if v is None or not math.isfinite(v.value):
        return None
    return OperatingPoint(s.id, v.value, v.low, v.high, f"{run.parent.name}/{run.name}", s.calibrating)


def infer(rig: str, profile: str, only: Iterable[str] | None = None) -> dict[str, OperatingPoint]:
    """Every inferred stand-in's operating point from the newest run (of `profile`) of the study that infers it;
    stand-ins whose study has no run yet, or whose run gives no finite value, are left out. only: infer these
    stand-ins anew and keep every other one at the point the rig's file gives it (a point the studies have measured
    at stays fixed when a later sweep would move it: its runs would otherwise stand at a point no longer in use)."""
    chosen = None if only is None else set(only)
    kept = operatingpoints.read(rig) if chosen is not None else {}
    out = {}
    for s in standins.STAND_INS:
        if s.source != "inferred" or not s.value_key:
            continue
        if chosen is not None and s.id not in chosen:
            if s.id in kept:
                out[s.id] = kept[s.id]
            continue
        study = s.value_key.split(".")[0]
        runs = readable_runs(rig, study, profile) if study in studies.ids() else []
        point = point_of(s, runs[-1]) if runs else None
        if point is not None:
            out[s.id] = point
    return out


def recorded_run(rig: str, point: OperatingPoint) -> Path:
    """The run directory a point names (its `run`: study/run-id) on `rig`."""
    study, run = point.run.split("/", 1)
    return paths.study_dir(rig, study) / run


def write(rig: str, points: dict[str, OperatingPoint]) -> Path:
    body = {sid: {"value": p.value, "low": p.low, "high": p.high, "run": p.run, "calibrating": p.calibrating}
            for sid, p in sorted(points.items())}
    p = path(rig)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, HEADER + yaml.safe_dump(body, sort_keys=True))
    return p


__all__ = ["point_of", "infer", "recorded_run", "write"]
