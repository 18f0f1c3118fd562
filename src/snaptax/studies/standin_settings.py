"""A stand-in's L2-cache coverage at the rig's inferred operating point (issue 46), for the studies that measure seed
000's qcow2 redo-log stand-in (lifecycle, calibration): the point from rigs/operating-points/<rig>.yaml
(snaptax.operatingpoints) rounded to whole L2 slices at the run's disk size, or the study's preset where the stand-in
has not been inferred on the rig. The run records each point it measured at (its parameters' `operating_points`:
snaptax.judged counts the calibrating statement as calibration for that run only). Seed 001's two stand-ins have
their own module (seed001_standins), as they come in a pair."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction

from .. import operatingpoints
from ..engines.qcow2 import Qcow2Config, l2_cache_size_for, nearest_coverage
from ..operatingpoints import UsedPoint
from ..record import short_run_id
from ..values import Value


def coverage(rig: str, stand_in: str, disk_size: int, preset: Fraction) -> tuple[Fraction, UsedPoint | None]:
    """The coverage `stand_in` measures at on `rig` and the operating point it realises (None: the preset)."""
    point = operatingpoints.read(rig).get(stand_in)
    if point is None:
        return preset, None
    c = nearest_coverage(point.value, disk_size)
    return c, UsedPoint.of(point, float(c))


def esx35_config(preset: Qcow2Config, disk_size: int, coverage: Fraction, preset_coverage: Fraction) -> Qcow2Config:
    """Seed 000's redo log: `preset` (a study's qcow2 preset, at `preset_coverage`) with an L2 cache holding
    `coverage` of its tables (the preset itself at its own coverage), so a lookup reads the block map from the device
    with probability 1 − coverage."""
    if coverage == preset_coverage:
        return preset
    return dataclasses.replace(preset, name="esx35-redo-log", analogue="vmfsSparse redo log (ESX 3.5)",
                               l2_cache_size=l2_cache_size_for(preset.l2_bytes_for(disk_size), coverage,
                                                               preset.cluster_size))


def crossing(coverage: Sequence[float], h: Sequence[float], target: float) -> float:
    """The coverage at which h, decreasing with the coverage, first falls to `target`: linear interpolation between
    the two neighbouring coverages that bracket it; -inf when even the least coverage gives less, +inf when even the
    greatest gives more, nan when h is not finite there. (A quantity that rises with the coverage crosses where its
    negative crosses the negative target.)"""
    pts = [(c, v) for c, v in zip(coverage, h, strict=True) if math.isfinite(v)]
    if not pts:
        return math.nan
    if pts[0][1] < target:
        return -math.inf
    for (c0, h0), (c1, h1) in zip(pts, pts[1:], strict=False):
        if h0 >= target > h1:
            return c0 + (h0 - target) / (h0 - h1) * (c1 - c0)
    return math.inf


def operating_point_values(prefix: str, stand_in: str, preset: Fraction,
                           used: tuple[UsedPoint, ...] | None) -> list[Value]:
    """What a run's analysis quotes of its stand-in's setting: `<prefix>.coverage` (the coverage it measured at),
    `<prefix>.coverage_source` (inferred from a run, or the preset) and, for an inferred one,
    `<prefix>.coverage_inferred` (the value inferred, with its interval). used: the run's recorded operating points
    (None: a run before them, at the preset)."""
    p = next((u for u in used or () if u.stand_in == stand_in), None)
    out = [Value(f"{prefix}.coverage", p.realised if p else float(preset), "", digits=3),
           Value(f"{prefix}.coverage_source", text=f"inferred from {short_run_id(p.run)}" if p else "preset")]
    if p:
        out.append(Value(f"{prefix}.coverage_inferred", p.inferred, "", p.low, p.high, digits=3))
    return out


__all__ = ["coverage", "esx35_config", "crossing", "operating_point_values"]
