"""Measure the chain-length study on a rig (needs root: loop devices)."""
from __future__ import annotations

from ...engines.lvmthin.engine import execute_variant
from ...engines.qcow2 import execute_per_config
from ...host.rig import Rig
from ...plan import StudyPlan
from ...profiles import Profile
from ...record import RunSession
from ..contract import Setup
from . import plan as planmod

STUDY = "chain_length"


def setup(rig: Rig, profile: Profile, device: str | None = None) -> Setup:
    """The qcow2 configurations on `device` (default: the rig's first), and the LVM thin row when the rig lists the
    lvmthin engine."""
    dev = rig.device(device)
    lvmthin = "lvmthin" in rig.engines
    study = planmod.build_plan(profile, lvmthin=lvmthin)
    configs = {c.name: c for c in planmod.configs(profile)}

    def measure(session: RunSession) -> None:
        execute_per_config(rig, dev, configs, StudyPlan(tuple(v for v in study.variants if v.variant in configs)),
                           profile.disk_size, session)
        if lvmthin:
            execute_variant(rig, dev, planmod.lvmthin_config(profile), profile.disk_size, planmod.LVM_THIN,
                            study.variant(planmod.LVM_THIN).plan, session)
    return Setup(planmod.parameters(profile, dev.name), (dev.name,), study.points(),
                 planmod.planned_seconds(profile, lvmthin=lvmthin), measure)
