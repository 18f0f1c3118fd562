"""Measure the chain-length study on a rig (needs root: loop devices)."""
from __future__ import annotations

from pathlib import Path

from ... import profiles
from ...engines.lvmthin.engine import execute_variant
from ...engines.qcow2 import execute_per_config
from ...host import rig as rigmod
from ...plan import StudyPlan
from ...record import RunSession
from . import plan as planmod

STUDY = "chain_length"


def run(rig_name: str = "local", profile_name: str = profiles.DEFAULT, device: str | None = None) -> Path:
    """Measure the study on a rig; returns the published run directory under data/. The LVM thin row is measured
    when the rig lists the lvmthin engine."""
    profile = profiles.get(profile_name)
    rig = rigmod.load(rig_name)
    dev = rig.device(device)
    lvmthin = "lvmthin" in rig.engines
    study = planmod.build_plan(profile, lvmthin=lvmthin)
    configs = {c.name: c for c in planmod.configs(profile)}
    with RunSession(rig, STUDY, profile, planmod.parameters(profile, dev.name).to_json(), devices_used=(dev.name,),
                    planned_points=study.points(),
                    planned_seconds=planmod.planned_seconds(profile, lvmthin=lvmthin)) as session:
        execute_per_config(rig, dev, configs, StudyPlan(tuple(v for v in study.variants if v.variant in configs)),
                           profile.disk_size, session)
        if lvmthin:
            execute_variant(rig, dev, planmod.lvmthin_config(profile), profile.disk_size, planmod.LVM_THIN,
                            study.variant(planmod.LVM_THIN).plan, session)
    assert session.published is not None
    return session.published
