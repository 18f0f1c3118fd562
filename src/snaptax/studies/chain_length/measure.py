"""Measure the chain-length study on a rig (needs root: loop devices)."""
from __future__ import annotations

from ...engines.lvmthin.engine import execute_variant
from ...engines.qcow2 import execute_per_config
from ...host.rig import Rig
from ...plan import StudyPlan, split_replicate
from ...profiles import Profile
from ...record import RunSession
from .. import seed001_standins
from ..contract import Setup
from . import plan as planmod

STUDY = "chain_length"


def setup(rig: Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """The qcow2 configurations on `device` (default: the rig's first), and the LVM thin row when the rig lists the
    lvmthin engine; `part`: only that configuration in that replicate (planmod.parts at this rig's engines)."""
    dev = rig.device(device)
    lvmthin = "lvmthin" in rig.engines
    study = planmod.build_plan(profile, lvmthin=lvmthin, part=part)
    # the stand-ins at the rig's inferred operating points (seed001_standins), recorded in the parameters
    coverages, used = seed001_standins.coverages(rig.name, profile.disk_size)
    configs = {c.name: c for c in planmod.configs(profile, coverages)}

    def measure(session: RunSession) -> None:
        # in the plan's order (replicate-major: every configuration of one replicate, then the next), each variant
        # on its own fresh engine
        for vp in study.variants:
            if split_replicate(vp.variant)[0] == planmod.LVM_THIN:
                execute_variant(rig, dev, planmod.lvmthin_config(profile), profile.disk_size, vp.variant, vp.plan,
                                session)
            else:
                execute_per_config(rig, dev, configs, StudyPlan((vp,)), profile.disk_size, session)
    return Setup(planmod.parameters(profile, dev.name, used), (dev.name,), study.points(),
                 planmod.planned_seconds(profile, lvmthin=lvmthin, part=part), measure,
                 planmod.parts(profile, lvmthin=lvmthin) if part is not None else ())
