"""Measure the engine comparison on one rig device (needs root: loop devices; LVM thin boots a TCG guest)."""
from __future__ import annotations

from ...engines.base import SnapshotEngine
from ...engines.cofw import CofwEngine
from ...engines.lvmthin.engine import LvmThinEngine
from ...engines.qcow2 import Qcow2ChainEngine
from ...host.rig import Device, Rig
from ...profiles import Profile
from ...record import RunSession
from ..contract import Setup, whole_study
from . import plan as planmod


def engine_for(v: planmod.Variant, rig: Rig, dev: Device, disk_size: int) -> SnapshotEngine:
    """A fresh engine instance (its own volume) for one variant."""
    if v.family.startswith("qcow2"):
        return Qcow2ChainEngine(rig, dev, v.config, disk_size)  # type: ignore[arg-type]
    if v.family == "cofw":
        return CofwEngine(rig, dev, v.config, disk_size)  # type: ignore[arg-type]
    return LvmThinEngine(rig, dev, v.config, disk_size)  # type: ignore[arg-type]


def setup(rig: Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Every engine/grain variant on one rig device (`device`, default: the rig's first)."""
    whole_study("engines", part)
    dev = rig.device(device)
    s = planmod.scale(profile)
    study = planmod.build_plan(profile)
    by_name = {v.name: v for v in planmod.variants(profile)}

    def measure(session: RunSession) -> None:
        for vp in study.variants:
            v = by_name[vp.variant]
            with engine_for(v, rig, dev, s.disk_size) as engine:
                with session.in_variant(v.name, {**engine.describe(), "study": v.describe()}):
                    engine.execute(vp.plan, session)
    return Setup(planmod.parameters(profile, dev.name), (dev.name,), study.points(), planmod.planned_seconds(profile),
                 measure)
