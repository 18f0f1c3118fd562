"""A stand-in's L2-cache coverage at the rig's inferred operating point (issue 46), for every study that measures a
qcow2 redo-log stand-in: the point from rigs/operating-points/<rig>.yaml (snaptax.operatingpoints) rounded to whole
L2 slices at the run's disk size, or the study's preset where the stand-in has not been inferred on the rig. The
run records each point it measured at (its parameters' `operating_points`: snaptax.judged counts the calibrating
statement as calibration for that run only)."""
from __future__ import annotations

from fractions import Fraction

from .. import operatingpoints
from ..engines.qcow2 import nearest_coverage
from ..operatingpoints import UsedPoint


def coverage(rig: str, stand_in: str, disk_size: int, preset: Fraction) -> tuple[Fraction, UsedPoint | None]:
    """The coverage `stand_in` measures at on `rig` and the operating point it realises (None: the preset)."""
    point = operatingpoints.read(rig).get(stand_in)
    if point is None:
        return preset, None
    c = nearest_coverage(point.value, disk_size)
    return c, UsedPoint.of(point, float(c))


__all__ = ["coverage"]
