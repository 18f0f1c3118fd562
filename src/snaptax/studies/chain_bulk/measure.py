"""Measure the chain-bulk study on a rig (needs root: loop devices): one fresh qcow2 volume per configuration on
the rig's SSD-class device (or `device`), its plan inside one RunSession."""
from __future__ import annotations

from ...engines.qcow2 import execute_per_config
from ...host.rig import Rig
from ...profiles import Profile
from ...record import RunSession
from .. import seed001_standins
from ..contract import Setup
from . import plan as planmod


def setup(rig: Rig, profile: Profile, device: str | None = None, part: str | None = None) -> Setup:
    """Both configurations on `device` (default: the rig's first); `part`: only that configuration in that replicate
    (planmod.parts)."""
    dev = rig.device(device)
    study = planmod.build_plan(profile, part=part)
    # the stand-ins at the rig's inferred operating points (seed001_standins), recorded in the parameters
    coverages, used = seed001_standins.coverages(rig.name, profile.disk_size)
    configs = {c.name: c for c in planmod.configs(profile, coverages)}

    def measure(session: RunSession) -> None:
        execute_per_config(rig, dev, configs, study, profile.disk_size, session)
    return Setup(planmod.parameters(profile, dev.name, used), (dev.name,), study.points(),
                 planmod.planned_seconds(profile, part=part), measure,
                 planmod.parts(profile) if part is not None else ())
