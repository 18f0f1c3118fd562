"""Measure the engine comparison on one rig device (needs root: loop devices; LVM thin boots a TCG guest)."""
from __future__ import annotations

from pathlib import Path

from ... import profiles
from ...engines.base import SnapshotEngine
from ...engines.cofw import CofwEngine
from ...engines.lvmthin.engine import LvmThinEngine
from ...engines.qcow2 import Qcow2ChainEngine
from ...host import rig as rigmod
from ...host.rig import Device, Rig
from ...record import RunSession
from . import plan as planmod


def engine_for(v: planmod.Variant, rig: Rig, dev: Device, disk_size: int) -> SnapshotEngine:
    """A fresh engine instance (its own volume) for one variant."""
    if v.family.startswith("qcow2"):
        return Qcow2ChainEngine(rig, dev, v.config, disk_size)  # type: ignore[arg-type]
    if v.family == "cofw":
        return CofwEngine(rig, dev, v.config, disk_size)  # type: ignore[arg-type]
    return LvmThinEngine(rig, dev, v.config, disk_size)  # type: ignore[arg-type]


def run(rig: str = "local", profile: str | profiles.Profile = profiles.DEFAULT, device: str | None = None) -> Path:
    """Measure every engine/grain variant on one rig device; returns the published run directory under data/."""
    prof = profile if isinstance(profile, profiles.Profile) else profiles.get(profile)
    r = rigmod.load(rig)
    dev = r.device(device)
    s = planmod.scale(prof)
    study = planmod.build_plan(prof)
    by_name = {v.name: v for v in planmod.variants(prof)}
    with RunSession(r, planmod.STUDY, prof, planmod.parameters(prof, dev.name).to_json(), devices_used=(dev.name,),
                    planned_points=study.points(),
                    planned_seconds=planmod.planned_seconds(prof)) as session:
        for vp in study.variants:
            v = by_name[vp.variant]
            with engine_for(v, r, dev, s.disk_size) as engine:
                with session.in_variant(v.name, {**engine.describe(), "study": v.describe()}):
                    engine.execute(vp.plan, session)
    assert session.published is not None
    return session.published
