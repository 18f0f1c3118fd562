"""The stand-ins' operating points inferred from runs (`snaptax infer`), written to rigs/operating-points/<rig>.yaml.

Each inferred stand-in (snaptax.standins) names the Value of the sweep study that infers it (its value_key); the
newest run of that study at a profile gives the value and its interval. The file is what studies' plans read
(snaptax.operatingpoints); a value outside its range is refused before anything is written.
"""
from __future__ import annotations

import math
from pathlib import Path

import yaml

from . import derived, standins, studies
from .operatingpoints import HEADER, OperatingPoint, path
from .record import published_runs, write_atomic


def infer(rig: str, profile: str) -> dict[str, OperatingPoint]:
    """Every inferred stand-in's operating point from the newest run (of `profile`) of the study that infers it;
    stand-ins whose study has no run yet, or whose run gives no finite value, are left out."""
    out = {}
    for s in standins.STAND_INS:
        if s.source != "inferred" or not s.value_key:
            continue
        study = s.value_key.split(".")[0]
        runs = published_runs(rig, study, profile) if study in studies.ids() else []
        if not runs:
            continue
        v = derived.values_of(runs[-1]).values.get(s.value_key)
        if v is None or not math.isfinite(v.value):
            continue
        out[s.id] = OperatingPoint(s.id, v.value, v.low, v.high, f"{study}/{runs[-1].name}", s.calibrating)
    return out


def write(rig: str, points: dict[str, OperatingPoint]) -> Path:
    body = {sid: {"value": p.value, "low": p.low, "high": p.high, "run": p.run, "calibrating": p.calibrating}
            for sid, p in sorted(points.items())}
    p = path(rig)
    p.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(p, HEADER + yaml.safe_dump(body, sort_keys=True))
    return p


__all__ = ["infer", "write"]
