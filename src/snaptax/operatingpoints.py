"""Inferred operating points, committed per rig: rigs/operating-points/<rig>.yaml.

A stand-in whose setting is inferred (snaptax.standins, source "inferred") gets its value from the analysis of the
sweep that infers it: the Value named by the stand-in's value_key in the newest run of that study. `snaptax infer`
writes them here, each with its interval, the run it comes from and the calibrating statement, and the plans of the
studies that use the stand-in read it (each run records the value it measured with in its parameters), so that one
operating point per seed system is used by every study that stands in for it. Written only by `snaptax infer`, never
by hand; a value it would write outside its documented bound is refused.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import paths, standins
from .errors import ConfigError

HEADER = ("# inferred operating points of the stand-ins on this rig: written by `snaptax infer` from the newest runs "
          "(snaptax.operatingpoints); do not edit\n")


@dataclass(frozen=True)
class OperatingPoint:
    stand_in: str
    value: float
    low: float
    high: float
    run: str                 # the run it was inferred from (study/run-id)
    calibrating: str         # the registered claim it was inferred from


def path(rig: str) -> Path:
    return paths.RIGS_DIR / "operating-points" / f"{rig}.yaml"


def read(rig: str) -> dict[str, OperatingPoint]:
    """The rig's inferred operating points by stand-in ({} when none has been inferred)."""
    p = path(rig)
    if not p.exists():
        return {}
    raw = yaml.safe_load(p.read_text()) or {}
    out = {}
    for sid, d in raw.items():
        try:
            out[sid] = OperatingPoint(sid, float(d["value"]), float(d["low"]), float(d["high"]), str(d["run"]),
                                      str(d["calibrating"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(str(p), f"{sid}.{exc.args[0] if exc.args else '?'}", "missing or malformed") from None
    return out


def get(rig: str, stand_in: str) -> OperatingPoint:
    """The operating point a plan measures a stand-in at (ConfigError, naming how to infer it, when none is)."""
    found = read(rig).get(stand_in)
    if found is None:
        s = standins.get(stand_in)
        raise ConfigError(str(path(rig)), stand_in, f"not inferred yet: measure the sweep that infers it "
                          f"({s.value_key.split('.')[0]}) and run `snaptax infer --rig {rig}`")
    return found


def write(rig: str, points: dict[str, OperatingPoint]) -> Path:
    from .record import write_atomic

    body = {sid: {"value": p.value, "low": p.low, "high": p.high, "run": p.run, "calibrating": p.calibrating}
            for sid, p in sorted(points.items())}
    p = path(rig)
    write_atomic(p, HEADER + yaml.safe_dump(body, sort_keys=True))
    return p


def infer(rig: str, profile: str) -> dict[str, OperatingPoint]:
    """Every inferred stand-in's operating point from the newest run (of `profile`) of the study that infers it;
    stand-ins whose study has no run yet, or whose run gives no finite value, are left out."""
    from . import derived, studies
    from .record import published_runs

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


__all__ = ["OperatingPoint", "path", "read", "get", "write", "infer"]
