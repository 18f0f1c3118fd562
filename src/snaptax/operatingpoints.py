"""Inferred operating points, committed per rig: rigs/operating-points/<rig>.yaml.

A stand-in whose setting is inferred (snaptax.standins, source "inferred") gets its value from the analysis of the
sweep that infers it: the Value named by the stand-in's value_key in the newest run of that study. `snaptax infer`
(snaptax.inferpoints) writes them there, each with its interval, the run it comes from and the calibrating
statement, and the plans of the studies that use the stand-in read them here (each run records the points it
measured at in its parameters: UsedPoint), so that one operating point per seed system is used by every study that
stands in for it. Written only by `snaptax infer`, never by hand; a value outside its range is refused.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class UsedPoint:
    """An inferred operating point as a run measured at it (its parameters' `operating_points`): the stand-in, the
    value inferred with its interval and the run it was inferred from, and the setting the engine realised (its
    nearest whole step: a whole number of L2 slices for a coverage)."""

    stand_in: str
    inferred: float
    low: float
    high: float
    run: str
    realised: float

    @classmethod
    def of(cls, point: OperatingPoint, realised: float) -> UsedPoint:
        return cls(point.stand_in, point.value, point.low, point.high, point.run, realised)


# The run value (analysis.run_values: <study>.run.inferred_stand_ins) naming the stand-ins a run measured at their
# inferred operating points with the setting each realised ('vmfs_sesparse=0.921875,...'), and what it holds when
# there were none.
RUN_VALUE = "inferred_stand_ins"
NONE = "none"


def settings_in(parameters: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """(stand-in, realised setting) of each inferred operating point a run measured at, from its manifest's
    parameters, by stand-in (a run that recorded none, or was made before operating points were recorded: none)."""
    found = parameters.get("operating_points") or ()
    return tuple(sorted({(str(p["stand_in"]), float(p.get("realised", math.nan))) for p in found
                         if isinstance(p, Mapping) and "stand_in" in p}))


def used_in(parameters: Mapping[str, Any]) -> tuple[str, ...]:
    """The stand-ins a run measured at their inferred operating points (settings_in's names)."""
    return tuple(sid for sid, _ in settings_in(parameters))


def shown(settings: Iterable[tuple[str, float]]) -> str:
    """The run value's text for `settings` (settings_in's; judged.inferred_in reads the names back). A realised
    setting is a ratio of small whole numbers (slices), printed exactly in 6 significant digits."""
    return ",".join(f"{sid}={value:.6g}" for sid, value in sorted(settings)) or NONE


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


def refused(point: OperatingPoint) -> str:
    """Why an inferred value cannot be written ('' when it can): every inferred setting is a share (a cache coverage,
    the share of a memory skipped as all-zero) and lies in [0, 1] with its interval."""
    if not (0.0 <= point.low <= point.value <= point.high <= 1.0):
        return (f"{point.value:g} [{point.low:g}, {point.high:g}] from {point.run} lies outside [0, 1], the range "
                "of a share")
    return ""


__all__ = ["OperatingPoint", "UsedPoint", "RUN_VALUE", "NONE", "HEADER", "settings_in", "used_in", "shown", "path",
           "read", "get", "refused"]
