"""Seed 001's two redo-log stand-ins at the rig's inferred operating points (issue 46), for every study that stands
in for VMFS's SEsparse and vSAN's vsanSparse (chain_length, chain_bulk).

The qcow2 L2-cache coverage of each comes from rigs/operating-points/<rig>.yaml (snaptax.operatingpoints: inferred by
the metadata-cache sweep from Table 1's random-job losses, the calibrating statements) rounded to whole L2 slices at
the run's disk size; a stand-in not inferred on the rig keeps its preset (engines.qcow2.PRESET_COVERAGES). The run
records each operating point it measured at (its parameters' `operating_points`), so that its calibrating statement
is counted as calibration for that run only (snaptax.judged).
"""
from __future__ import annotations

from fractions import Fraction

from .. import operatingpoints
from ..engines.qcow2 import PRESET_COVERAGES
from ..operatingpoints import UsedPoint
from ..record import short_run_id
from ..values import Value
from . import standin_settings

# the stand-in of each configuration, in engines.qcow2.metadata_configs' order
STAND_INS = {"on-disk-metadata": "vmfs_sesparse", "in-memory-metadata": "vsan_sparse"}


def coverages(rig: str, disk_size: int) -> tuple[tuple[Fraction, Fraction], tuple[UsedPoint, ...]]:
    """The two configurations' L2-cache coverages on `rig` at `disk_size`, and the operating points they realise
    (none for a preset)."""
    found: list[Fraction] = []
    used: list[UsedPoint] = []
    for preset, stand_in in zip(PRESET_COVERAGES, STAND_INS.values(), strict=True):
        c, point = standin_settings.coverage(rig, stand_in, disk_size, preset)
        found.append(c)
        used += [point] if point else []
    return (found[0], found[1]), tuple(used)


def describe(rig: str = "local") -> str:
    """Where the coverages come from on `rig`, in words (a plan's description)."""
    points = operatingpoints.read(rig)
    parts = []
    for (config, stand_in), preset in zip(STAND_INS.items(), PRESET_COVERAGES, strict=True):
        p = points.get(stand_in)
        parts.append(f"{config}: inferred {p.value:.3f} [{p.low:.3f}, {p.high:.3f}] ({p.run})" if p else
                     f"{config}: preset {preset} (not inferred on rig {rig})")
    return "L2-cache coverages (rigs/operating-points): " + "; ".join(parts)


def operating_point_values(prefix: str, used: tuple[UsedPoint, ...] | None) -> list[Value]:
    """What a run's analysis quotes of its stand-ins' settings: per configuration `<prefix>.coverage.<config>` (the
    coverage it measured at) and `<prefix>.coverage_source.<config>` (inferred from a run, or the preset); for an
    inferred one `<prefix>.coverage_inferred.<config>` (the value inferred, with its interval)."""
    by_stand_in = {p.stand_in: p for p in used or ()}
    out: list[Value] = []
    for (config, stand_in), preset in zip(STAND_INS.items(), PRESET_COVERAGES, strict=True):
        p = by_stand_in.get(stand_in)
        out.append(Value(f"{prefix}.coverage.{config}", p.realised if p else float(preset), "", digits=3))
        out.append(Value(f"{prefix}.coverage_source.{config}",
                         text=f"inferred from {short_run_id(p.run)}" if p else "preset"))
        if p:
            out.append(Value(f"{prefix}.coverage_inferred.{config}", p.inferred, "", p.low, p.high, digits=3))
    return out


__all__ = ["STAND_INS", "coverages", "describe", "operating_point_values"]
